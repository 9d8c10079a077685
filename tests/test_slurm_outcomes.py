"""Slurm's end of each run, stored: real jobs through jobmon's Prolog and Epilog -- a job
cancelled with scancel, one past its --time, one over its --mem (killed by the OOM killer),
one requeued and run again, one whose node went down under it, an array of 6 tasks and a
job of two steps -- shipped to a real InfluxDB, then `jobmon reconcile` against sacct.
Each stored record then carries Slurm's outcome (cancelled by whom, time limit, out of
memory, requeued, node failure), `jobmon report` and the dashboards count job runs (not
step records), and the requeued job's first run says it was requeued."""
import datetime
import json
import subprocess
import time

import pytest

from helpers import JOBMON
from slurm.common import SBIN_PATH, ClusterError

pytestmark = [pytest.mark.root, pytest.mark.slow]

BUSY = ("/usr/bin/python3 -c 'import time\nwhile time.process_time() < 0.2: pass'\n"
        "sleep 0.5\n")
# 400 MiB touched page by page in a job given 100M: the OOM killer ends it
HOG = ("/usr/bin/python3 -c 'x = bytearray(400 << 20)\n"
       "for i in range(0, len(x), 4096): x[i] = 1'\n")
STEPS = "srun /bin/sleep 0.5\nsrun /usr/bin/python3 -c 'sum(range(10**6))'\n"


def requeue_once(c, jid):
    """`scontrol requeue` while the job runs, then let its second run start at once."""
    c.wait_running(jid)
    time.sleep(1.5)
    c.scontrol("requeue", str(jid))
    deadline = time.monotonic() + 120
    while True:
        [job] = c.ctld_jobs(jid) or [{}]
        if job.get("JobState") == "PENDING":   # Slurm holds a requeued job back ~2 min
            try:
                c.scontrol("update", f"JobId={jid}", "StartTime=now")
            except ClusterError as e:   # it left PENDING since it was listed: looked at again
                assert "no longer pending" in str(e), e
        if job.get("Restarts") == "1" and job.get("JobState") in ("RUNNING", "COMPLETED"):
            return
        assert time.monotonic() < deadline, job
        time.sleep(0.5)


@pytest.fixture(scope="module")
def reconciled(jobmon_slurm_cluster):
    site = jobmon_slurm_cluster
    c = site.cluster
    # the session's database holds the other modules' jobs too: this module counts from here
    started = time.time()
    # past its time limit: SIGTERM ignored (no stray signal ends it early), Slurm's SIGKILL
    # after KillWait ends it
    ids = {"timeout": c.submit("trap '' TERM\nsleep 300\n", time="1"),
           "cancelled": c.submit("sleep 300\n"),
           "oom": c.submit(HOG, mem="100M"),
           "requeued": c.submit("sleep 3\n", requeue=True),
           "steps": c.submit(STEPS),
           "array": c.submit(BUSY, array="0-5")}
    c.wait_running(ids["cancelled"])
    time.sleep(1.5)
    c.scancel(str(ids["cancelled"]))
    requeue_once(c, ids["requeued"])
    for name, jid in ids.items():
        c.wait(jid, timeout=240)
    for name in ("timeout", "cancelled", "oom", "steps"):
        site.wait_record(ids[name])
    site.wait_record(ids["requeued"], runs=2)
    for task in range(6):
        site.wait_record(f"{ids['array']}_{task}")
    before = {name: site.records()[str(ids[name])] for name in ("oom", "cancelled")}
    r = site.ship()
    assert r.returncode == 0, r.stderr
    done = jobmon(site, "reconcile", "--json", f"--since={iso(started)}")
    assert done.returncode == 0, done.stderr
    return site, ids, before, json.loads(done.stdout), started


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat()


def jobmon(site, *args):
    env = dict(site.env(), PATH=SBIN_PATH, SLURM_CONF=site.cluster.conf)
    return subprocess.run([JOBMON, *args], env=env, capture_output=True, text=True,
                          timeout=300)


def points(site, job):
    """The job points of `job`, oldest run first."""
    rows = site.influx.rows(f"SELECT * FROM jobmon_job WHERE \"job\" = '{job}'", site.db)
    return sorted(rows, key=lambda r: r["time"])


