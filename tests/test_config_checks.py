"""Settings checked before they are used: the read service's address forms, a FIFO where
the site file should be, paths that name nothing, a node reader's relative directory.
Each through the real `jobmon` command, as a user would meet it: one line, no traceback,
never a command that waits for ever."""
import os
import subprocess

import pytest

from helpers import JOBMON, needs_root

BAD_ADDRESSES = ["nohostport", "host:notaport", "relative/sock", "h:99999", "[::1:80",
                 "host name:80"]


def jobmon(config, *args, timeout=60, cwd=None):
    env = dict(os.environ, JOBMON_CONFIG=str(config))
    env.pop("JOBMON_STORE", None)
    return subprocess.run([JOBMON, *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def one_line(r):
    lines = r.stderr.strip().splitlines()
    assert "Traceback" not in r.stderr and len(lines) == 1, r.stderr
    return lines[0]


@pytest.mark.parametrize("address", BAD_ADDRESSES)
def test_a_bad_service_address_is_one_line_for_every_reader(tmp_path, address):
    config = tmp_path / "jobmon.toml"
    config.write_text(f'[service]\naddress = "{address}"\n')
    r = jobmon(config, "config", "check")
    assert r.returncode == 2 and "service.address" in one_line(r)
    for args in (["query", "4711.0"], ["list"], ["report"], ["pilot", "p-1"]):
        r = jobmon(config, *args)
        assert r.returncode == 2, (args, r.stderr)
        line = one_line(r)
        assert f"{config}:2: service.address " in line and repr(address) in line


@pytest.mark.parametrize("key, value", [("listen", "nohostport"), ("listen", "h:0"),
                                        ("munge_socket", "munge.sock")])
def test_the_services_own_addresses_are_checked(tmp_path, key, value):
    config = tmp_path / "jobmon.toml"
    config.write_text(f'[service]\n{key} = "{value}"\n')
    r = jobmon(config, "config", "check")
    assert r.returncode == 2 and f"service.{key}" in one_line(r)
    r = jobmon(config, "serve")
    assert r.returncode == 2 and f"service.{key}" in one_line(r)


@pytest.mark.parametrize("key, value", [("read_log", '"reads.db"'), ("read_log_days", "0"),
                                        ("read_log_days", "-1.0"), ("read_log_days", "nan"),
                                        ("read_log_days", "inf"),
                                        ("read_log_max_bytes", "1000")])
def test_the_read_logs_settings_are_checked(tmp_path, key, value):
    config = tmp_path / "jobmon.toml"
    config.write_text(f'[service]\n{key} = {value}\n')
    for args in (["config", "check"], ["serve"]):
        r = jobmon(config, *args)
        assert r.returncode == 2 and f"{config}:2: service.{key} " in one_line(r), r.stderr


def test_good_addresses_pass(tmp_path):
    for address in ("/run/jobmon/read.sock", "reader.example.org:8650", "[::1]:8650",
                    "10.0.0.1:1"):
        config = tmp_path / "jobmon.toml"
        config.write_text(f'[service]\naddress = "{address}"\nlisten = ":8650"\n')
        r = jobmon(config, "config", "check")
        assert r.returncode == 0, r.stderr


def test_a_fifo_as_the_site_file_never_holds_a_command(tmp_path):
    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)
    r = jobmon(fifo, "run", "--store=none", "--", "sh", "-c", "exit 3", timeout=30)
    assert r.returncode == 3, "the job's exact status, its end not held"
    assert "not a regular file (a FIFO)" in r.stderr and "Traceback" not in r.stderr
    for args in (["config", "check"], ["list"], ["ship"]):
        r = jobmon(fifo, *args, timeout=30)
        assert r.returncode == 2 and "not a regular file (a FIFO)" in one_line(r), args
    r = jobmon(tmp_path, "config", "check", timeout=30)     # a directory
    assert r.returncode == 2 and "not a regular file (a directory)" in one_line(r)


def test_config_check_looks_at_what_paths_name(tmp_path):
    config = tmp_path / "jobmon.toml"
    missing = tmp_path / "no-such-dir"
    config.write_text(f'[report]\ncard = "file"\ncard_dir = "{missing}"\n')
    r = jobmon(config, "config", "check")
    assert r.returncode == 2
    assert one_line(r) == f"jobmon: report.card_dir: {missing} does not exist"
    config.write_text(f'[report]\ncard = "off"\ncard_dir = "{missing}"\n')
    r = jobmon(config, "config", "check")
    assert r.returncode == 0 and "(not in use now)" in one_line(r)
    fifo = tmp_path / "coordinators"
    os.mkfifo(fifo)
    config.write_text(f'[service]\ncoordinators_file = "{fifo}"\n')
    r = jobmon(config, "config", "check", timeout=30)
    assert r.returncode == 2 and "is a FIFO, not a file" in one_line(r)
    r = jobmon(config, "serve", "--socket", str(tmp_path / "s.sock"), timeout=30)
    assert r.returncode == 2 and "not a regular file (a FIFO)" in one_line(r)


@needs_root
def test_a_node_reader_refuses_a_relative_directory(tmp_path):
    config = tmp_path / "jobmon.toml"
    config.write_text("")
    r = jobmon(config, "node-reader", "--dir", "relative/dir", "--once", "--no-gpus",
               "--no-network", cwd=tmp_path)
    assert r.returncode == 2 and "must be an absolute path" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "relative").exists()
