"""jobmon's Slurm Prolog and Epilog on a real cluster (tests/slurm, with the cgroup plugin of
the host's version: v1 on a hybrid host, v2 on a pure v2 one): every job is sampled from
its own cgroup by a detached per-job sampler, tagged from the Prolog environment, and ends
with a complete record and no sampler left behind -- short, failed, cancelled, requeued,
array, multi-step and concurrent jobs alike.

Jobs run as the unprivileged test user and measure their own CPU (getrusage); the
samplers' records are read from the site's spool, where they wait for the shipper.
"""
import json
import os
import signal
import subprocess
import time

import pytest

from helpers import cpu_tolerance
from slurm_site import HOOKS, PYTHON

pytestmark = [pytest.mark.root, pytest.mark.slow]

MiB = 1 << 20
# the job's own CPU, exit included as far as a process can see it: what it used itself
# and what its reaped children used, printed as the last thing it does
BURN = """#!/usr/bin/python3
import json, os, resource, time
def burn(s):
    t = time.process_time()
    while time.process_time() - t < s: pass
burn({cpu})
held = bytearray({mib} << 20)
for i in range(0, len(held), 4096): held[i] = 1
time.sleep({hold})
del held
s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({{"cpu": s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime}}))
"""
# what a process's own getrusage cannot see: the interpreter's exit after the last print
# (freeing its heap), a few ms; and on v1 Slurm's extern step (a sleep)
EXIT_SLACK = 0.02


def burn(cpu=1.0, mib=50, hold=1.0):
    return BURN.format(cpu=cpu, mib=mib, hold=hold)


