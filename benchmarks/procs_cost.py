#!/usr/bin/env python3
"""CPU cost of the per-process breakdown against one sample, in procfs and cgroup mode.

For a 1-, 100- and 1000-process job (sample_cost.py's idle forked workers) it times, with
process_time() (user + kernel CPU of this process), N probe reads (one sample each) and N
breakdowns (pids from the probe, /proc/<pid>/stat of each), and prints a markdown table
with what the breakdown adds to the sampler at its default rate (every 30 s) for a 1 s and
a 10 s sampling interval. Runs as root for cgroup mode (a transient cgroup).

    sudo .venv/bin/python benchmarks/procs_cost.py [--reads 20] [--sizes 1,100,1000]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sample_cost import kill_tree, start_job  # noqa: E402

from jobmon import cgroups  # noqa: E402
from jobmon.probes import select  # noqa: E402
from jobmon.probes.breakdown import Breakdown  # noqa: E402

EVERY = 30.0


def per_call(fn, n, spaced):
    fn()   # the first call opens files / finds every process
    total = 0.0
    for _ in range(n):
        time.sleep(spaced)
        t0 = time.process_time()
        fn()
        total += time.process_time() - t0
    return total / n * 1e6


def measure(n, mode, reads, spaced):
    cg = None
    if mode.startswith("cgroup"):
        cg = cgroups.create(f"jobmon-bench-{os.getpid()}")
        if cg is None:
            return None
    pid = start_job(n, cg)
    probe = select(cgroups=cg) if cg else select(root=os.getpid())
    try:
        sample = per_call(probe.read, reads, spaced)
        bd = Breakdown(probe.pids, top=5, every=0.0, with_cmdline=True)
        take = per_call(bd.take, reads, spaced)
        return probe.method, sample, take
    finally:
        probe.close()
        kill_tree(pid, cg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reads", type=int, default=20)
    ap.add_argument("--sizes", default="1,100,1000")
    ap.add_argument("--spaced", type=float, default=0.2, metavar="S")
    a = ap.parse_args()
    print("| processes | probe | µs per sample | µs per breakdown | breakdown, % of a core "
          "| sampler + breakdown, 1 s interval | 10 s interval |")
    print("|---|---|---|---|---|---|---|")
    for n in (int(x) for x in a.sizes.split(",")):
        for mode in ("procfs", "cgroup"):
            got = measure(n, mode, a.reads, a.spaced)
            if got is None:
                continue
            method, sample, take = got
            # a breakdown every EVERY seconds, over the samples taken meanwhile
            at1 = take / (sample * EVERY / 1.0) * 100
            at10 = take / (sample * EVERY / 10.0) * 100
            core = take / 1e6 / EVERY * 100
            print(f"| {n} | {method} | {sample:.0f} | {take:.0f} | {core:.3f} % "
                  f"| +{at1:.1f} % | +{at10:.1f} % |", flush=True)


if __name__ == "__main__":
    main()
