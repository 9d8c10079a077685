#!/usr/bin/env python3
"""How long jobmon's PSS reads stall a job with a few GB mapped (procfs mode).

Reading /proc/<pid>/smaps_rollup walks the process's page tables, ~10-25 ms per GB, holding
its mmap lock: meanwhile the process cannot map or unmap memory (and, on kernels without
per-VMA locks, its page faults queue behind such a waiting writer). The job here maps and
touches GB of anonymous memory in its main process, forks an idle child (so that jobmon
takes its PSS path, not the lone-process one), and times itself in a thread: every
millisecond it maps 64 KiB, touches its 16 pages and unmaps them. As root that thread runs
SCHED_FIFO, so that what it waits for is the lock, not a CPU on a busy machine. The job
runs without a monitor and under each jobmon given (`jobmon run --cgroup=none --interval
1`), interleaved; per run: the worst iteration, the 99.9th percentile, iterations over
2 ms, and the monitor's CPU.

    python3 benchmarks/pss_stall.py [--gb 3] [--seconds 20] [--reps 3] JOBMON [JOBMON ...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

JOB = r"""
import json, mmap, os, sys, threading, time
size, seconds = int(float(sys.argv[1]) * (1 << 30)), float(sys.argv[2])
heap = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
heap[::4096] = b"\1" * len(range(0, size, 4096))     # resident, page by page
r, w = os.pipe()
child = os.fork()
if child == 0:
    os.read(r, 1)
    os._exit(0)
lat, stop = [], time.monotonic() + seconds
def faults():
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))   # this thread only
    except OSError:
        pass
    while time.monotonic() < stop:
        time.sleep(0.001)
        t = time.perf_counter()
        m = mmap.mmap(-1, 1 << 16)
        m[::4096] = b"\2" * 16
        m.close()
        lat.append(time.perf_counter() - t)
th = threading.Thread(target=faults)
th.start()
th.join()
os.write(w, b"x")
os.waitpid(child, 0)
lat.sort()
print(json.dumps({"n": len(lat), "median_ms": lat[len(lat) // 2] * 1e3,
                  "p999_ms": lat[int(len(lat) * 0.999)] * 1e3, "max_ms": lat[-1] * 1e3,
                  "over_2ms": sum(1 for x in lat if x > 0.002)}))
"""


def run(argv, cwd):
    """(the job's latency figures, the monitor's own CPU s or None)."""
    p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    cpu = None
    if argv[0] != sys.executable:
        with open(f"/proc/{p.pid}/schedstat") as f:
            cpu = int(f.read().split()[0]) / 1e9
    out = p.communicate()[0]
    return json.loads(out.decode().strip().splitlines()[-1]), cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jobmon", nargs="+", help="jobmon executables to compare")
    ap.add_argument("--gb", type=float, default=3.0)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    job = [sys.executable, "-c", JOB, str(a.gb), str(a.seconds)]
    monitors = {"no monitor": []}
    for j in a.jobmon:
        monitors[j] = [j, "run", "--cgroup=none", "--interval", "1", "--store", "none", "--"]
    got = {m: [] for m in monitors}
    for rep in range(a.reps):
        for name, prefix in monitors.items():
            load = float(open("/proc/loadavg").read().split()[0])
            with tempfile.TemporaryDirectory() as tmp:
                fig, cpu = run(prefix + job, tmp)
            got[name].append((fig, cpu, load))
            print(f"{name}: rep {rep}: {fig}, monitor CPU {cpu}, load {load:.1f}", file=sys.stderr)
    print(f"\nA job with {a.gb:g} GiB resident in one process, {a.seconds:g} s, {a.reps} runs each "
          "(median of the runs; worst of the runs in brackets):\n")
    print("| monitor | worst iteration ms | 99.9th percentile ms | iterations over 2 ms | "
          "monitor CPU s | load |")
    print("|---|---|---|---|---|---|")
    for name, runs in got.items():
        figs = [r[0] for r in runs]
        cpus = [r[1] for r in runs if r[1] is not None]
        loads = [r[2] for r in runs]
        cpu = f"{statistics.median(cpus):.3f}" if cpus else "-"
        print(f"| {name} | {statistics.median(f['max_ms'] for f in figs):.1f} "
              f"({max(f['max_ms'] for f in figs):.1f}) | "
              f"{statistics.median(f['p999_ms'] for f in figs):.2f} | "
              f"{statistics.median(f['over_2ms'] for f in figs):g} "
              f"({max(f['over_2ms'] for f in figs)}) | {cpu} | "
              f"{min(loads):.1f}-{max(loads):.1f} |")


if __name__ == "__main__":
    main()
