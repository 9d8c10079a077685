"""Totals of real Slurm jobs against their ground truth: a CPU burn, a 500-child fork
storm, a 0.5 s job and a job whose daemon escapes the process tree, each measuring its
own CPU (getrusage of itself, of the children it reaped, and the daemon's own report).
jobmon's figure must be within max(1 %, 0.05 s) of it; sacct's is printed beside it
(docs/slurm.md has the table) -- Slurm's own accounting is not what is tested here.
"""
import json

import pytest

from helpers import cpu_tolerance
from jobmon.plugins.slurm.accounting import sacct

pytestmark = [pytest.mark.root, pytest.mark.slow]

COMMON = """#!/usr/bin/python3
import json, os, resource, time
def burn(s):
    t = time.process_time()
    while time.process_time() - t < s: pass
def own():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
"""
WORKLOADS = {
    "burn": COMMON + "burn(2.0)\nprint(json.dumps({'cpu': own()}))\n",
    "short": COMMON + "burn(0.5)\nprint(json.dumps({'cpu': own()}))\n",
    "forkstorm": COMMON + """
running = []
for i in range(500):
    pid = os.fork()
    if pid == 0:
        burn(0.002)
        os._exit(0)
    running.append(pid)
    if len(running) >= 2:
        os.waitpid(running.pop(0), 0)
for pid in running:
    os.waitpid(pid, 0)
print(json.dumps({'cpu': own()}))
""",
    # a child setsid()s and double-forks a daemon that leaves the tree; the daemon reports
    # its own CPU before it exits (it must end before the job: Slurm kills leftovers)
    "escape": COMMON + """
report = f"{os.environ['SLURM_JOB_ID']}.daemon"
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        burn(1.0)
        r = resource.getrusage(resource.RUSAGE_SELF)
        with open(report + ".tmp", "w") as f:
            f.write(str(r.ru_utime + r.ru_stime))
        os.rename(report + ".tmp", report)
        os._exit(0)
    os._exit(0)
os.waitpid(pid, 0)
burn(0.5)
while not os.path.exists(report):
    time.sleep(0.01)
time.sleep(0.05)                       # the daemon's exit
with open(report) as f:
    daemon = float(f.read())
print(json.dumps({'cpu': own() + daemon}))
""",
}
# what a process's own accounting cannot see: its interpreter's exit after the print
EXIT_SLACK = 0.02


@pytest.fixture(scope="module")
def ran(jobmon_slurm_cluster):
    """Every workload run as a job, one after the other (each alone on the node)."""
    site = jobmon_slurm_cluster
    c = site.cluster
    out = {}
    for name, script in WORKLOADS.items():
        jid = c.submit(script)
        jobs = c.wait(jid)
        truth = json.loads(c.output(jid).strip().splitlines()[-1])["cpu"]
        [rec] = site.wait_record(jid)
        [acct] = sacct.records_from_json({"jobs": jobs})
        out[name] = (jid, truth, rec, acct)
    lines = ["workload   truth_s  jobmon_s  diff_s  sacct_s  sacct_diff_s  jobmon_peak_MiB  "
             "sacct_maxrss_MiB  measured"]
    for name, (jid, truth, rec, acct) in out.items():
        lines.append(f"{name:10} {truth:7.3f}  {rec.cpu():8.3f}  {rec.cpu() - truth:+6.3f}  "
                     f"{acct.cpu_seconds:7.3f}  {acct.cpu_seconds - truth:+12.3f}  "
                     f"{rec.summary['mem_peak_bytes'] / 2**20:15.1f}  "
                     f"{(acct.max_rss_bytes or 0) / 2**20:16.1f}  {rec.job_tags['measured']}")
    print("\n" + "\n".join(lines))
    return out


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_cpu_within_tolerance_of_truth(ran, name):
    _jid, truth, rec, _acct = ran[name]
    diff = rec.cpu() - truth
    assert -cpu_tolerance(truth) <= diff <= cpu_tolerance(truth) + EXIT_SLACK, \
        (name, truth, rec.cpu(), rec.job_tags)
    assert rec.job_tags["measured"] in ("job-cgroup", "job-cgroup-last-read")


def test_fork_storm_processes_seen(ran):
    _jid, _truth, rec, _acct = ran["forkstorm"]
    assert rec.summary["procs_max"] >= 2
