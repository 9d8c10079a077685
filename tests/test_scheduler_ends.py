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
import shutil
import signal
import subprocess
import time

import pytest

from helpers import (JOBMON, TEST_USER, as_user, fixture, jobmon, needs_test_user, owned_by,
                     root, shared_tmpdir)
from test_condor_wrapper import FAST, Starter, py

pytestmark = [root, needs_test_user]

# the write and read path also as configured for InfluxDB 3 (conftest: site_flavour)
SITE_FLAVOURS = ("1.x", "3.x")

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
    st = starter(f'history = "{owned_by(TEST_USER, "htcondor", "history")}"\n',
                 ClusterId="4711", ProcId="1")
    truth = hard_killed_run(st)
    rep = json.loads(query(st, "4711.1", "--json").stdout)
    check_folded(rep["summary"], rep["samples"], truth)
    removed = "removed (condor_rm or a removal policy): via condor_rm (by user alice)"
    assert rep["job"]["status"] == f"{removed} (no exit status); cut short: figures up to " \
                                   "its last sample, at most 0.2 s missing"
    assert named(rep["efficiency"])["outcome"] == f"badput: {removed}"
    # its data: all of the run but the interval after its last sample
    assert rep["verdict"]["data"]["reasons"][0] == \
        f"cut short: up to {INTERVAL:g} s of its end missing, and its exit status"
    wall = rep["summary"]["wall_seconds"]
    assert rep["verdict"]["data"]["percent"] == round(100 * (wall - INTERVAL) / wall, 1)
    assert (rep["summary"]["scheduler_state"], rep["summary"]["outcome_cause"],
            rep["summary"]["scheduler_user"]) == ("removed", "user", TEST_USER)
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
    st = starter(f'history = "{owned_by(TEST_USER, "htcondor", "epoch-history")}"\n',
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


# --- stored: `jobmon reconcile`, and the readers of many runs ----------------------------

def stored(st, job):
    """The stored summary of each run of `job`, oldest first (the embedded store)."""
    from test_condor_wrapper import records
    return [s for _info, s, _samples in records(st.store, job)]


def reconcile(st, *args, rc=0, env=None):
    env = env or dict(os.environ, JOBMON_CONFIG=st.config)
    env.pop("JOBMON_STORE", None)
    r = jobmon("reconcile", "--json", *args, env=env, timeout=120)
    assert r.returncode == rc, (r.returncode, r.stdout, r.stderr)
    return json.loads(r.stdout)


def report_json(env, *args):
    r = jobmon("report", "--json", "--since=1h", *args, env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def completed_run(st, **attrs):
    st.prepare(**attrs)
    rc, _out, err = _run_prepared(st, py("import time\nwhile time.process_time() < 0.2: pass"))
    assert rc == 0, err


def test_reconcile_stores_the_schedulers_end_in_the_embedded_store():
    """`jobmon reconcile` writes the scheduler's end into each stored record (the removed
    run with its folded figures, the completed one as it was) once; then `jobmon report`
    counts them right."""
    st = starter(f'history = "{owned_by(TEST_USER, "htcondor", "history")}"\n', ClusterId="4711")
    truth = hard_killed_run(st, ProcId="1")
    completed_run(st, ProcId="0")
    [before] = stored(st, "4711.1")
    assert before is None                          # the hard kill left no end record
    got = reconcile(st, f"--store={st.store}")
    assert (got["records"], got["settled"], got["folded"], got["written"]) == (2, 2, 1, 2)
    [removed] = stored(st, "4711.1")
    assert (removed["reconciled"], removed["scheduler_state"], removed["outcome"],
            removed["outcome_cause"], removed["scheduler_user"], removed["ownership"]) == \
        (1, "removed", "badput", "user", TEST_USER, "own")
    assert removed["outcome_reason"] == "removed (condor_rm or a removal policy): via " \
                                        "condor_rm (by user alice)"
    assert removed["cut_short"] == 1 and removed["end_time"] > removed["start_time"]
    assert truth - 0.3 <= removed["cpu_user_seconds"] + removed["cpu_system_seconds"] <= truth
    [done] = stored(st, "4711.0")
    assert (done["reconciled"], done["scheduler_state"], done["outcome"], done["cut_short"]) \
        == (1, "completed", "goodput", 0)
    again = reconcile(st, f"--store={st.store}")     # idempotent: nothing left to do
    assert (again["records"], again["written"]) == (0, 0)
    assert stored(st, "4711.1") == [removed]
    env = dict(os.environ, JOBMON_CONFIG=st.config, JOBMON_STORE=st.store)
    m = report_json(env)
    t = m["total"]
    assert (m["jobs"], m["running"], t["goodput"], t["badput"]) == (2, 0, 1, 1)
    assert t["wall_hours"] * 3600 >= removed["wall_seconds"]


def test_late_or_unreachable_accounting_is_retried():
    """condor_rm of a job that ends on the soft kill: the scheduler's record is not there
    (history unreadable: exit 75, a later pass retries), then not yet (the job is not in
    it: waiting); once it is there the next pass settles the run, and the one after has
    nothing to do."""
    where = shared_tmpdir("jobmon-history-")
    history = os.path.join(where, "history")
    st = starter(f'history = "{history}"\n', ClusterId="4711", ProcId="1")
    try:
        p = st.popen(py("import os, signal, sys, time\nsys.stdout.write('ready\\n')\n"
                        "sys.stdout.flush()\ntime.sleep(60)"), stdin=subprocess.DEVNULL)
        assert p.stdout.readline() == b"ready\n"
        assert st.hard_kill(p) == -signal.SIGTERM     # it ended within the vacate time
        down = reconcile(st, f"--store={st.store}", rc=75)
        assert (down["unavailable"], down["written"]) == (1, 0)
        assert history in down["errors"][0]
        open(history, "w").close()                  # there, but without the job yet
        late = reconcile(st, f"--store={st.store}")
        assert (late["records"], late["waiting"], late["written"]) == (1, 1, 0)
        [mine] = stored(st, "4711.1")
        assert mine["signal"] == signal.SIGTERM and mine["reconciled"] == 0
        assert mine["outcome_reason"].startswith("killed by SIGTERM")
        shutil.copy(owned_by(TEST_USER, "htcondor", "history"), history)
        done = reconcile(st, f"--store={st.store}")
        assert (done["settled"], done["written"]) == (1, 1)
        [removed] = stored(st, "4711.1")
        assert (removed["scheduler_state"], removed["outcome"], removed["signal"]) == \
            ("removed", "badput", signal.SIGTERM)
        assert removed["outcome_reason"].startswith("removed (condor_rm")
        assert reconcile(st, f"--store={st.store}")["records"] == 0
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_a_reader_settles_what_was_not_reconciled_yet():
    """`jobmon report` and `jobmon pilot` on an embedded store nobody reconciled: they
    settle the runs themselves (and store it). The payload evicted by its pilot's startd
    (the real pool's code 1007: the site's) is the pilot's misconfiguration, with its
    figures from its samples."""
    log = fixture("htcondor", "real-pool-25.14", "events.log")
    st = starter(f'event_log = "{log}"\n', ClusterId="4", ProcId="0", RequestCpus="1",
                 CpusProvisioned="1", RequestMemory="2048", MemoryProvisioned="2048",
                 machine_attrs={"GLIDEIN_Name": '"pilot-9"'})
    pilot = subprocess.Popen(as_user(
        [JOBMON, "run", "--job-id=pilot-9", "--interval=0.5", "--tag=CpusProvisioned=2",
         "--tag=MemoryProvisioned=4096", f"--store={st.store}", "--", "sleep", "4"]),
        env=dict(os.environ, JOBMON_CONFIG=st.config))
    time.sleep(0.5)
    hard_killed_run(st, busy=1.0, NumJobStarts="0")
    assert pilot.wait(timeout=60) == 0
    env = dict(os.environ, JOBMON_CONFIG=st.config, JOBMON_STORE=st.store)
    r = jobmon("pilot", "pilot-9", "--json", env=env)
    assert r.returncode == 0, r.stderr
    [payload] = json.loads(r.stdout)["payloads"]
    assert (payload["category"], payload["cause"]) == ("misconfiguration", "site")
    assert payload["reason"].startswith("evicted (code 1007)")
    assert payload["core_hours"] > 0
    [evicted] = stored(st, "4.0")
    assert (evicted["scheduler_state"], evicted["scheduler_code"], evicted["cut_short"]) == \
        ("evicted", 1007, 1)
    m = report_json(env)
    assert (m["jobs"], m["total"]["badput"], m["total"]["goodput"]) == (2, 1, 1)


def panel_counts(site, title="Goodput / badput (jobs)", since=None):
    """What the cluster dashboard's panel shows from `since` (default: an hour ago) to
    now, every variable All."""
    import grafana_model as gm
    dash = gm.load_dashboards()["jobmon-cluster.json"]
    variables = dash["templating"]["list"]
    [panel] = [p for p in gm.panels(dash) if p["title"] == title]
    now_ms = int(time.time() * 1000)
    out = {}
    for t in panel["targets"]:
        q = gm.substitute(t["query"], variables, dict.fromkeys(
            ("cluster", "account", "group", "user"), gm.ALL), {},
            int(since * 1000) if since else now_ms - 3600_000, now_ms + 60_000)
        [res] = site.influx.query(q, site.db)["results"]
        for s in res.get("series", []):
            out[s["columns"][1]] = s["values"][0][1]
    return out


class SpoolingStarter(Starter):
    """The starter on a node whose site config sends samples to InfluxDB (no embedded
    store)."""

    def prepare(self, **attrs):
        super().prepare(**attrs)
        self.env.pop("JOBMON_STORE")
        return self


def test_reconcile_corrects_the_influxdb_point(site):
    """InfluxDB: the shipper marks the hard-killed run ended; `jobmon reconcile` (history
    down at first) writes its folded figures, then the scheduler's end, into that same
    point -- one point per run, as the dashboards and `jobmon report` read it."""
    where = shared_tmpdir("jobmon-history-")
    history = os.path.join(where, "history")
    with open(site.config) as f:
        st = SpoolingStarter(site=f.read() + FAST + f'history = "{history}"\n',
                             ClusterId="4711")
    env = dict(site.env, JOBMON_CONFIG=st.config)
    job = "SELECT * FROM jobmon_job WHERE \"job\" = '4711.1'"
    try:
        site.prepare()
        truth = hard_killed_run(st, ProcId="1")
        completed_run(st, ProcId="0")
        site.ship()
        down = reconcile(st, rc=75, env=env)           # folded now, settled later
        assert (down["folded"], down["written"], down["unavailable"]) == (1, 1, 2)
        [point] = site.rows(job)
        assert point["cut_short"] == 1 and point["reconciled"] == 0
        shutil.copy(owned_by(TEST_USER, "htcondor", "history"), history)
        done = reconcile(st, env=env)
        assert (done["settled"], done["written"]) == (2, 2)
        [point] = site.rows(job)
        assert (point["reconciled"], point["scheduler_state"], point["outcome"],
                point["outcome_cause"], point["scheduler_user"], point["cut_short"],
                point["ownership"]) == (1, "removed", "badput", "user", TEST_USER, 1, "own")
        assert truth - 0.3 <= point["cpu_user_seconds"] + point["cpu_system_seconds"] <= truth
        assert point["missing_seconds_max"] == INTERVAL and point["end_time"] > 0
        assert reconcile(st, env=env)["records"] == 0
        m = report_json(env)
        assert (m["jobs"], m["running"], m["total"]["goodput"], m["total"]["badput"]) == \
            (2, 0, 1, 1)
        assert panel_counts(site) == {"goodput": 1, "badput": 1}
        rep = json.loads(jobmon("query", "4711.1", "--json", "--no-scheduler",
                                env=env).stdout)
        assert rep["job"]["status"].startswith("removed (condor_rm")
        assert rep["summary"]["cut_short"] == 1
    finally:
        shutil.rmtree(where, ignore_errors=True)
