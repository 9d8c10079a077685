"""jobmon.attach.ends on real processes, as Slurm makes them: a step daemon ("stepd", the
tasks' parent) starts a task; the task starts a daemon that escapes (setsid, double fork)
and ends; then what is left is killed, as slurmstepd kills what is left in a step. The
scenario runs in a subreaper of its own, which reaps every process, so the kernel keeps
each one's exit status; the counts come from pidfds, as the Slurm sampler takes them.
"""
import subprocess
import sys
import time

import pytest

SCENARIO = r"""
import ctypes, os, select, signal, sys, time
from jobmon.attach import ends as watch_ends
libc = ctypes.CDLL(None)
libc.prctl(36, 1, 0, 0, 0)                 # PR_SET_CHILD_SUBREAPER: orphans come here
daemon_sleeps, with_status = float(sys.argv[1]), sys.argv[2] == "1"
stepd = os.fork()
if stepd == 0:
    libc.prctl(15, b"stepd", 0, 0, 0)      # PR_SET_NAME: the tasks' parent
    if os.fork() == 0:                     # the task
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:             # the daemon
                time.sleep(daemon_sleeps)
                os._exit(0)
            os._exit(0)
        time.sleep(1.0)
        os._exit(0)
    time.sleep(60)
    os._exit(0)
time.sleep(0.5)
def stat(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return ["X", "0"]
def children(of):   # live ones, as cgroup.procs lists them (no zombies)
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and stat(p)[1] == str(of)
            and stat(p)[0] != "Z"]
step = children(stepd) + [p for p in children(os.getpid()) if p != stepd]
if not with_status:                        # as on a kernel before 6.15
    watch_ends.exit_status = lambda fd: None
ends = watch_ends.EndKills("stepd")
ends.look("batch", step)
ended = False
while not ended:
    p = select.poll()
    for fd in ends.poll_fds():
        p.register(fd, select.POLLIN)
    ended = ends.fired([fd for fd, _ in p.poll(10000)])
ends.look("batch", [x for x in step if stat(x)[0] not in "ZX"])
for pid in step[1:] + [stepd]:             # the scheduler kills what is left
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
print(ends.counts("batch"), ends.totals())
"""


@pytest.mark.parametrize("with_status", [True, False])
@pytest.mark.parametrize("daemon_sleeps, left", [(60, 1), (0.1, 0)])
def test_what_is_left_when_the_task_ends_is_counted_killed(daemon_sleeps, left, with_status):
    r = subprocess.run([sys.executable, "-c", SCENARIO, str(daemon_sleeps),
                        str(int(with_status))], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"({left}, {left}) ({left}, {left})", r.stdout


def test_a_step_whose_tasks_were_not_seen_to_end_has_no_counts():
    from jobmon.attach.ends import EndKills
    ends = EndKills("stepd")
    assert ends.counts("batch") == (None, None) and ends.totals() == (None, None)


# the step's daemon of the test below: "stepd" in its leaf `slurm`, its task in user/task_0
# (the task moves itself there before it runs, as a slurmstepd child does); the task ends,
# nothing is left, and the stepd stays (it then moves itself out of the step: the test
# does that for it, at the moment it picks)
STEPD = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None)
libc.prctl(15, b"stepd", 0, 0, 0)
step = sys.argv[1]
open(os.path.join(step, "slurm", "cgroup.procs"), "w").write("0")
task = os.fork()
if task == 0:
    open(os.path.join(step, "user", "task_0", "cgroup.procs"), "w").write("0")
    time.sleep(1.0)
    os._exit(0)
os.waitpid(task, 0)
time.sleep(60)
"""


@pytest.mark.root
@pytest.mark.cgroup_tree
@pytest.mark.parametrize("moved_at", [1, 2])
def test_the_steps_own_daemon_leaving_its_leaf_at_the_end_is_not_a_leftover(moved_at):
    """On cgroup v2 each step's slurmstepd lives in the step's leaf `slurm`, which the
    sampler leaves out; when the step's tasks have ended, Slurm 22.05's slurmstepd moves
    itself to the cgroup root (cgroup_p_step_destroy) before the step's cgroup goes. A read
    of the step in that instant must not take it for a process left running (it was
    counted "killed at the end" in the v2 guest: 3 of the job's 2). Real processes in a
    real cgroup2 tree; the daemon is moved at the sampler's first or second look at its
    leaf during the read that follows the tasks' end."""
    import os
    import select
    import tempfile
    from jobmon.attach.ends import EndKills
    from jobmon.attach.probe import OwnLeaves
    from jobmon.attach.steps import Steps
    from jobmon.plugins.slurm.cgroup_names import step_name
    from helpers import IS_ROOT
    from jobmon import cgroups
    # the cgroup2 mount: /sys/fs/cgroup/unified on a hybrid host, /sys/fs/cgroup on pure v2
    unified = cgroups.own()[0].get("v2", ("/sys/fs/cgroup/unified",))[0]
    if not IS_ROOT or not os.access(unified, os.W_OK):
        pytest.skip("needs root and a writable cgroup2 mount at " + unified)
    top = tempfile.mkdtemp(prefix="jobmon-test-stepd-", dir=unified)
    job = os.path.join(top, "job_1")
    step = os.path.join(job, "step_batch")
    for d in (os.path.join(step, "slurm"), os.path.join(step, "user", "task_0")):
        os.makedirs(d)

    class Cg:
        version, dirs = 2, {"v2": job}

    class Moving(OwnLeaves):
        """The real leaves; at its `moved_at`-th look once armed, the daemon leaves."""
        armed, looks = None, 0

        def pids(self):
            if self.armed is not None:
                self.looks += 1
                if self.looks == moved_at:
                    with open(os.path.join(top, "cgroup.procs"), "w") as f:
                        f.write(str(self.armed))
                    self.armed = None
            return super().pids()

    stepd = subprocess.Popen([sys.executable, "-c", STEPD, step])
    try:
        own, ends = Moving(Cg, ("slurm",)), EndKills("stepd")
        steps = Steps(Cg, step_name, own, ends)
        deadline = time.monotonic() + 20
        while not ends.steps.get("batch") or not ends.steps["batch"].tasks:
            assert time.monotonic() < deadline and stepd.poll() is None
            steps.update()
            time.sleep(0.05)
        assert own.pids() == {stepd.pid}
        ended = False
        while not ended:
            p = select.poll()
            for fd in ends.poll_fds():
                p.register(fd, select.POLLIN)
            ended = ends.fired([fd for fd, _ in p.poll(10000)])
        steps.look_procs()       # as the sampler does at the tasks' end, then a read
        own.armed = stepd.pid
        steps.update()
        steps.update(final=True)
        assert own.pids() == set() and stepd.poll() is None
        assert ends.counts("batch") == (0, 0), ends.steps["batch"].leftovers
    finally:
        stepd.kill()
        stepd.wait()
        for d in ("step_batch/user/task_0", "step_batch/user", "step_batch/slurm",
                  "step_batch", ""):
            try:
                os.rmdir(os.path.join(job, d))
            except OSError:
                pass
        deadline = time.monotonic() + 5
        while os.path.exists(top) and time.monotonic() < deadline:
            try:
                os.rmdir(top)    # once the killed daemon has left it
            except OSError:
                time.sleep(0.05)
