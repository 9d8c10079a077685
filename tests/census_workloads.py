"""Jobs that know how many of their processes existed at once, whatever the timing.

    python3 census_workloads.py OUT WORKLOAD [ARG ...]

Each writes OUT/truth.json: {"procs": the most processes that existed at once (forked and
not yet reaped, zombies too)}, true by construction: pipes order every step that matters.
Each process that reaps or burns writes OUT/cpu-PID just before it exits: its getrusage,
with what it reaped (cpu_seconds(OUT) sums them once the job is over).

zombies K SAMPLES   K children, one after the other, burn CPU and exit, left zombies until
                    the monitor has written two more samples to SAMPLES (jsonl)
chain N SETSID SAMPLES    after the first sample, a chain of daemons: each forks an
                    intermediate that (with SETSID 1: setsid()s and) forks the next daemon
                    and exits; the top process exits once the last daemon is born, the
                    daemons then burn CPU and exit
orphans N SETSID SAMPLES  after the first sample, N times: an intermediate forks a daemon
                    and exits, the daemon exits at once
"""
import json
import os
import resource
import sys
import time

BURN = 0.05   # s of CPU each process that burns burns


def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def cpu(who=resource.RUSAGE_SELF):
    ru = resource.getrusage(who)
    return ru.ru_utime + ru.ru_stime


def record(out, reaper=False):
    """This process's CPU (and its reaped children's) into OUT/cpu-PID, just before it exits."""
    used = cpu() + (cpu(resource.RUSAGE_CHILDREN) if reaper else 0.0)
    with open(os.path.join(out, "cpu-%d" % os.getpid()), "w") as f:
        f.write(repr(used))


def lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0


def zombies(out, k, samples):
    """One child at a time burns CPU and exits, left a zombie: never two children alive
    together, yet in the end all k exist with the parent. They are reaped once the monitor
    has written two more samples."""
    kids = []
    for _ in range(int(k)):
        pid = os.fork()
        if pid == 0:
            burn(BURN)
            os._exit(0)
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)   # exited, not reaped
        kids.append(pid)
    seen = lines(samples) + 2   # the second sample from now began after this moment
    while lines(samples) < seen:
        time.sleep(0.01)
    for pid in kids:
        os.waitpid(pid, 0)
    record(out, reaper=True)
    return int(k) + 1


def after_first_sample(samples):
    while lines(samples) < 1:
        time.sleep(0.01)


def chain(out, n, setsid, samples):
    after_first_sample(samples)
    n, born_r, born_w = int(n), *os.pipe()
    hold_r, hold_w = os.pipe()     # EOF once the top process closes its end: all may go

    def intermediate(k, go_r):
        if int(setsid):
            os.setsid()
        if os.fork() == 0:
            daemon(k, go_r)
        os._exit(0)

    def daemon(k, go_r):
        if k == 1:                 # (the next ones are forked by daemons, without it)
            os.close(hold_w)
        os.read(go_r, 1)           # its intermediate is reaped: not alive any more
        if k < n:
            go_r2, go_w2 = os.pipe()
            pid = os.fork()
            if pid == 0:
                intermediate(k + 1, go_r2)
            os.waitpid(pid, 0)
            os.write(go_w2, b"x")
        else:
            os.write(born_w, b"x")   # the top, the daemons, the last intermediate: n + 2
        os.read(hold_r, 1)
        burn(BURN)
        record(out, reaper=True)
        os._exit(0)

    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        intermediate(1, go_r)
    os.waitpid(pid, 0)
    os.write(go_w, b"x")
    os.read(born_r, 1)
    os.close(hold_w)
    record(out, reaper=True)
    return n + 2


def orphans(out, n, setsid, samples):
    """One at a time: an intermediate forks a daemon and exits, the daemon exits at once
    (at its birth lived the top, the intermediate and it: 3); the next comes once the
    monitor, its subreaper, has reaped it."""
    after_first_sample(samples)
    for _ in range(int(n)):
        pid_r, pid_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            if int(setsid):
                os.setsid()
            daemon = os.fork()
            if daemon == 0:
                burn(0.005)
                record(out)
                os._exit(0)
            os.write(pid_w, b"%d" % daemon)
            os._exit(0)
        os.waitpid(pid, 0)
        daemon = int(os.read(pid_r, 32))
        os.close(pid_r)
        os.close(pid_w)
        while True:
            try:
                os.kill(daemon, 0)   # a zombie too, until reaped
            except ProcessLookupError:
                break
            time.sleep(0.001)
    record(out, reaper=True)
    return 3


def cpu_seconds(out):
    used = 0.0
    for name in os.listdir(out):
        if name.startswith("cpu-"):
            with open(os.path.join(out, name)) as f:
                used += float(f.read())
    return used


def main(out, workload, *args):
    procs = {"zombies": zombies, "chain": chain, "orphans": orphans}[workload](out, *args)
    with open(os.path.join(out, "truth.json"), "w") as f:
        json.dump({"procs": procs}, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
