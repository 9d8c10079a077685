"""The attach mode's Held probe on a real cgroup that its scheduler removes right after
the job: everything the session asks for after the end (the final figures, the pids
controller's peak) comes from the last look while the cgroup was there, never from a
removed cgroup's files (they answer ENODEV)."""
import os
import subprocess

import pytest

from jobmon.cgroups import JobCgroups
from jobmon.job.session import open_probe
from jobmon.attach.probe import Held
from helpers import cgroup_tree, job_cgroup


@pytest.fixture
def scheduler_cgroup():
    """A job's cgroup as a scheduler makes it, of the host's version (v1's cpuacct, memory,
    pids and blkio, or one v2 cgroup), which the test removes as the scheduler would."""
    if os.geteuid() != 0:
        pytest.skip("needs root (makes cgroups)")
    made = job_cgroup(f"jobmon-held-{os.getpid()}")
    dirs = dict(made.dirs)
    try:
        pids = os.path.join(dirs.get("pids", dirs.get("v2")), "pids.peak")
        yield JobCgroups(made.version, dirs) if os.path.exists(pids) else None
    finally:
        for d in dirs.values():
            if os.path.isdir(d):
                os.rmdir(d)
        made.remove()   # what is left of it (a v1 job's v2 cgroup for its pressure)


@cgroup_tree
def test_pids_peak_held_once_the_cgroup_is_gone(scheduler_cgroup):
    cg = scheduler_cgroup
    if cg is None:
        pytest.skip("no pids.peak here (Linux before 6.1)")
    # three processes in the job at once: its peak
    p = subprocess.Popen(["/bin/sh", "-c", "sleep 0.5 & sleep 0.5 & wait"],
                         preexec_fn=lambda: [open(os.path.join(d, "cgroup.procs"), "w").write("0")
                                             for d in cg.dirs.values()])
    held = Held(open_probe(cg, warn=lambda m: None))
    held.read()
    p.wait()
    held.freeze()                       # the job is over: the final look
    for d in cg.dirs.values():          # the scheduler removes the cgroup
        os.rmdir(d)
    with pytest.raises(OSError):        # what the session would otherwise meet
        held.probe.tasks_peak()
    assert held.tasks_peak() >= 3
    assert held.read()["procs"] == 0 and held.read()["cpu_user_seconds"] >= 0
