"""Runs the scheduler ends, under the HTCondor starter's contract with its hard kill: the
job ignores the soft kill, the starter SIGKILLs the wrapper's whole process group after the
vacate time, and the run has samples but no end-of-job record. Such a run keeps its figures
(folded from its samples, marked cut short with at most one interval missing) and is
classified as the scheduler recorded it (removed, held, evicted) -- in `jobmon query` (text,
JSON, CSV), the HTML report, `jobmon report`, `jobmon pilot`, in the embedded store and in
InfluxDB once `jobmon reconcile` has written the scheduler's end into the stored record."""
import csv
import io
import json
import os
import signal
import subprocess
import time

import pytest

from helpers import TEST_USER, fixture, jobmon, needs_test_user, root
from test_condor_wrapper import FAST, Starter, py

pytestmark = [root, needs_test_user]

# a job that ignores the soft kill and stays busy; it writes its own CPU time (the truth)
# every 20 ms, so what the hard kill took away is known to within that
BUSY_IGNORING_TERM = r"""
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
truth = sys.argv[1]
sys.stdout.write("ready\n"); sys.stdout.flush()
last = 0.0
while True:
    sum(range(20000))
    now = time.monotonic()
    if now - last >= 0.02:
        with open(truth + ".tmp", "w") as f:
            f.write(repr(time.process_time()))
        os.replace(truth + ".tmp", truth)
        last = now
"""
INTERVAL = 0.2


def hard_killed_run(st, busy=1.5, **attrs):
    """One run of the job: busy `busy` s, then the soft kill it ignores, then the hard kill
    after a vacate time of 0.5 s. Returns the job's own CPU seconds at its last report."""
    st.prepare(**attrs)
    truth = os.path.join(st.scratch, "cpu.truth")
    p = st.popen_prepared(py(BUSY_IGNORING_TERM, truth), stdin=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        assert p.stdout.readline() == b"ready\n"
        time.sleep(busy)
        assert st.hard_kill(p, vacate=0.5) == -signal.SIGKILL
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    with open(truth) as f:
        return float(f.read())


def starter(tmp_site="", **attrs):
    return Starter(site=FAST + tmp_site, **attrs)


def query(st, *args, check=True):
    env = dict(os.environ, JOBMON_CONFIG=st.config)
    env.pop("JOBMON_STORE", None)
    r = jobmon("query", *args, f"--store={st.store}", env=env)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def named(rows):
    return {r["name"]: r["value"] for r in rows}


def check_folded(summary, samples, truth):
    """A cut-short run's figures: its samples' fold, at most one interval short of the
    truth at the kill."""
    assert summary["cut_short"] == 1 and summary["missing_seconds_max"] == INTERVAL
    assert summary["samples"] == len(samples) >= 5
    cpu = summary["cpu_user_seconds"] + summary["cpu_system_seconds"]
    assert cpu == pytest.approx(samples[-1]["cpu_user_seconds"] + samples[-1]["cpu_system_seconds"])
    # one busy core: what the last interval held, plus the job's own 20 ms report lag
    assert truth - (INTERVAL + 0.02 + 0.05) <= cpu <= truth + 0.05, (cpu, truth)
    assert summary["wall_seconds"] == pytest.approx(samples[-1]["elapsed_seconds"])
    assert summary["wall_seconds"] >= 1.5 and summary["rss_peak_bytes"] > 1 << 20
    assert (summary["exit_code"], summary["signal"]) == (None, None)


def test_removed_run_killed_after_the_vacate_time_keeps_its_figures():
    """condor_rm of a job that ignores SIGTERM: query (text, JSON, CSV) and the HTML report
    show the run's figures up to its last sample, cut short, removed by its user."""
    st = starter(f'history = "{fixture("htcondor", "history")}"\n',
                 ClusterId="4711", ProcId="1")
    truth = hard_killed_run(st)
    rep = json.loads(query(st, "4711.1", "--json").stdout)
    check_folded(rep["summary"], rep["samples"], truth)
    removed = "removed (condor_rm or a removal policy): via condor_rm (by user alice)"
    assert rep["job"]["status"] == f"{removed} (no exit status); cut short: figures up to " \
                                   "its last sample, at most 0.2 s missing"
    assert named(rep["efficiency"])["outcome"] == f"badput: {removed}"
    assert (rep["summary"]["scheduler_state"], rep["summary"]["outcome_cause"],
            rep["summary"]["scheduler_user"]) == ("removed", "user", "alice")
    cpu = named(rep["totals"])
    assert cpu["CPU user"] + cpu["CPU system"] >= truth - 0.3
    [run] = rep["runs"]
    assert run["wall_seconds"] >= 1.5 and run["cpu_seconds"] >= truth - 0.3
    rows = {(r["section"], r["name"]): r["value"] for r in
            csv.DictReader(io.StringIO(query(st, "4711.1", "--csv").stdout))}
    assert rows[("job", "status")] == rep["job"]["status"]
    assert float(rows[("totals", "end not in the figures (cut short), at most")]) == INTERVAL
    assert float(rows[("totals", "CPU user")]) == cpu["CPU user"]
    text = query(st, "4711.1").stdout
    assert "cut short" in text and "removed" in text
    html = os.path.join(st.base, "r.html")
    env = dict(os.environ, JOBMON_CONFIG=st.config)
    r = jobmon("report", "4711.1", "--html", html, f"--store={st.store}", env=env)
    assert r.returncode == 0, r.stderr
    page = open(html, encoding="utf-8").read()
    assert "cut short: figures up to its last sample" in page and "removed" in page


def test_held_and_released_the_first_run_keeps_its_figures():
    """condor_hold after the vacate time, then a release and a second run that completes:
    the list of runs shows the first run's CPU and wall time (not 0 and none) and its
    hold; each run's report has its own figures."""
    st = starter(f'history = "{fixture("htcondor", "epoch-history")}"\n',
                 ClusterId="4711", ProcId="2")
    truth = hard_killed_run(st, NumJobStarts="0")
    st.prepare(NumJobStarts="1")
    rc, _out, err = _run_prepared(st, py("import time\nwhile time.process_time() < 0.3: pass"))
    assert rc == 0, err
    rep = json.loads(query(st, "4711.2", "--json").stdout)
    assert rep["job"]["run"] == "2" and rep["summary"]["exit_code"] == 0
    first, second = rep["runs"]
    assert first["cpu_seconds"] >= truth - 0.3 and first["wall_seconds"] >= 1.5
    assert first["status"].startswith("held (code 34.102)") and "cut short" in first["status"]
    assert second["status"] == "exit code 0"
    one = json.loads(query(st, "4711.2", "--run", "1", "--json").stdout)
    check_folded(one["summary"], one["samples"], truth)
    assert named(one["efficiency"])["outcome"].startswith("badput: held (code 34.102)")


def _run_prepared(st, argv):
    p = st.popen_prepared(argv, stdin=subprocess.DEVNULL)
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err


def test_evicted_run_is_classified_with_its_vacate_code():
    """A vacate (here the real pool's code 1007 eviction, from its job event log)."""
    st = starter(f'event_log = "{fixture("htcondor", "real-pool-25.14", "events.log")}"\n',
                 ClusterId="4", ProcId="0")
    truth = hard_killed_run(st, NumJobStarts="0")
    rep = json.loads(query(st, "4.0", "--json").stdout)
    check_folded(rep["summary"], rep["samples"], truth)
    assert named(rep["efficiency"])["outcome"].startswith(
        "badput: evicted (code 1007): Error from slot1_2@vm: The job wrapper failed")
