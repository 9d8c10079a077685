"""`jobmon act` on the suite's real Slurm cluster (tests/slurm): idle jobs of jobmon-test
sampled by jobmon's Prolog, shipped to a real InfluxDB, then passes of `jobmon act` as the
site's timer runs it, against the real squeue, scontrol requeuehold and scancel. A dry
run touches nothing; the hourly limit holds one back; a job that opted out through its
comment and a job whose only idle record is another user's claim are never acted on."""
import json
import os
import pwd
import signal
import subprocess
import time

import pytest

from helpers import JOBMON, PYTHON, as_user, shared_tmpdir
from slurm.common import SBIN_PATH

pytestmark = [pytest.mark.root, pytest.mark.slow]

IDLE = 2.0            # [actions] idle_seconds and grace_seconds
SLEEP = "sleep 300\n"


def configure(site, warn_dir):
    # a requeued job's node keeps a sampler for its next run this long (docs/actions.md)
    site.write_config(cgroup_wait_seconds=15.0, extra=(
        f'[actions]\nmode = "on"\nresources = "cores"\nidle_seconds = {IDLE}\n'
        f'grace_seconds = {IDLE}\nmax_per_hour = 100\nwarn = "file"\nwarn_dir = "{warn_dir}"\n'))


def env(site, **actions):
    e = dict(site.env(), PATH=SBIN_PATH, SLURM_CONF=site.cluster.conf)
    e.update({f"JOBMON_ACTIONS_{k.upper()}": str(v) for k, v in actions.items()})
    return e


