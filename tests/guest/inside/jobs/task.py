"""One task of a scheduler's job: python3 task.py CGROUP BURN_S ALLOC_BYTES.

Moves itself into CGROUP first (a scheduler's stepd places its tasks so), burns BURN_S of
CPU, holds ALLOC_BYTES touched, prints "ready CPU" with the CPU it used before the move
(its start-up: its parent's wait4 sees it, the cgroup does not), and leaves (os._exit)
when its stdin closes. Its parent (the test) reaps it and so knows its exact CPU.
"""
import os
import resource
import sys
import time

cgroup, burn, size = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
ru = resource.getrusage(resource.RUSAGE_SELF)
with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
    f.write("0")
t = time.process_time()
while time.process_time() - t < burn:
    pass
b = bytearray(size)
for i in range(0, size, 4096):
    b[i] = 1
print("ready", ru.ru_utime + ru.ru_stime, flush=True)
sys.stdin.read()
os._exit(0)
