"""A job that knows its own cost: reaper python3 cpu_tree.py OUT SPIKE_BYTES REAPER [SAMPLES].

CPU truth comes from parents, whose wait4 includes a child's exit (a process's own getrusage
does not). Every Python process here is reaped by a parent that counts it: the children by
the worker W, W by this main process, main by the reaper that runs it (tests/guest/inside/
reaper.py, which writes the total to stdout); the escaped daemon, which only jobmon reaps,
is a reaper too, running the daemon's work as its child and writing to OUT.daemon. Only the
two reapers' own exits are left out. Writes OUT (JSON: the spike, the cgroups). Given
SAMPLES (jobmon's `--out` file), the spike waits until a first sample is written there.
"""
import json
import os
import sys
import time

out, SPIKE, REAPER = sys.argv[1], int(sys.argv[2]), sys.argv[3]
SAMPLES = sys.argv[4] if len(sys.argv) > 4 else None
DAEMON_WORK = ("import os, time\ntime.sleep(0.5)\nt = time.process_time()\n"
               "while time.process_time() - t < 0.3:\n    pass\nos._exit(0)\n")


def burn(sec):
    t = time.process_time()
    while time.process_time() - t < sec:
        pass


def first_sample_written(path):
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                if f.readline().endswith("\n"):
                    return
        except FileNotFoundError:
            pass
        time.sleep(0.01)
    raise SystemExit(f"no sample in {path} after 120 s")


def vm(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))


def work(report):
    # short-lived children, each far shorter than a sampling interval
    for i in range(10):
        p = os.fork()
        if p == 0:
            burn(0.02)
            os._exit(0)
        os.waitpid(p, 0)
    # a memory spike in a child, held 0.3 s; it reports its high-water mark
    if SAMPLES:
        first_sample_written(SAMPLES)
    r, w = os.pipe()
    p = os.fork()
    if p == 0:
        b = bytearray(SPIKE)
        for i in range(0, SPIKE, 4096):
            b[i] = 1
        os.write(w, b"%d" % vm("VmHWM:"))
        time.sleep(0.3)
        os._exit(0)
    os.close(w)
    os.write(report, os.read(r, 64))
    os.waitpid(p, 0)
    # a double-forked setsid daemon that escapes the tree and outlives the command
    p = os.fork()
    if p == 0:
        os.setsid()
        if os.fork() == 0:   # the daemon: a reaper whose child sleeps, then burns
            fd = os.open(out + ".daemon", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(fd, 1)
            os.dup2(null, 2)
            os.execv(REAPER, [REAPER, sys.executable, "-c", DAEMON_WORK])
        os._exit(0)
    os.waitpid(p, 0)
    burn(0.3)


r, w = os.pipe()
p = os.fork()
if p == 0:
    os.close(r)
    work(w)
    os._exit(0)
os.close(w)
spike_hwm = int(os.read(r, 64))
os.waitpid(p, 0)
with open(f"/proc/{os.getppid()}/stat") as f:   # the reaper's parent: jobmon
    jobmon = int(f.read().rpartition(")")[2].split()[1])
with open("/proc/self/cgroup") as f, open(f"/proc/{jobmon}/cgroup") as g:
    info = {"spike": SPIKE, "spike_hwm": spike_hwm, "cgroup": f.read(), "jobmon_cgroup": g.read()}
with open(out + ".tmp", "w") as f:
    json.dump(info, f)
os.rename(out + ".tmp", out)
os._exit(0)
