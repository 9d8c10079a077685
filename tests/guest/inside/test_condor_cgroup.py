"""jobmon-condor-wrapper in the cgroups HTCondor gives a job on cgroup v2 (24.8.1 and later):
a .scope below a per-job .slice, the wrapper alone in the scope as the starter leaves it,
run as the job's user with the starter's environment and ads (test_condor_wrapper.Starter).

- The scope delegated to the job's user: the wrapper moves itself into a leaf of the scope
  and runs the job in a cgroup of its own beside it, so the job's figures exclude jobmon's
  memory and CPU (tag measured = job-cgroup).
- Not delegated (owned by root): the wrapper measures the scope itself, itself included, and
  says so (measured = job-cgroup-with-jobmon, its own share in monitor_cpu_seconds and the
  monitor_rss_bytes tag).
- A cgroup shared with other processes (a node without job cgroups, where jobs stay in the
  daemons' cgroup): the process tree (measured = process-tree).
The names are illustrative: jobmon finds cgroups from /proc/self/cgroup only."""
import json
import os
import subprocess

import pytest

import tree
from helpers import PYTHON, cpu_tolerance
from test_condor_wrapper import FAST, Starter

SLICE = "system.slice/htcondor/condor_var_lib_condor_execute_slot1_1@guest.slice"
TIMEOUT = 180
# Under the guest's emulation (TCG) what the job's own accounting cannot see -- its main
# process's exit, the fork that becomes the exec trampoline -- took 0.06-0.22 s (the same
# job under `jobmon run` there: +0.06 s), more the busier the host (the guest charges a
# vCPU's stolen time to whatever ran on it); on the host the wrapper is within 3 ms
# (tests/test_condor_wrapper.py). jobmon's own CPU in the guest is several seconds, so
# whether it is in the figures or not stays plain.
EMULATION = 0.3

# the job's own CPU, counted by the parents that reaped each process (its exit teardown
# is seen only by them), taken last: only the write of the result and the main process's
# own exit are left out (a few ms; some tens under emulation)
TRUTH_JOB = r"""
import json, os, resource, sys, time
def burn(s):
    t = time.process_time()
    while time.process_time() - t < s: pass
p = os.fork()
if p == 0:
    for i in range(5):
        q = os.fork()
        if q == 0:
            burn(0.02); os._exit(0)
        os.waitpid(q, 0)
    burn(0.5); os._exit(0)
os.waitpid(p, 0)
with open("/proc/self/cgroup") as f, open("/proc/%d/cgroup" % os.getppid()) as g:
    out = {"cgroup": f.read(), "parent_cgroup": g.read()}
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
out["cpu"] = sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                   resource.getrusage(resource.RUSAGE_CHILDREN)))
os.write(fd, json.dumps(out).encode())
os._exit(0)
"""


class WrapperRun:
    """One job through the wrapper, started in `cgroup` as the starter places it."""

    def __init__(self, cgroup):
        s = self.starter = Starter(site=FAST)
        summary = os.path.join(s.base, "summary.json")
        s.attrs["JobMonitorSummary"] = json.dumps(summary)
        s.prepare()
        truth = os.path.join(s.base, "truth.json")
        p = s.popen_prepared([PYTHON, "-c", TRUTH_JOB, truth], stdin=subprocess.DEVNULL,
                             preexec_fn=lambda: tree.move(0, cgroup))
        self.pid = p.pid
        out, err = p.communicate(timeout=TIMEOUT)
        assert p.returncode == 0, err
        self.stderr = err.decode(errors="replace")
        with open(summary) as f:
            self.summary = json.load(f)
        with open(truth) as f:
            t = json.load(f)
        self.truth_cpu = t["cpu"]
        self.cgroup = t["cgroup"].strip().partition("::")[2]
        self.wrapper_cgroup = t["parent_cgroup"].strip().partition("::")[2]
        (self.info, _, self.samples), = s.records("5.0")

    @property
    def cpu(self):
        return self.summary["cpu_user_seconds"] + self.summary["cpu_system_seconds"]


def _rel(d):
    return d[len(tree.root()):]


@pytest.fixture
def job_scope(raw_guest):
    """The per-job .slice and its .scope, controllers handed down to the scope (its own
    subtree_control empty), and the daemons in condor.service beside them."""
    scope = tree.make(f"{SLICE}/condor_job.scope")
    daemons = tree.make("system.slice/condor.service")
    startd = tree.sleeper(daemons)
    yield scope
    tree.stop(startd)


def test_delegated_scope_job_in_a_cgroup_of_its_own(job_scope, test_user):
    tree.delegate(job_scope, test_user.pw_uid, test_user.pw_gid)
    r = WrapperRun(job_scope)
    assert r.cgroup == f"{_rel(job_scope)}/jobmon-{r.pid}", r.stderr
    assert r.wrapper_cgroup == f"{_rel(job_scope)}/jobmon-{r.pid}-monitor"
    s = r.summary
    assert (s["method"], r.info["tags"]["measured"]) == ("cgroup-v2", "job-cgroup")
    # the job, none of jobmon's own CPU (seconds of it under emulation)
    assert r.summary["monitor_cpu_seconds"] > 1.0
    assert abs(r.cpu - r.truth_cpu) <= cpu_tolerance(r.truth_cpu) + EMULATION, \
        (r.cpu, r.truth_cpu)
    assert s["mem_peak_bytes"] and s["procs_max"] >= 2
    # everything put back: the scope as the starter made it
    assert tree.below(job_scope) == []
    assert tree.words(job_scope, "cgroup.subtree_control") == []


def test_scope_not_delegated_measured_with_jobmon_inside(job_scope):
    r = WrapperRun(job_scope)
    assert r.cgroup == r.wrapper_cgroup == _rel(job_scope), r.stderr
    s, tags = r.summary, r.info["tags"]
    assert (s["method"], tags["measured"]) == ("cgroup-v2", "job-cgroup-with-jobmon")
    assert int(tags["monitor_rss_bytes"]) > 5 << 20
    # counted from the job's start: the job, and what the wrapper did after it (setting up
    # the sampler: seconds under emulation), never more than all the wrapper used
    tol = cpu_tolerance(r.truth_cpu) + EMULATION
    assert r.truth_cpu + 0.3 <= r.cpu <= r.truth_cpu + s["monitor_cpu_seconds"] + tol, \
        (r.cpu, r.truth_cpu, s["monitor_cpu_seconds"])
    assert tree.below(job_scope) == []


def test_cgroup_shared_with_the_daemons_is_procfs(raw_guest):
    """A node without job cgroups: the job stays in the daemons' cgroup, which holds the
    startd and other jobs, so the wrapper measures the job's process tree."""
    daemons = tree.make("system.slice/condor.service")
    startd = tree.sleeper(daemons)
    try:
        r = WrapperRun(daemons)
    finally:
        tree.stop(startd)
    assert r.cgroup == _rel(daemons)
    assert (r.summary["method"], r.info["tags"]["measured"]) == ("procfs", "process-tree")
    assert abs(r.cpu - r.truth_cpu) <= cpu_tolerance(r.truth_cpu) + EMULATION, \
        (r.cpu, r.truth_cpu)
    assert tree.below(daemons) == []

