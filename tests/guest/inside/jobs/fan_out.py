"""N processes alive at once, briefly: python3 fan_out.py N WAIT_S [ZOMBIE].

It waits WAIT_S first (so samples taken at the start see it alone), or with ZOMBIE, waits
WAIT_S with an exited child it has not reaped yet (a zombie: still a task to the pids
controller, no longer in cgroup.procs). Then it forks N-1 children that wait on a pipe;
when all exist it closes the pipe and they exit. Single-threaded: the task peak is N.
"""
import os
import sys
import time

n, wait, zombie = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:] == ["zombie"]
if zombie:
    z = os.fork()
    if z == 0:
        os._exit(0)
time.sleep(wait)
if zombie:
    os.waitpid(z, 0)
r, w = os.pipe()
kids = []
for i in range(n - 1):
    p = os.fork()
    if p == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    kids.append(p)
os.close(w)
for p in kids:
    os.waitpid(p, 0)
