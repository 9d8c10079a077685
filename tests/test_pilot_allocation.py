"""A pilot and its payloads under `jobmon run`, tagged as the README tags jobs
(`--tag request_cpus=N --tag request_memory=SIZE`, the payloads `--tag pilot=ID`): `jobmon
pilot` reads what each held as `jobmon query` does (the payloads' cores are theirs, the
pilot is no 100 % overhead), `jobmon report` counts the pilot's time once, and a job that
held 2 cores and 4 GiB and used none of them left 2 whole canonical units idle."""
import json
import os

import pytest

from helpers import JOBMON, PYTHON, jobmon, jobmon_run

PILOT_ID = "pilot-lower-case"
# the pilot: two payloads one after the other, each burning 0.3 s of CPU in its 1-core slot
PILOT = r"""
import subprocess, sys
jobmon, store, python = sys.argv[1:4]
burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
for i in (1, 2):
    subprocess.run([jobmon, "run", f"--job-id=payload-{i}", f"--store={store}",
                    "--interval=0.1", "--tag=pilot=" + sys.argv[4], "--tag=request_cpus=1",
                    "--tag=request_memory=2GiB", "--", python, "-c", burn], check=True)
"""


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pilot")
    store = str(tmp / "store.db")
    r = jobmon_run([f"--job-id={PILOT_ID}", "--interval=0.1", "--tag=request_cpus=2",
                    "--tag=request_memory=4GiB"],
                   [PYTHON, "-c", PILOT, JOBMON, store, PYTHON, PILOT_ID], store=store,
                   timeout=120)
    assert r.returncode == 0, r.stderr
    (tmp / "none.toml").write_text("")
    env = dict(os.environ, JOBMON_CONFIG=str(tmp / "none.toml"))
    env.pop("JOBMON_STORE", None)
    return store, env


def test_payloads_tagged_request_cpus_hold_their_cores_in_the_pilot(pilot):
    store, env = pilot
    r = jobmon("pilot", PILOT_ID, "--json", f"--store={store}", env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["resources"]["cores"] == 2 and doc["resources"]["memory_bytes"] == 4 << 30
    assert [p["job"] for p in doc["payloads"]] == ["payload-1", "payload-2"]
    for p in doc["payloads"]:
        assert p["resources"]["cores"] == 1 and p["resources"]["memory_bytes"] == 2 << 30, p
        assert p["category"] == "goodput" and p["core_hours"] > 0, p
    cats = {k: v["core_hours"] for k, v in doc["categories"].items()}
    assert cats["goodput"] > 0 and cats["overhead"] < doc["provisioned"]["core_hours"], doc
    assert doc["balanced"], doc


def test_the_range_report_counts_the_pilots_time_once(pilot):
    store, env = pilot
    r = jobmon("report", "--since=1h", "--json", f"--store={store}", env=env)
    assert r.returncode == 0, r.stderr
    total = json.loads(r.stdout)["total"]
    assert total["jobs"] == 3, total                 # the pilot and its two payloads
    q = json.loads(jobmon("query", PILOT_ID, "--json", f"--store={store}", env=env).stdout)
    held = q["summary"]["provisioned_core_hours"]
    assert held == pytest.approx(2 * q["summary"]["wall_seconds"] / 3600, rel=1e-3, abs=1e-6)
    # the payloads' slots are inside the pilot's 2 cores: counted in its record alone
    assert total["provisioned_core_hours"] == pytest.approx(held, rel=1e-6), total
    assert total["idle_canonical_core_hours"] <= held, total


def test_a_job_that_used_none_of_its_two_units_left_two_idle(tmp_path):
    store = str(tmp_path / "store.db")
    r = jobmon_run(["--job-id=idle-2", "--interval=0.2", "--tag=request_cpus=2",
                    "--tag=request_memory=4GiB"], ["sleep", "1"], store=store)
    assert r.returncode == 0, r.stderr
    (tmp_path / "none.toml").write_text("")
    env = dict(os.environ, JOBMON_CONFIG=str(tmp_path / "none.toml"))
    env.pop("JOBMON_STORE", None)
    s = json.loads(jobmon("query", "idle-2", "--json", f"--store={store}", env=env).stdout)[
        "summary"]
    assert s["cores_allocated"] == 2 and s["cpu_efficiency_percent"] < 1, s
    assert s["idle_canonical_core_hours"] == pytest.approx(2 * s["wall_seconds"] / 3600,
                                                           abs=1e-6), s