def alive(pid):
    """Running (a sampler started by hand here is nobody's child once it is detached: a
    zombie until some ancestor reaps it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def output_so_far(slurm, job):
    try:
        return slurm.output(job)
    except FileNotFoundError:      # not opened by slurmstepd yet
        return ""


def truth(slurm, job):
    return json.loads(slurm.output(job).strip().splitlines()[-1])


def check_measured(rec):
    """Figures from the job's cgroup, read after its last process was gone -- or, where
    the cgroup went first (the sampler lost the race on a busy node), a moment before,
    and the record says how long."""
    tags = rec.job_tags
    assert tags["measured"] in ("job-cgroup", "job-cgroup-last-read"), tags
    if tags["measured"] == "job-cgroup-last-read":
        assert float(tags["unread_seconds"]) < 1.0, tags


def check_cpu(rec, own):
    diff = rec.cpu() - own
    assert -cpu_tolerance(own) <= diff <= cpu_tolerance(own) + EXIT_SLACK, (rec.cpu(), own)


def test_job_sampled_from_its_cgroup_and_tagged(jobmon_slurm):
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    jid = slurm.submit(burn(cpu=1.0, mib=100, hold=1.5), mem="400M")
    slurm.wait_done(jid)
    [rec] = site.wait_record(jid)
    s, tags = rec.summary, rec.job_tags
    assert s["method"] == f"cgroup-{slurm.spec.cgroup}"   # the cluster's cgroup plugin
    check_measured(rec)
    check_cpu(rec, truth(slurm, jid)["cpu"])
    assert 100 * MiB <= s["mem_peak_bytes"] < 200 * MiB
    assert s["samples"] >= 2 and rec.samples and s["exit_code"] == 0
    assert 2.5 <= s["wall_seconds"] < 30
    # tags from the Prolog environment; the spool file is the job user's
    prolog = slurm.record("prolog", jid)
    assert tags["job_id"] == str(jid) and tags["user"] == prolog["SLURM_JOB_USER"]
    assert tags["uid"] == prolog["SLURM_JOB_UID"] == str(rec.owner)
    assert (tags["account"], tags["partition"], tags["node"], tags["cluster"]) == \
        ("jobmon", "debug", slurm.node, "jobmon")
    assert tags["restart_count"] == "0"
    assert {k: v for k, v in rec.tags.items() if k != "run"} == \
        {"job": str(jid), "scheduler": "slurm", "account": "jobmon", "partition": "debug"}
    assert rec.tags.get("run", "1") == "1"     # the first run (the schema's run tag)
    # each step a record of its own, named as sacct names steps
    steps = {j: site.wait_record(j)[0] for j in (f"{jid}.batch", f"{jid}.extern")}
    batch = steps[f"{jid}.batch"]
    assert batch.job_tags["step"] == "batch" and batch.job_tags["parent_job"] == str(jid)
    assert batch.job_tags["measured"] in ("step-cgroup", "step-cgroup-last-read")
    assert abs(batch.cpu() - rec.cpu()) < 0.01
    assert site.warnings_text() == ""


def test_exit_status_from_the_epilog(jobmon_slurm):
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    failed = slurm.submit("sleep 1\nexit 3\n")
    killed = slurm.submit("sleep 1\nkill -KILL $$\n")
    for jid in (failed, killed):
        slurm.wait_done(jid)
    f, k = site.wait_record(failed)[0].summary, site.wait_record(killed)[0].summary
    assert (f["exit_code"], f.get("signal")) == (3, None)
    assert (k.get("exit_code"), k["signal"]) == (None, 9)


def test_array_tasks_named_as_users_type_them(jobmon_slurm):
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    jid = slurm.submit("sleep 2\n", array="0-1")
    slurm.wait_done(jid)
    for task in (0, 1):
        [rec] = site.wait_record(f"{jid}_{task}")
        assert rec.job_tags["array_job_id"] == str(jid)
        assert rec.job_tags["array_task_id"] == str(task)
        assert rec.summary["exit_code"] == 0


# a step that burns 0.4 s of CPU, says when it is done, and waits on a FIFO (no CPU) for
# the test to let it end
STEP = """import sys, time
while time.process_time() < 0.4: pass
print("burnt", time.time(), flush=True)
open(sys.argv[1]).read()
"""


def read_since_burnt(site, slurm, job, n):
    """True once the job's step n said it burnt its CPU and the job's spool file holds two
    samples taken since: the sampler reads the steps right after each sample."""
    burnt = [float(line.split()[1]) for line in output_so_far(slurm, job).splitlines()
             if line.startswith("burnt ")]
    if len(burnt) <= n:
        return False
    try:
        recs = site.records().get(str(job), [])
    except ValueError:          # a line being written
        return False
    return sum(p["measurement"] == "jobmon_sample" and p["time"] > burnt[n] * 1e9
               for r in recs for p in r.points) >= 2


def test_multi_step_job_per_step_and_summed(jobmon_slurm):
    """Two steps that burn 0.4 s of CPU each, then a short one: each step a record with
    its CPU, the job's the sum of its steps'. Each burning step ends only once the
    sampler has read it since it burnt (a sample of the job after it, and the next): on
    a busy node a step's end races its sampler, and a step whose cgroup Slurm removes
    before its final read keeps its last read (step-cgroup-last-read)."""
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    step = os.path.join(slurm.lay.jobs, "burn_step.py")
    with open(step, "w") as f:
        f.write(STEP)
    gates = [os.path.join(slurm.lay.jobs, f"gate-{time.time_ns()}-{n}") for n in (0, 1)]
    for gate in gates:
        os.mkfifo(gate)
        os.chmod(gate, 0o644)
    jid = slurm.submit("".join(f"srun /usr/bin/python3 {step} {gate}\n" for gate in gates)
                       + "srun sleep 0.5\n")
    try:
        for n, gate in enumerate(gates):
            deadline = time.monotonic() + 120
            while not read_since_burnt(site, slurm, jid, n):
                assert time.monotonic() < deadline, f"step {n} not burnt and read"
                time.sleep(0.1)
            with open(gate, "w"):   # the step reads to the end: it ends
                pass
        slurm.wait_done(jid)
    finally:
        for gate in gates:
            os.unlink(gate)
    [job] = site.wait_record(jid)
    steps = {s: site.wait_record(f"{jid}.{s}")[0] for s in ("batch", "extern", "0", "1", "2")}
    how = {s: (round(r.cpu(), 3), r.job_tags["measured"]) for s, r in steps.items()}
    for s in ("0", "1"):
        assert steps[s].cpu() >= 0.4, how
        assert steps[s].job_tags["measured"] in ("step-cgroup", "step-cgroup-last-read")
        assert steps[s].summary["procs_max"] >= 1
    # the job's total is its steps' sum; a step removed before its final read misses
    # what it used after its last read (a Python's exit), which only the job's total holds
    gap = job.cpu() - sum(r.cpu() for r in steps.values())
    last_read = [s for s, (_cpu, m) in how.items() if m != "step-cgroup"]
    assert -0.01 < gap < 0.01 + 0.05 * len(last_read), (job.cpu(), gap, how)
    assert steps["0"].summary["end_time"] <= steps["1"].job_point["start_time"] + 0.2


def test_concurrent_jobs_each_exact(jobmon_slurm):
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    ids = [slurm.submit(burn(cpu=0.3, mib=20, hold=0.5)) for _ in range(4)]
    for jid in ids:
        slurm.wait_done(jid)
    for jid in ids:
        [rec] = site.wait_record(jid)
        check_cpu(rec, truth(slurm, jid)["cpu"])


def test_cancelled_job_ends_its_record(jobmon_slurm):
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    # cancelled once it has used its CPU, however long that takes on a busy node
    script = burn(cpu=0.3, mib=20, hold=60).replace(
        "held = bytearray", "print('burnt', flush=True)\nheld = bytearray", 1)
    jid = slurm.submit(script)
    slurm.wait_running(jid)
    deadline = time.monotonic() + 120
    while "burnt" not in output_so_far(slurm, jid):
        assert time.monotonic() < deadline, "the job never burnt its CPU"
        time.sleep(0.2)
    slurm.scancel(str(jid))
    slurm.wait_done(jid)
    [rec] = site.wait_record(jid)
    assert rec.summary["cpu_user_seconds"] + rec.summary["cpu_system_seconds"] >= 0.3
    check_measured(rec)
    assert rec.summary["wall_seconds"] < 30


def test_requeued_job_is_a_new_run(jobmon_slurm):
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    jid = slurm.submit("sleep 3\n", requeue=True)
    slurm.wait_running(jid)
    time.sleep(1)
    slurm.scontrol("requeue", str(jid))
    deadline = time.monotonic() + 120
    while True:
        jobs = slurm.ctld_jobs(jid)
        state = jobs[0].get("JobState") if jobs else None
        if state == "PENDING":   # Slurm holds a requeued job back ~2 min: not here
            slurm.scontrol("update", f"JobId={jid}", "StartTime=now")
        if state == "COMPLETED" and jobs[0].get("Restarts") == "1":
            break
        assert time.monotonic() < deadline, jobs
        time.sleep(0.5)
    first, second = site.wait_record(jid, runs=2)
    assert (first.job_tags["restart_count"], second.job_tags["restart_count"]) == ("0", "1")
    assert (first.tags.get("run", "1"), second.tags.get("run", "2")) == ("1", "2")
    assert first.path != second.path
    assert first.summary["wall_seconds"] < second.summary["wall_seconds"]


def test_job_never_seen_gets_a_record_that_says_so(jobmon_slurm):
    """The sampler of a job whose cgroup never appears (a job over before it looked, or
    one cancelled during its Prolog): a record without figures, and the reason."""
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    jid = slurm.submit("true\n")
    slurm.wait_done(jid)
    env = slurm.record("prolog", jid)
    env["SLURM_JOB_ID"] = env["SLURM_JOBID"] = str(jid + 100000)   # no such job here
    site.write_config(cgroup_wait_seconds=1.0, end_wait_seconds=0.0)
    r = subprocess.run([PYTHON, "-I", "-S", HOOKS, "prolog", f"--run-dir={site.run_dir}"],
                       env=dict(env, JOBMON_CONFIG=site.config), timeout=30)
    assert r.returncode == 0
    [rec] = site.wait_record(jid + 100000)
    assert rec.job_tags["measured"] == "none"
    assert "never seen" in rec.job_tags["missing"]
    assert "cpu_user_seconds" not in rec.summary and rec.summary["samples"] == 1


def test_short_jobs_never_lose_their_record(jobmon_slurm):
    """Jobs that end within milliseconds: each gets a record -- exact figures when the
    sampler saw the cgroup, none (said so) when it did not."""
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    ids = [slurm.submit("true\n") for _ in range(4)]
    for jid in ids:
        slurm.wait_done(jid)
    for jid in ids:
        [rec] = site.wait_record(jid)
        measured = rec.job_tags["measured"]
        assert measured in ("job-cgroup", "job-cgroup-last-read", "none"), rec.job_tags
        if measured == "none":
            assert "cpu_user_seconds" not in rec.summary
        else:
            assert rec.cpu() < 0.05
        assert rec.summary["exit_code"] == 0


def test_epilog_ends_a_sampler_that_waits(jobmon_slurm):
    """A sampler still waiting for its job's cgroup when the job is over (cancelled in
    its Prolog): the Epilog ends it, and it leaves its record."""
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    jid = slurm.submit("true\n")
    slurm.wait_done(jid)
    env = dict(slurm.record("prolog", jid), JOBMON_CONFIG=site.config)
    env["SLURM_JOB_ID"] = env["SLURM_JOBID"] = fake = str(jid + 200000)
    subprocess.run([PYTHON, "-I", "-S", HOOKS, "prolog", f"--run-dir={site.run_dir}"],
                   env=env, timeout=30, check=True)
    pid_file = os.path.join(site.run_dir, f"{slurm.node}.{fake}.pid")
    pid = int(open(pid_file).read().split()[0])
    assert alive(pid)
    t = time.monotonic()
    subprocess.run([PYTHON, "-I", "-S", HOOKS, "epilog", f"--run-dir={site.run_dir}",
                    "--wait=5"], env=dict(env, SLURM_JOB_EXIT_CODE="0"), timeout=30, check=True)
    assert time.monotonic() - t < 5
    assert not os.path.exists(pid_file) and not alive(pid)
    [rec] = site.wait_record(fake)
    assert rec.job_tags["measured"] == "none" and "told to stop" in rec.job_tags["missing"]


def test_epilog_kills_a_sampler_that_will_not_end(jobmon_slurm):
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    jid = slurm.submit("true\n")
    slurm.wait_done(jid)
    env = dict(slurm.record("prolog", jid), JOBMON_CONFIG=site.config)
    env["SLURM_JOB_ID"] = env["SLURM_JOBID"] = fake = str(jid + 300000)
    subprocess.run([PYTHON, "-I", "-S", HOOKS, "prolog", f"--run-dir={site.run_dir}"],
                   env=env, timeout=30, check=True)
    pid = int(open(os.path.join(site.run_dir, f"{slurm.node}.{fake}.pid")).read().split()[0])
    os.kill(pid, signal.SIGSTOP)          # a sampler stuck for good
    t = time.monotonic()
    subprocess.run([PYTHON, "-I", "-S", HOOKS, "epilog", f"--run-dir={site.run_dir}",
                    "--wait=1"], env=env, timeout=30, check=True)
    assert 1 <= time.monotonic() - t < 4
    assert not alive(pid)
