#!/usr/bin/env python3
"""CPU cost of one sample: cgroup v1/v2 probes and the procfs probe, against a psutil tree walk.

Runs as root (transient cgroups). For a 1-process and a 1000-process job it times the first
read of each probe (it finds the processes: the procfs probe opens and reads every one) and
then N reads with process_time() (user + kernel CPU of this process: the kernel work of
generating memory.stat or smaps_rollup is charged to the reader), back to back or --spaced S
seconds apart (as a sampler reads: the procfs probe then also spends its PSS budget), and
prints a markdown table. "cgroup-v1 (a scheduler's)" reads the same cgroup as one jobmon did
not make: no v2 cgroup beside it for PSI, so its threads' run-queue wait instead. With an
older build first on PYTHONPATH it measures that build. Where the package has it, it also
times the sampler's look for network file systems (probes/netfs.py: the job's pids, then
each one's working directory and open files against the mount table), made at the first
sample, 5 s later and every 60 s.

    sudo .venv/bin/python benchmarks/sample_cost.py [--reads 200] [--spaced 1]
"""
import argparse
import os
import signal
import sys
import time

from jobmon import cgroups
from jobmon.job import launcher
from jobmon.probes import select

CHILD = r"""
import os, sys, time
n = int(sys.argv[1])
for _ in range(n - 1):
    if os.fork() == 0:
        time.sleep(3600); os._exit(0)
time.sleep(3600)
"""


def start_job(nprocs, cg):
    launcher.set_subreaper()
    pid = launcher.spawn([sys.executable, "-c", CHILD, str(nprocs)], cg)
    try:
        wait_for(nprocs, cg)
    except BaseException:
        kill_tree(pid, cg)
        raise
    return pid


def wait_for(nprocs, cg):
    deadline = time.time() + 300
    while time.time() < deadline:  # wait until every process exists
        probe = select(cgroups=cg) if cg else select(root=os.getpid())
        n = probe.read()["procs"]
        probe.close()
        if n >= nprocs:
            return
        time.sleep(0.2)
    raise RuntimeError(f"only {n} of {nprocs} processes started")


def cost(read, n, spaced=0.0):
    """(µs of the first read, µs per read of the n after it)."""
    t0 = time.process_time()
    read()  # the first read opens files (and, for procfs, reads every process once)
    first = time.process_time() - t0
    total = 0.0
    for _ in range(n):
        time.sleep(spaced)
        t0 = time.process_time()
        read()
        total += time.process_time() - t0
    return first * 1e6, total / n * 1e6


def look_cost(probe, n):
    """(µs of the first look, which reads the mount table; µs per look of the n after it)."""
    try:
        from jobmon.probes.netfs import NetFs
    except ImportError:          # a build without it
        return None
    look = NetFs()
    return cost(lambda: look.look(probe.pids(), 0.0), n)


def measure(n, mode, reads, spaced=0.0):
    """(first read µs, µs per read, look costs or None) of `mode` on an n-process job; None
    if not here."""
    cg = None
    if mode.startswith("cgroup"):
        cg = cgroups.create(f"jobmon-bench-{os.getpid()}", prefer=int(mode[8]))
        if cg is None:
            return None
    pid = start_job(n, cg)
    probe = None
    try:
        if mode == "psutil walk":
            read = psutil_walk(pid)
        else:
            job = cg
            if "scheduler" in mode:   # a cgroup jobmon did not make: no v2 cgroup beside it
                job = cgroups.JobCgroups(1, cg.dirs)   # (PSI): its threads' run-queue wait
            probe = select(cgroups=job) if cg else select(root=os.getpid())
            read = probe.read
        return cost(read, reads, spaced) + (look_cost(probe, 20) if probe else None,)
    finally:
        if probe is not None:
            probe.close()
        kill_tree(pid, cg)


def psutil_walk(pid):
    import psutil
    root = psutil.Process(pid)

    def read():
        tot = 0
        for p in [root] + root.children(recursive=True):
            try:
                with p.oneshot():
                    c = p.cpu_times()
                    m = p.memory_full_info()  # PSS, as jobmon's procfs probe reads
                    io = p.io_counters()
                    tot += c.user + m.pss + io.read_bytes
            except psutil.Error:
                pass
        return tot
    return read


def kill_tree(pid, cg):
    pids = select(cgroups=cg).pids() if cg else select(root=os.getpid()).pids()
    for p in pids + [pid]:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    if cg:
        cg.remove()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reads", type=int, default=200)
    ap.add_argument("--sizes", default="1,1000")
    ap.add_argument("--spaced", type=float, default=0.0, metavar="S",
                    help="seconds between reads (default 0: back to back)")
    ap.add_argument("--modes", default="cgroup-v1,cgroup-v1 (a scheduler's),"
                    "cgroup-v2 (cpu only here),procfs,psutil walk")
    a = ap.parse_args()
    rows = []
    for n in (int(x) for x in a.sizes.split(",")):
        for mode in a.modes.split(","):
            reads = a.reads if n < 100 or mode.startswith("cgroup") else max(a.reads // 10, 10)
            got = measure(n, mode, reads, a.spaced)
            if got is None:
                continue
            first, us, looks = got
            rows.append((n, mode, first, us, us / n, looks))
            print(f"{n:5d} processes  {mode:26s} first {first:10.1f} µs  {us:10.1f} µs/sample  "
                  f"{us / n:8.2f} µs/process", file=sys.stderr)
    print("| processes | probe | first read µs | µs per sample | µs per process |")
    print("|---|---|---|---|---|")
    for n, mode, first, us, per, _ in rows:
        print(f"| {n} | {mode} | {first:.0f} | {us:.1f} | {per:.2f} |")
    if any(r[5] for r in rows):
        print("\n| processes | probe | first look µs | µs per look | µs per sample at 1 s |")
        print("|---|---|---|---|---|")
        for n, mode, _, _, _, looks in rows:
            if looks:   # one look a minute after the first two
                print(f"| {n} | {mode} | {looks[0]:.0f} | {looks[1]:.1f} | "
                      f"{looks[1] / 60:.2f} |")


if __name__ == "__main__":
    main()
