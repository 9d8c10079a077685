"""jobmon.attach.ends on real processes, as Slurm makes them: a step daemon ("stepd", the
tasks' parent) starts a task; the task starts a daemon that escapes (setsid, double fork)
and ends; then what is left is killed, as slurmstepd kills what is left in a step. The
scenario runs in a subreaper of its own, which reaps every process, so the kernel keeps
each one's exit status; the counts come from pidfds, as the Slurm sampler takes them.
"""
import subprocess
import sys

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
