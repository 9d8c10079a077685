"""Site config: clear errors naming key and line; secrets only from private files."""
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobmon import config


def write(tmp_path, text, name="jobmon.toml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_defaults_when_no_file_at_the_default_path(monkeypatch):
    # load() reads the default path where it is defined (config/loading.py)
    monkeypatch.setattr(config.loading, "DEFAULT_PATH", "/nonexistent/jobmon.toml")
    cfg = config.load(env={})
    assert cfg.path is None and not cfg.uses_influxdb


def test_syntax_error_names_the_line(tmp_path):
    p = write(tmp_path, '[store]\nkind = "influxdb"\n[influxdb]\nurl = http://x\n')
    with pytest.raises(config.ConfigError, match=r"line 4"):
        config.load(p, env={})


def test_unknown_key_names_key_and_line(tmp_path):
    p = write(tmp_path, '[store]\nkind = "influxdb"\n\n[influxdb]\nulr = "http://x"\n')
    with pytest.raises(config.ConfigError, match=r"jobmon.toml:5: unknown key influxdb.ulr"):
        config.load(p, env={})


def test_wrong_type_and_bad_choice_name_the_key(tmp_path):
    p = write(tmp_path, '[spool]\nmax_bytes = "big"\n')
    with pytest.raises(config.ConfigError, match=r":2: spool.max_bytes must be int"):
        config.load(p, env={})
    p = write(tmp_path, '[store]\nkind = "mysql"\n')
    with pytest.raises(config.ConfigError, match=r":2: store.kind must be one of local, influxdb"):
        config.load(p, env={})
    p = write(tmp_path, '[shipper]\nsenders = 0\n')
    with pytest.raises(config.ConfigError, match=r":2: shipper.senders must be greater than 0"):
        config.load(p, env={})


def test_a_secret_in_the_file_is_refused_with_a_hint(tmp_path):
    p = write(tmp_path, '[influxdb]\ntoken = "s3cret"\n')
    with pytest.raises(config.ConfigError, match=r":2: unknown key influxdb.token; secrets never "
                       r"go in the config file.*token_file"):
        config.load(p, env={})


def test_environment_overrides_the_file(tmp_path):
    p = write(tmp_path, '[influxdb]\nurl = "http://a:1"\n[shipper]\ngzip = true\n')
    cfg = config.load(env={"JOBMON_CONFIG": p, "JOBMON_INFLUXDB_URL": "http://b:2",
                           "JOBMON_SHIPPER_GZIP": "false", "JOBMON_SPOOL_MAX_BYTES": "500000"})
    assert cfg["influxdb"]["url"] == "http://b:2"
    assert cfg["shipper"]["gzip"] is False and cfg["spool"]["max_bytes"] == 500000
    with pytest.raises(config.ConfigError, match="JOBMON_SPOOL_MAX_BYTES: expected int"):
        config.load(p, env={"JOBMON_SPOOL_MAX_BYTES": "lots"})


def test_secret_file_must_be_private(tmp_path):
    secret = tmp_path / "token"
    secret.write_text("tok\n")
    p = write(tmp_path, f'[influxdb]\napi = "v2"\ntoken_file = "{secret}"\n')
    os.chmod(secret, 0o600)
    assert config.load(p, env={}).secret("token_file") == "tok"
    for mode in (0o640, 0o604, 0o644):
        os.chmod(secret, mode)
        with pytest.raises(config.ConfigError, match=r"group/world-accessible .*chmod 600"):
            config.load(p, env={}).secret("token_file")


def test_config_check_command_reports_a_bad_file(tmp_path):
    import subprocess
    from helpers import JOBMON
    p = write(tmp_path, '[shipper]\nbatch_points = 1.5\n')
    r = subprocess.run([JOBMON, "config", "check", "--config", p], capture_output=True, text=True)
    assert r.returncode == 2 and "jobmon.toml:2: shipper.batch_points must be int" in r.stderr


@pytest.mark.parametrize("text, error", [
    ('[shipper]\nretry_max_seconds = 0\n', r":2: shipper.retry_max_seconds must be greater than 0"),
    ('[shipper]\nretry_initial_seconds = 5.0\nretry_max_seconds = 1.0\n',
     r":3: shipper.retry_max_seconds \(1.0\) must not be less than shipper.retry_initial"),
    ('[shipper]\nretry_initial_seconds = nan\n', r"retry_initial_seconds must be greater than 0"),
    ('[shipper]\nflush_seconds = -1.0\n', r"flush_seconds must not be negative"),
    ('[shipper]\npoll_seconds = inf\n', r"poll_seconds must be a finite number"),
    ('[spool]\nmax_bytes = 0\n', r":2: spool.max_bytes must be greater than 0"),
    ('[spool]\nmax_bytes = -5\n', r"spool.max_bytes must be greater than 0"),
    ('[spool]\nmax_bytes = 100000\nmax_bytes_per_user = 200000\n',
     r":3: spool.max_bytes_per_user \(200000\) must not be more than spool.max_bytes"),
    ('[shipper]\nbatch_bytes = 100\n', r":2: shipper.batch_bytes must be at least 65536"),
    ('[influxdb]\nurl = "db.example.org:8086"\n', r":2: influxdb.url must be http://HOST"),
    ('[influxdb]\nurl = "ftp://db"\n', r"influxdb.url must be http://HOST"),
    ('[influxdb]\nurl = "http://db:80x"\n', r"influxdb.url has a bad port"),
    ('[influxdb]\nurl = "http://[::1"\n', r":2: influxdb.url has a bad IPv6 address"),
    ('[influxdb]\nurl = "http://[::1]x"\n', r"influxdb.url has a bad IPv6 address"),
    ('[influxdb]\nurl = "http://db]:8086"\n', r"influxdb.url has a bad IPv6 address"),
    ('[influxdb]\nurl = "http://a b"\n', r"influxdb.url must be ASCII without spaces"),
    ('[influxdb]\nurl = "http://db/x?y"\n', r"influxdb.url must not have a \?query"),
    ('[influxdb]\nurl = "http://me:secret@db"\n', r"influxdb.url must not hold credentials"),
])
def test_values_that_cannot_work_are_refused_with_the_key(tmp_path, text, error):
    """A hot retry loop, a spool limit of nothing, batches too small for one line, a URL
    the shipper cannot reach: refused when the config is loaded, naming key and line."""
    with pytest.raises(config.ConfigError, match=error):
        config.load(write(tmp_path, text), env={})


def test_each_user_has_a_quarter_of_the_spool_unless_told():
    cfg = config.load(env={"JOBMON_CONFIG": "/dev/null", "JOBMON_SPOOL_MAX_BYTES": "4000000"})
    assert cfg["spool"]["max_bytes_per_user"] == 1000000
    cfg = config.load(env={"JOBMON_CONFIG": "/dev/null", "JOBMON_SPOOL_MAX_BYTES_PER_USER": "50000"})
    assert cfg["spool"]["max_bytes_per_user"] == 50000
    # never less than one job's file and its end-of-job reserve
    from jobmon.influx.schema import MAX_LINE_BYTES
    from jobmon.ship.entries import ENTRY_BYTES
    assert config.MIN_SHARE_BYTES == MAX_LINE_BYTES + ENTRY_BYTES
    cfg = config.load(env={"JOBMON_CONFIG": "/dev/null", "JOBMON_SPOOL_MAX_BYTES": "40000"})
    assert cfg["spool"]["max_bytes_per_user"] == config.MIN_SHARE_BYTES


@pytest.mark.parametrize("kind", ["directory", "fifo", "not utf-8"])
def test_a_secret_that_is_not_a_text_file_is_an_error_not_a_traceback(tmp_path, kind):
    import subprocess
    from helpers import JOBMON
    secret = tmp_path / "secret"
    if kind == "directory":
        secret.mkdir()
    elif kind == "fifo":
        os.mkfifo(secret)
    else:
        secret.write_bytes(b"\xff\xfe")
    os.chmod(secret, 0o600 if kind != "directory" else 0o700)
    for key, api in (("password_file", "v1"), ("token_file", "v2")):
        p = write(tmp_path, f'[store]\nkind = "influxdb"\n[influxdb]\napi = "{api}"\n'
                            f'{key} = "{secret}"\n')
        r = subprocess.run([JOBMON, "config", "check", "--config", p], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert f"influxdb.{key}: " in r.stderr
        r = subprocess.run([JOBMON, "ship", "--config", p, "--timeout=1"], capture_output=True,
                           text=True, timeout=30, env=dict(os.environ, JOBMON_SHIPPER_STATE_DIR=str(
                               tmp_path / "state"), JOBMON_SPOOL_DIR=str(tmp_path / "spool")))
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("command", [["config", "check"], ["ship"], ["query", "4711.0"],
                                     ["list"], ["report"]])
def test_a_url_that_urllib_refuses_is_one_line_and_exit_2(tmp_path, command):
    """`url = "http://[::1"` (no closing bracket): every command that reads the config
    says so in one line, naming the key, and exits 2 -- none gets as far as a traceback."""
    import subprocess
    from helpers import JOBMON
    p = write(tmp_path, '[store]\nkind = "influxdb"\n[influxdb]\nurl = "http://[::1"\n')
    r = subprocess.run([JOBMON, *command], env=dict(os.environ, JOBMON_CONFIG=p),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "influxdb.url has a bad IPv6 address" in r.stderr


@given(st.text(alphabet="[]:/@?#%ab1.ef v", max_size=24))
@settings(max_examples=2000, deadline=None)
def test_a_url_the_config_takes_is_one_urllib_and_http_client_take(tail):
    """Whatever URL passes the config's check, the readers (urllib) and the shipper
    (http.client) can use: no ValueError is left for them to raise."""
    import http.client
    import urllib.parse
    import urllib.request
    url = "http://" + tail
    if config.url_problem(url) is not None:
        return
    u = urllib.parse.urlsplit(url)
    assert u.hostname and (u.port is None or 0 < u.port < 65536)
    http.client.HTTPConnection(u.netloc)
    urllib.request.Request(url.rstrip("/") + "/query")