def test_oom_is_not_stored_as_signal_125(reconciled):
    """Slurm's Epilog says "signal 125" for an OOM kill (its SIG_OOM 253 & 0x7f): no Linux
    signal, so the sampler stores neither code nor signal -- and sacct's OUT_OF_MEMORY
    becomes the outcome."""
    site, ids, before, _, _ = reconciled
    [rec] = before["oom"]
    assert rec.summary.get("signal") is None and rec.summary.get("exit_code") is None
    [p] = points(site, ids["oom"])
    assert (p["scheduler_state"], p["outcome"], p["outcome_reason"], p["outcome_cause"]) == \
        ("OUT_OF_MEMORY", "badput", "exceeded its memory", "user")
    assert p.get("signal") is None


def test_cancelled_and_timed_out_are_badput_with_who_and_why(reconciled):
    """Stored as exit code 0 and goodput at the job's end (what the Epilog says); once
    reconciled, the scheduler's end: cancelled by root (who ran scancel), and the time
    limit."""
    site, ids, before, _, _ = reconciled
    [rec] = before["cancelled"]
    assert rec.summary["exit_code"] == 0 and rec.summary["outcome"] == "goodput"
    [p] = points(site, ids["cancelled"])
    assert (p["scheduler_state"], p["outcome"], p["cancelled_by"]) == \
        ("CANCELLED", "badput", "root")
    assert p["outcome_reason"] == "cancelled (scancel): by root"
    assert p["scheduler_user"] == "jobmon-test" and p["reconciled"] == 1
    [p] = points(site, ids["timeout"])
    assert (p["scheduler_state"], p["outcome"], p["outcome_reason"]) == \
        ("TIMEOUT", "badput", "reached its time limit"), site.cluster.sacct(
            "-D", "-P", "-o", "JobID,State,ExitCode,Start,End,Elapsed", "-j",
            ",".join(str(i) for i in ids.values()))
    assert p["wall_seconds"] >= 55          # the figures are the run's own, kept


def test_requeued_run_says_it_was_requeued(reconciled):
    site, ids, _, _, _ = reconciled
    first, second = points(site, ids["requeued"])
    assert (first["run"], first["scheduler_state"], first["outcome"]) == \
        ("1", "REQUEUED", "badput")
    assert (second["run"], second["scheduler_state"], second["outcome"]) == \
        ("2", "COMPLETED", "goodput")
    doc = json.loads(jobmon(site, "query", str(ids["requeued"]), "--json",
                            "--no-scheduler").stdout)
    one, two = doc["runs"]
    assert one["status"].startswith("requeued") and two["status"] == "exit code 0"


def test_report_and_dashboards_count_job_runs_not_steps(reconciled):
    """12 job runs (6 array tasks, the requeued job's 2 runs, 4 single jobs), not the
    30-odd records with the batch, extern and srun steps; 8 goodput, 4 badput."""
    site, ids, _, done, started = reconciled
    assert done["settled"] >= 12 and done["waiting"] == 0 and not done["errors"]
    steps = points(site, f"{ids['steps']}.0") + points(site, f"{ids['steps']}.batch")
    assert len(steps) == 2                  # the steps' own records are there ...
    r = jobmon(site, "report", "--json", f"--since={iso(started)}")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    t = m["total"]
    assert (m["jobs"], t["goodput"], t["badput"], t["unknown"]) == (12, 8, 4, 0)
    [batch] = [b for b in m["batches"] if b["name"] == str(ids["array"])]
    assert batch["tasks"] == 6
    from test_scheduler_ends import panel_counts
    assert panel_counts(site, since=started) == {"goodput": 8, "badput": 4}   # ... but not counted


def test_node_failure_is_the_sites(jobmon_slurm):
    """The node goes down under a running job (`scontrol update State=DOWN`: Slurm kills
    the job and records NODE_FAIL; --no-requeue keeps it from running again): the Epilog
    says exit 0, so goodput at the job's end; reconciled, the site's badput."""
    site, c = jobmon_slurm, jobmon_slurm.cluster
    jid = c.submit("sleep 300\n", no_requeue=True)
    c.wait_running(jid)
    time.sleep(1.5)
    try:
        c.scontrol("update", f"NodeName={c.node}", "State=DOWN", "Reason=jobmon-test")
        c.wait_done(jid)
    finally:
        if c.drained_nodes():
            c.resume()
    c.wait(jid)
    [rec] = site.wait_record(jid)
    assert rec.summary["exit_code"] == 0 and rec.summary["outcome"] == "goodput"
    assert site.ship().returncode == 0
    done = jobmon(site, "reconcile", "--json")
    assert done.returncode == 0, done.stderr
    [p] = points(site, jid)
    assert (p["scheduler_state"], p["outcome"], p["outcome_cause"]) == \
        ("NODE_FAIL", "badput", "site"), p
    assert p["outcome_reason"] == "its node failed"
