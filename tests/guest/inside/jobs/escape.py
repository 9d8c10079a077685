"""The escape workload of the accuracy bench (check.py), as it measures itself: a parent
that burns PARENT s of CPU, and a child that setsid()s and double-forks a daemon that burns
DAEMON s after the parent has gone. Each reports its own getrusage just before it exits
(the parent: itself and its reaped child; the daemon: itself), as the bench's truth does:
what they use after that -- the exit, the interpreter's shutdown -- only a parent sees.
The daemon outlives the parent whatever the scheduling: it waits for the parent's end
(polling, counted in its own figure) before it reports.

    python3 escape.py OUT PARENT DAEMON      writes OUT (the parent's) and OUT.daemon
"""
import json
import os
import resource
import sys
import time

out, parent_s, daemon_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])


def burn(until):
    while time.process_time() < until:
        pass


def own(*who):
    rus = [resource.getrusage(w) for w in who]
    return sum(r.ru_utime + r.ru_stime for r in rus)


main = os.getpid()
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork():
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    try:
        burn(time.process_time() + daemon_s)
        deadline = time.monotonic() + 120
        while os.path.exists(f"/proc/{main}") and time.monotonic() < deadline:
            time.sleep(0.02)   # until jobmon reaped the parent
        with open(out + ".daemon.tmp", "w") as f:
            json.dump({"cpu": own(resource.RUSAGE_SELF)}, f)
        os.replace(out + ".daemon.tmp", out + ".daemon")
    finally:
        os._exit(0)
os.waitpid(pid, 0)
burn(time.process_time() + parent_s)
with open(out, "w") as f:
    json.dump({"cpu": own(resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)}, f)
