"""Real workloads that wait for something, for the pressure and advice tests: CPU hogs
beside a job, a job spinning on more processes than it gets CPUs for."""
import contextlib
import os
import subprocess

# N processes of the job spin for S seconds each (the job's first is one of them)
SPIN = r"""
import os, sys, time
n, secs = int(sys.argv[1]), float(sys.argv[2])
kids = []
for _ in range(n - 1):
    pid = os.fork()
    if pid == 0:
        t = time.time()
        while time.time() - t < secs:
            pass
        os._exit(0)
    kids.append(pid)
t = time.time()
while time.time() - t < secs:
    pass
for k in kids:
    os.waitpid(k, 0)
"""


@contextlib.contextmanager
def cpu_hogs(n=None):
    """n processes spinning outside the job (default: two per CPU of this machine), so the
    job's processes wait for a CPU most of the time however busy the machine already is."""
    n = n or 2 * (os.cpu_count() or 1)
    hogs = [subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"],
                             stdin=subprocess.DEVNULL) for _ in range(n)]
    try:
        yield hogs
    finally:
        for h in hogs:
            h.kill()
        for h in hogs:
            h.wait()
