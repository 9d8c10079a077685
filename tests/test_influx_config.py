"""Site config: clear errors naming key and line; secrets only from private files."""
import os

import pytest

from jobmon import config


def write(tmp_path, text, name="jobmon.toml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_defaults_when_no_file_at_the_default_path(monkeypatch):
    monkeypatch.setattr(config, "DEFAULT_PATH", "/nonexistent/jobmon.toml")
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
                           "JOBMON_SHIPPER_GZIP": "false", "JOBMON_SPOOL_MAX_BYTES": "5"})
    assert cfg["influxdb"]["url"] == "http://b:2"
    assert cfg["shipper"]["gzip"] is False and cfg["spool"]["max_bytes"] == 5
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
