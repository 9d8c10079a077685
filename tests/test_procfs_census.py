"""procfs mode counts every process that existed at once, and daemon chains' CPU, as cgroup
mode does: jobs that know their own truth (tests/census_workloads.py, true by
construction whatever the timing) under the real `jobmon run --cgroup=none`, at the
machine's load and with a CPU hog on every core (a busy machine must not hide a fault a
quiet one shows: there processes live shorter against the sampling interval)."""
import json
import os
import subprocess
import sys

import pytest

from helpers import IS_ROOT, PYTHON, cpu_tolerance, jobmon_run, load_json

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import census_workloads  # noqa: E402

WORKLOADS = {   # name: (arguments, sampling interval)
    # a sample saw all 20 zombies, though never two children ran at once
    "zombies": (["zombies", "20", "SAMPLES"], 0.2),
    # after the first sample, none till the end: three generations of setsid daemons, the
    # top going first; daemons that live a few ms, known from jobmon's reaping only
    "chain": (["chain", "3", "1", "SAMPLES"], 60),
    "orphans": (["orphans", "5", "1", "SAMPLES"], 60),
    "orphans without setsid": (["orphans", "5", "0", "SAMPLES"], 60),
}


@pytest.fixture(params=[False, True], ids=["load", "hog"])
def hog(request):
    """Nothing, or one busy process per core for the test's length."""
    hogs = [subprocess.Popen([PYTHON, "-c", "while True: pass"])
            for _ in range(os.cpu_count() if request.param else 0)]
    yield
    for h in hogs:
        h.kill()
        h.wait()


def run(tmp_path, workload, mode="none"):
    workload, interval = workload
    out = tmp_path / workload[0]
    out.mkdir()
    samples, summary = tmp_path / "samples.jsonl", tmp_path / "s.json"
    args = [str(out)] + [str(samples) if a == "SAMPLES" else a for a in workload]
    r = jobmon_run([f"--cgroup={mode}", f"--interval={interval}", f"--out={samples}",
                    f"--summary={summary}"],
                   [PYTHON, os.path.join(HERE, "census_workloads.py")] + args,
                   store="none", timeout=300)
    assert r.returncode == 0, r.stderr
    s = load_json(summary)
    with open(out / "truth.json") as f:
        truth = json.load(f)
    return s, truth["procs"], census_workloads.cpu_seconds(str(out))


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_every_process_counted(tmp_path, hog, name):
    s, procs, cpu = run(tmp_path, WORKLOADS[name])
    assert s["method"] == "procfs"
    assert s["procs_max"] == procs, s
    assert abs(s["cpu_user_seconds"] + s["cpu_system_seconds"] - cpu) <= cpu_tolerance(cpu), s


def test_chain_without_setsid_is_a_lower_bound(tmp_path):
    """Without setsid the daemons share the top's session: once the top is gone it may have
    been the last daemon's parent, for all jobmon can know. One less, never more."""
    s, procs, _ = run(tmp_path, (["chain", "3", "0", "SAMPLES"], 60))
    assert procs - 1 <= s["procs_max"] <= procs, s


@pytest.mark.skipif(not IS_ROOT, reason="cgroup mode needs root")
def test_daemon_chain_as_cgroup_mode_counts_it(tmp_path):
    got = {}
    for mode in ("none", "create"):
        (tmp_path / mode).mkdir()
        got[mode] = run(tmp_path / mode, WORKLOADS["chain"], mode=mode)
    (procfs, procs, _), (cgroup, _, _) = got["none"], got["create"]
    if cgroup["method"] == "procfs":
        pytest.skip("no cgroup to make here")
    assert procfs["procs_max"] == cgroup["procs_max"] == procs
    for s, _, truth in got.values():
        assert abs(s["cpu_user_seconds"] + s["cpu_system_seconds"] - truth) \
            <= cpu_tolerance(truth), s