def act(site, *args, **actions):
    """One pass of `jobmon act --json ARGS` ([actions] changed through the environment):
    {job: decision}, and the whole answer."""
    r = subprocess.run([JOBMON, "act", "--json", *args], env=env(site, **actions),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    return {d["job"]: d["decision"] for d in doc["decisions"]}, doc


def acting(site, jobs, **actions):
    """{job: decision} of one pass for `jobs` (those over, whose last samples are still
    recent, are decided on too: gone, or unconfirmed for a claim)."""
    return {j: d for j, d in act(site, **actions)[0].items() if j in map(str, jobs)}


def idle_for(site, jobs, seconds=IDLE, timeout=120, grace=False):
    """Ship until each job's latest sample says its cores were idle `seconds` at a stretch
    (grace: and it was taken a grace period after now: the warning just given)."""
    after = time.time() + IDLE if grace else 0
    from jobmon.stores.influx import InfluxStore
    st = InfluxStore(site.influx.url, site.db)
    deadline = time.monotonic() + timeout
    while True:
        assert site.ship().returncode == 0
        idle = {}
        for r in st.latest(time.time() - 600):
            fresh = r["sample"]["time"] / 1e9 >= after
            idle.setdefault(r["job"], []).append(fresh and r["sample"].get("cpu_idle_seconds", 0))
        if all(min(idle.get(str(j), [0])) >= seconds for j in jobs):
            return
        assert time.monotonic() < deadline, idle
        time.sleep(0.5)


# another user's spool file claiming a Slurm job: an idle record of that job, as if its
# sampler had written it (the shipper tags it with the file's owner, jobmon-test2)
FORGED = r"""
import sys, time
from jobmon import config
from jobmon.sinks.spool import SpoolSink
sink = SpoolSink(config.load()["spool"]["dir"])
sink.open({"job": sys.argv[1], "host": "h", "user": "jobmon-test2", "method": "procfs",
           "start_time": time.time() - 10, "tags": {}, "command": ["sleep", "300"],
           "interval": 1.0, "scheduler": "slurm", "run": 1})
now = time.time_ns()
for k in range(5):
    sink.write({"time": now - (4 - k) * 10**9, "elapsed_seconds": 6.0 + k, "procs": 1,
                "method": "procfs", "cpu_user_seconds": 0.0, "cpu_idle_seconds": 6.0 + k})
"""


def state(site, job, wanted=None, timeout=60):
    """(JobState, Reason) of the job at the controller (waited for, where `wanted`)."""
    deadline = time.monotonic() + timeout
    while True:
        [j] = site.cluster.ctld_jobs(job)
        got = j["JobState"], j.get("Reason")
        if wanted is None or got == wanted or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


def actions(site, job):
    return site.influx.rows(f'SELECT * FROM "jobmon_action" WHERE "job" = \'{job}\'', site.db)


def test_idle_slurm_jobs_are_warned_then_requeued_held_or_cancelled(jobmon_slurm):
    """Two jobs at a time (the test node has 2 CPUs): the first to be requeued held beside
    one whose only idle record is a claim; then one to be cancelled beside one that opted
    out."""
    site, c = jobmon_slurm, jobmon_slurm.cluster
    warn_dir = shared_tmpdir("jobmon-act-warn-")
    os.chmod(warn_dir, 0o755)       # root writes, each user reads their own files
    # a job without jobmon's sampler; another user claims its id: an idle `jobmon run`
    # under it, and a spool file of theirs that says it is the Slurm job's record
    site.write_config(enabled=False)
    claimed = c.submit(SLEEP)
    c.wait_running(claimed)
    configure(site, warn_dir)
    held = c.submit(SLEEP)
    forger = subprocess.Popen(as_user([JOBMON, "run", "--interval=1", f"--job-id={claimed}",
                                       "--", "sleep", "300"], "jobmon-test2"),
                              env=site.env(), cwd=shared_tmpdir(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        c.wait_running(held)
        subprocess.run(as_user([PYTHON, "-c", FORGED, str(claimed)], "jobmon-test2"),
                       env=site.env(), check=True)
        idle_for(site, [held, claimed])
        got, _ = act(site)
        assert got == {str(held): "warn", str(claimed): "unconfirmed"}
        [warning] = os.listdir(warn_dir)
        path = os.path.join(warn_dir, warning)
        assert warning == f"jobmon-warning-{held}.txt"
        assert os.stat(path).st_uid == pwd.getpwnam("jobmon-test").pw_uid
        text = open(path).read()
        assert f"your job {held}" in text and f"scontrol release {held}" in text and \
            "jobmon-actions=no" in text, text
        # a dry run of the whole policy, its own warning and its own grace
        assert act(site, mode="dry-run")[0][str(held)] == "warn"
        idle_for(site, [held], grace=True)
        got, doc = act(site, mode="dry-run")
        assert got[str(held)] == "act" and state(site, held)[0] == "RUNNING"
        assert os.listdir(warn_dir) == [warning]
        # the hourly limit: none allowed, none done
        got, _ = act(site, max_per_hour=0)
        assert got[str(held)] == "limited" and state(site, held)[0] == "RUNNING"
        got, doc = act(site)
        assert got == {str(held): "act", str(claimed): "unconfirmed"}
        held_state = ("PENDING", "job_requeued_in_held_state")
        assert state(site, held, held_state) == held_state     # after COMPLETING
        assert state(site, claimed)[0] == "RUNNING"
        rows = actions(site, held)
        live = [(r["action"], r["outcome"]) for r in rows if not r["dry_run"]]
        assert live == [("warn", f"written to {path}"),
                        ("requeuehold", f"done: requeuehold {held}")], rows
        dry = [(r["action"], r["outcome"]) for r in rows if r["dry_run"]]
        assert dry == [("warn", "dry run: not sent (file)"),
                       ("requeuehold", "dry run: not done")]
        assert {r["user"] for r in rows} == {"jobmon-test"}
        assert actions(site, claimed) == []
        # held: pending, not running, so nothing more is done to it
        assert act(site)[0].get(str(held)) in ("gone", None)
        q = subprocess.run([JOBMON, "query", str(held), "--json", "--no-scheduler"],
                           env=env(site), capture_output=True, text=True, timeout=120)
        assert q.returncode == 0, q.stderr
        assert [a["action"] for a in json.loads(q.stdout)["actions"]] == [
            "warn", "warn", "requeuehold", "requeuehold"]
    finally:
        forger.terminate()          # forwarded to its sleep
        forger.wait()
        c.scancel(str(claimed), str(held))
        c.wait_done(claimed)

    opted = c.submit(SLEEP, comment="mine, jobmon-actions=no")
    cancelled = c.submit(SLEEP)
    try:
        c.wait_running(opted)
        c.wait_running(cancelled)
        idle_for(site, [cancelled, opted])
        assert acting(site, [cancelled, opted], slurm_action="cancel") == {
            str(cancelled): "warn", str(opted): "opted-out"}
        idle_for(site, [cancelled], grace=True)
        assert acting(site, [cancelled, opted], slurm_action="cancel") == {
            str(cancelled): "act", str(opted): "opted-out"}
        c.wait_done(cancelled)
        assert c.states(cancelled)[str(cancelled)]["State"].startswith("CANCELLED")
        assert state(site, opted)[0] == "RUNNING"
        assert [(r["action"], r["outcome"]) for r in actions(site, cancelled)] == [
            ("warn", f"written to {warn_dir}/jobmon-warning-{cancelled}.txt"),
            ("cancel", f"done: cancel {cancelled}")]
        assert actions(site, opted) == []
    finally:
        c.scancel(str(opted), str(cancelled))
        c.wait_done(opted)


def test_a_job_that_may_not_be_requeued_is_recorded_failed_and_left_alone(jobmon_slurm):
    """sbatch --no-requeue: scontrol requeuehold refuses it; the refusal is the action's
    recorded outcome, the job runs on, and no later pass tries again in its idle stretch."""
    site, c = jobmon_slurm, jobmon_slurm.cluster
    configure(site, shared_tmpdir("jobmon-act-warn-"))
    job = c.submit(SLEEP, no_requeue=True)
    try:
        c.wait_running(job)
        idle_for(site, [job])
        assert acting(site, [job], warn="none") == {str(job): "warn"}
        idle_for(site, [job], grace=True)
        assert acting(site, [job], warn="none") == {str(job): "act"}
        [tried] = [r for r in actions(site, job) if r["action"] == "requeuehold"]
        assert tried["outcome"].startswith(f"failed: requeuehold of job {job}: exit 1:"), tried
        assert "disabled" in tried["outcome"], tried
        assert acting(site, [job], warn="none") == {str(job): "done"}
        assert state(site, job)[0] == "RUNNING"
    finally:
        c.scancel(str(job))
        c.wait_done(job)


def test_a_dry_run_decides_whatever_the_mode_says_off_included(jobmon_slurm):
    """`jobmon act --dry-run` with [actions] mode = "off" (a site trying its policy before
    it turns it on): the pass decides, records dry-run rows, warns nobody and touches no
    job; without --dry-run the same mode does nothing."""
    site, c = jobmon_slurm, jobmon_slurm.cluster
    warn_dir = shared_tmpdir("jobmon-act-warn-")
    configure(site, warn_dir)
    job = c.submit(SLEEP)
    try:
        c.wait_running(job)
        idle_for(site, [job])
        r = subprocess.run([JOBMON, "act"], env=env(site, mode="off"), capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0 and "mode is off: nothing is done" in r.stdout, r
        got, doc = act(site, "--dry-run", mode="off")
        assert doc["mode"] == "dry-run" and got.get(str(job)) == "warn", doc
        idle_for(site, [job], grace=True)
        got, doc = act(site, "--dry-run", mode="off")
        assert got.get(str(job)) == "act", doc
        assert state(site, job)[0] == "RUNNING" and os.listdir(warn_dir) == []
        assert [(r["action"], r["dry_run"], r["outcome"]) for r in actions(site, job)] == [
            ("warn", 1, "dry run: not sent (file)"), ("requeuehold", 1, "dry run: not done")]
    finally:
        c.scancel(str(job))
        c.wait_done(job)


def test_a_job_whose_samples_have_a_gap_is_neither_warned_nor_acted_on(jobmon_slurm):
    """An idle job whose sampler was held up (stopped 6 s: a gap of 5 of its 1 s
    intervals) has samples covering too little of its run so far for the site's 90 %:
    `jobmon act` says so and neither warns nor acts; with the threshold lowered it warns."""
    from slurm_site import samplers
    site, c = jobmon_slurm, jobmon_slurm.cluster
    warn_dir = shared_tmpdir("jobmon-act-warn-")
    configure(site, warn_dir)
    job = c.submit(SLEEP)
    try:
        c.wait_running(job)
        idle_for(site, [job])
        stopped = [pid for pid, _comm in samplers(c)]
        assert stopped
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(6)
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        idle_for(site, [job], grace=True)
        got, doc = act(site)
        [d] = [d for d in doc["decisions"] if d["job"] == str(job)]
        assert d["decision"] == "incomplete" and "under the site's 90 %" in d["why"], d
        assert os.listdir(warn_dir) == [] and actions(site, job) == []
        got, _ = act(site, min_completeness_percent=10)
        assert got.get(str(job)) == "warn"
    finally:
        c.scancel(str(job))
        c.wait_done(job)


def test_a_job_requeue_held_by_jobmon_act_is_requeued_not_goodput_nor_cancelled(jobmon_slurm):
    """`jobmon act` requeue-holds an idle job: sacct -D then lists its run (REQUEUED) and
    the pending record that never started. The run is matched to the record that ran:
    while held, `jobmon report` counts it badput (requeued), not goodput; once the held
    job is cancelled (its never-started record CANCELLED), the stored run is still
    requeued -- never "cancelled by root"."""
    from jobmon.plugins.slurm.accounting import sacct
    site, c = jobmon_slurm, jobmon_slurm.cluster
    configure(site, shared_tmpdir("jobmon-act-warn-"))
    started = time.time()
    job = c.submit(SLEEP)
    src = sacct.SacctSource(env=c.env())
    try:
        c.wait_running(job)
        idle_for(site, [job])
        assert acting(site, [job], warn="none") == {str(job): "warn"}
        idle_for(site, [job], grace=True)
        assert acting(site, [job], warn="none") == {str(job): "act"}
        held = ("PENDING", "job_requeued_in_held_state")
        assert state(site, job, held) == held
        site.wait_record(job)                   # run 1's end-of-job record
        assert site.ship().returncode == 0
        wait_records(src, job, lambda rs: len(rs) == 2)
        doc = report(site, started)
        assert (doc["total"]["goodput"], doc["total"]["badput"]) == (0, 1), doc["total"]
        q = query(site, job)
        assert named(q["efficiency"])["outcome"].startswith("badput: requeued"), \
            q["efficiency"]
        recs = wait_records(src, job, lambda rs: [r.state for r in rs] == [
            "REQUEUED", "PENDING"])
        assert recs[0].run == 1 and recs[0].start_time and not recs[1].start_time, recs
    finally:
        c.scancel(str(job))
        c.wait_done(job)
    wait_records(src, job, lambda rs: [r.state for r in rs] == ["REQUEUED", "CANCELLED"])
    r = subprocess.run([JOBMON, "reconcile", "--json", "--since=1h"], env=env(site),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    [p] = site.influx.rows(f'SELECT * FROM "jobmon_job" WHERE "job" = \'{job}\'', site.db)
    assert (p["run"], p["scheduler_state"], p["outcome"], p["outcome_reason"]) == \
        ("1", "REQUEUED", "badput", "requeued"), p
    assert p.get("cancelled_by") in (None, ""), p
    doc = report(site, started)
    assert (doc["total"]["goodput"], doc["total"]["badput"]) == (0, 1), doc["total"]


def wait_records(src, job, done, timeout=60):
    """sacct's records of `job` (oldest run first), once `done(records)` (slurmdbd lags)."""
    deadline = time.monotonic() + timeout
    while True:
        recs = sorted(src.lookup(str(job)), key=lambda r: r.run or 0)
        if done(recs) or time.monotonic() > deadline:
            assert done(recs), [(r.run, r.state, r.start_time) for r in recs]
            return recs
        time.sleep(0.5)


def report(site, since):
    import datetime
    t = datetime.datetime.fromtimestamp(since, datetime.timezone.utc).isoformat()
    r = subprocess.run([JOBMON, "report", "--json", f"--since={t}"], env=env(site),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def query(site, job):
    r = subprocess.run([JOBMON, "query", str(job), "--json"], env=env(site),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def named(rows):
    return {r["name"]: r["value"] for r in rows}
