"""Arguments that name something no run can be are refused with one line and exit 2,
before anything runs or any store is asked: `run --interval inf`, `--job-id ''`, a
`--since` before 1970 (InfluxDB answered HTTP 400), a `rollup` ending before it starts.
And the job's own `--summary` says how many points the spool could not take."""
import json

import pytest

from helpers import jobmon, jobmon_run, load_json


@pytest.mark.parametrize("args", [["--interval=inf"], ["--interval=nan"], ["--interval=1e9"],
                                  ["--interval=-1"], ["--job-id="]])
def test_run_refuses_before_the_command_runs(tmp_path, args):
    marker = tmp_path / "ran"
    r = jobmon_run(args, ["touch", str(marker)], store="none")
    assert r.returncode == 2, r.stderr
    assert b"jobmon run: error:" in r.stderr and b"Traceback" not in r.stderr
    assert not marker.exists()


@pytest.mark.parametrize("args, option", [
    (["report", "--since=99999999d"], "--since"), (["report", "--since=0001-01-01"], "--since"),
    (["report", "--since=1d", "--until=9999-01-01"], "--until"),
    (["rollup", "--since=1d", "--until=3d"], "--until"),
    (["rollup", "--since=2d", "--until=2d"], "--until")])
def test_a_range_no_job_can_be_in_is_refused(tmp_path, args, option):
    store = tmp_path / "jobs.db"
    assert jobmon_run([], ["true"], store=str(store)).returncode == 0
    # (a --since 273,000 years back was read hour by hour: it never ended)
    r = jobmon(*args, f"--store={store}", timeout=20)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert f"Invalid value for {option}" in r.stderr and "Traceback" not in r.stderr


def test_the_jobs_own_summary_says_lost_points(tmp_path):
    r = jobmon_run([f"--summary={tmp_path / 's.json'}"], ["true"], store=str(tmp_path / "s.db"))
    assert r.returncode == 0, r.stderr
    assert load_json(tmp_path / "s.json")["lost_points"] == 0
