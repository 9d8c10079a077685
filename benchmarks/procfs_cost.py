#!/usr/bin/env python3
"""procfs mode at 1000 processes: what monitoring costs, and how close its memory is.

cost      a job of 1000 processes held 10 s, sampled every 1 s, under each monitor (jobmon
          procfs mode; jobmon cgroup mode, as root; a psutil walk reading what watchme
          reads; prmon with --prmon PATH; another jobmon with --baseline PATH); the
          monitor's own CPU, from its schedstat (ns) while it is a zombie, and from the
          rusage wait4 gives for it less what its stat says its reaped children used.
sample    CPU of one probe read for both jobmon modes at 1 and 1000 processes (first read,
          then reads 1 s apart as the sampler does): sample_cost.py's measurement.
accuracy  real workloads of forked processes; at every sample, procfs mode's memory (PSS
          re-read within its budget, estimated in between) against every process's PSS
          read just before and just after it (their mean: reading them all takes a while
          and workloads move meanwhile), and against the RSS sum.

    sudo .venv/bin/python benchmarks/procfs_cost.py [--reps 3] [--prmon PATH] [--only cost]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sample_cost  # noqa: E402

from jobmon.job import launcher  # noqa: E402
from jobmon.probes.files import parse_pss, parse_statm, read_once  # noqa: E402
from jobmon.probes.procfs import ProcfsProbe  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
MiB = 1 << 20
# n processes (this one and n - 1 forked children blocked on a pipe), held `hold` seconds
JOB = r"""
import os, sys, time
n, hold = int(sys.argv[1]), float(sys.argv[2])
r, w = os.pipe()
kids = []
for _ in range(n - 1):
    pid = os.fork()
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    kids.append(pid)
os.close(r)
time.sleep(hold)
os.close(w)
for k in kids:
    os.waitpid(k, 0)
"""


# --- cost ----------------------------------------------------------------------------------

def psutil_monitor(interval, cmd):
    """What watchme does, for a whole tree: every interval, each process's CPU times,
    memory with PSS (smaps) and I/O counters through psutil."""
    import psutil
    child = subprocess.Popen(cmd)
    top = psutil.Process(child.pid)
    while child.poll() is None:
        for p in [top] + top.children(recursive=True):
            try:
                with p.oneshot():
                    p.cpu_times()
                    p.memory_full_info()
                    p.io_counters()
            except psutil.Error:
                pass
        time.sleep(interval)


def monitor_cpu(argv, cwd):
    """(own CPU s from schedstat, own CPU s from rusage less reaped children, wall s)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)   # a zombie: its final counters
    with open(f"/proc/{p.pid}/schedstat") as f:
        sched = int(f.read().split()[0]) / 1e9
    with open(f"/proc/{p.pid}/stat") as f:
        stat = f.read()
    children = sum(int(x) for x in stat[stat.rindex(")") + 2:].split()[13:15]) / TICK
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status:
        raise RuntimeError(f"{argv[0]} exited with status {status}")
    return sched, ru.ru_utime + ru.ru_stime - children, wall


def cost(a, out):
    job = [sys.executable, "-c", JOB, str(a.procs), str(a.hold)]
    monitors = {"jobmon procfs": [a.jobmon, "run", "--cgroup=none"]}
    if a.baseline:
        monitors["jobmon procfs, baseline"] = [a.baseline, "run", "--cgroup=none"]
    if os.geteuid() == 0:
        monitors["jobmon cgroup"] = [a.jobmon, "run", "--cgroup=create"]
    if a.prmon:
        monitors["prmon"] = [a.prmon, "--interval", "1", "--filename", "prmon.txt",
                             "--json-summary", "prmon.json", "--"]
    monitors["psutil walk (watchme-like)"] = [sys.executable, os.path.abspath(__file__),
                                              "--psutil-monitor", "--"]
    got = {m: [] for m in monitors}
    for rep in range(a.reps):
        for name, argv in monitors.items():   # interleaved: load changes hit all alike
            tmp = tempfile.mkdtemp(prefix="jobmon-cost-")
            try:
                if name.startswith("jobmon"):
                    argv = argv + ["--interval", "1", "--store", os.path.join(tmp, "db"), "--"]
                load = float(open("/proc/loadavg").read().split()[0])
                sched, ru, wall = monitor_cpu(argv + job, tmp)
                got[name].append((sched, ru, wall, load))
                print(f"{name:28s} rep {rep}: {sched:.3f} s CPU (rusage {ru:.2f}), wall "
                      f"{wall:.1f} s, load {load:.1f}", file=sys.stderr)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    out.append(f"\nMonitor CPU, a {a.procs}-process job held {a.hold:g} s, 1 s interval, "
               f"{a.reps} runs each (median, min-max; load average {min_max_load(got)}):\n")
    out.append("| monitor | CPU s | % of a core | rusage CPU s | wall s |")
    out.append("|---|---|---|---|---|")
    for name, runs in got.items():
        s = [r[0] for r in runs]
        pct = statistics.median(100 * r[0] / r[2] for r in runs)
        out.append(f"| {name} | {statistics.median(s):.3f} ({min(s):.3f}-{max(s):.3f}) | "
                   f"{pct:.2f} | {statistics.median(r[1] for r in runs):.2f} | "
                   f"{statistics.median(r[2] for r in runs):.1f} |")


def min_max_load(got):
    loads = [r[3] for runs in got.values() for r in runs]
    return f"{min(loads):.1f}-{max(loads):.1f}"


# --- sample --------------------------------------------------------------------------------

def sample(a, out):
    modes = ["procfs"] + (["cgroup-v1", "cgroup-v2 (cpu only here)"] if os.geteuid() == 0 else [])
    out.append("\nOne sample, µs of CPU (first read: finds every process; then reads 1 s apart, "
               "as the sampler reads):\n")
    out.append("| processes | probe | first read µs | µs per sample | % of a core at 1 s |")
    out.append("|---|---|---|---|---|")
    for n in (1, 1000):
        for mode in modes:
            load = float(open("/proc/loadavg").read().split()[0])
            got = sample_cost.measure(n, mode, a.sample_reads, spaced=1.0)
            if got is None:
                continue
            first, us = got
            print(f"{n:5d} {mode:26s} first {first:.0f} µs, {us:.1f} µs/sample, load {load:.1f}",
                  file=sys.stderr)
            out.append(f"| {n} | {mode} | {first:.0f} | {us:.1f} | {us / 1e4:.3f} |")


# --- accuracy ------------------------------------------------------------------------------

HEAP = r"""
import os, sys, time
MiB = 1 << 20
def touch(n, v=1):
    b = bytearray(n)
    for i in range(0, n, 4096):
        b[i] = v
    return b
def workers(n, fn):
    kids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            try:
                fn()
            finally:
                os._exit(0)
        kids.append(pid)
    return kids
"""
WORKLOADS = {
    # name: (what it does, code)
    "pool": ("a parent holding 100 MiB forks 500 idle workers, held 5 s once all are up",
             HEAP + r"""
heap = touch(100 * MiB)
r, w = os.pipe()
kids = workers(500, lambda: os.read(r, 1))
time.sleep(5)
os.write(w, b"x" * 500)   # (the workers hold the write end too: no EOF to wake them)
for k in kids: os.waitpid(k, 0)
"""),
    "cow": ("a parent holding 256 MiB forks 32 workers; each writes its copy of 128 MiB, "
            "4 MiB every 0.25 s, then holds it 2 s", HEAP + r"""
heap = touch(256 * MiB)
def work():
    for step in range(32):
        for i in range(step * 4 * MiB, (step + 1) * 4 * MiB, 4096):
            heap[i] = 2
        time.sleep(0.25)
    time.sleep(2)
for k in workers(32, work): os.waitpid(k, 0)
"""),
    "grow": ("100 forked workers each allocate 1 MiB of their own every 0.25 s up to 32 MiB, "
             "then hold it 2 s", HEAP + r"""
heap = touch(32 * MiB)
def work():
    mine = []
    for _ in range(32):
        mine.append(touch(MiB, 3))
        time.sleep(0.25)
    time.sleep(2)
for k in workers(100, work): os.waitpid(k, 0)
"""),
    "shrink": ("a parent holding 100 MiB forks 400 workers; from 2 s on 40 of them exit "
               "every 0.5 s", HEAP + r"""
heap = touch(100 * MiB)
r, w = os.pipe()
kids = workers(400, lambda: os.read(r, 1))
time.sleep(2)
for i in range(0, 400, 40):
    os.write(w, b"x" * 40)
    for _ in range(40): os.wait()
    time.sleep(0.5)
"""),
    "files": ("100 forked workers map one 128 MiB file and read a 16 MiB part more of it "
              "every 0.5 s, then hold it 2 s", HEAP + r"""
import mmap, tempfile
f = tempfile.TemporaryFile()
f.write(os.urandom(MiB) * 128)
f.flush()
def work():
    m = mmap.mmap(f.fileno(), 128 * MiB, prot=mmap.PROT_READ)
    for part in range(8):
        sum(m[i] for i in range(part * 16 * MiB, (part + 1) * 16 * MiB, 4096))
        time.sleep(0.5)
    time.sleep(2)
for k in workers(100, work): os.waitpid(k, 0)
"""),
}


def exact(probe):
    """PSS and RSS of every live process the probe just saw, read now."""
    pss = rss = 0
    for pid in [p.pid for p in probe.procs.values() if p.state not in (b"Z", b"X")]:
        try:
            anon, shmem, file = parse_pss(read_once(b"/proc/%d/smaps_rollup" % pid))[:3]
            rss += parse_statm(read_once(b"/proc/%d/statm" % pid))[0] * PAGE
        except (OSError, ValueError, IndexError):
            continue
        pss += anon + shmem + file
    return pss, rss


def accuracy_one(code):
    """[(procs, estimate, PSS, RSS sum, steady)] at 1 s samples while the workload runs;
    steady: no process came or went while every PSS was read (a sum made while processes
    come and go is no truth to compare with), and more than one is left (a lone process is
    read from its RSS counters: at a job's end that counts pages it still shares with
    children that are exiting)."""
    pid = launcher.spawn([sys.executable, "-c", code])
    probe = ProcfsProbe(os.getpid(), command=pid)
    rows, t = [], time.monotonic() + 0.1
    while True:
        time.sleep(max(t - time.monotonic(), 0))
        t += 1.0
        before = exact(probe)[0]
        n = sum(1 for p in probe.procs.values() if p.state not in (b"Z", b"X"))
        r = probe.read()
        if not r["procs"]:
            break
        after, rss = exact(probe)
        # (the mean only of two sums over the same processes: one taken before new ones
        # were seen would drag the truth down)
        pss = (before + after) // 2 if before and n == r["procs"] else after
        rows.append((r["procs"], r["mem_resident_bytes"] + r["mem_cache_bytes"], pss, rss,
                     1 < n == r["procs"] == len(probe.pids())))   # (next read sees it too)
        reap()
    reap()
    probe.close()
    return rows


def reap():
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def accuracy(a, out):
    launcher.set_subreaper()
    out.append("\nMemory (resident + cache) of procfs mode against every process's PSS read at "
               "the same sample, 1 s interval:\n")
    out.append("| workload | samples (steady) | PSS peak MiB | procfs peak MiB (error) "
               "| RSS-sum peak MiB | worst steady sample | median steady sample |")
    out.append("|---|---|---|---|---|---|---|")
    for name, (what, code) in WORKLOADS.items():
        if a.workloads and name not in a.workloads.split(","):
            continue
        rows = accuracy_one(code)
        errs = [100 * (e - p) / p for _, e, p, _, steady in rows if p and steady] or [0.0]
        pk_e, pk_p = max(r[1] for r in rows), max(r[2] for r in rows)
        print(f"{name}: {json.dumps([(n, e // MiB, p // MiB, s) for n, e, p, _, s in rows])}",
              file=sys.stderr)
        out.append(f"| {name}: {what} | {len(rows)} ({sum(r[4] for r in rows)}) "
                   f"| {pk_p / MiB:.0f} | {pk_e / MiB:.0f} "
                   f"({100 * (pk_e - pk_p) / pk_p:+.1f} %) | {max(r[3] for r in rows) / MiB:.0f} "
                   f"| {max(errs, key=abs):+.1f} % | {statistics.median(map(abs, errs)):.1f} % |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=("cost", "sample", "accuracy"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--procs", type=int, default=1000)
    ap.add_argument("--hold", type=float, default=10.0)
    ap.add_argument("--jobmon", default=shutil.which("jobmon") or
                    os.path.join(os.path.dirname(sys.executable), "jobmon"))
    ap.add_argument("--baseline", metavar="PATH", help="another jobmon to compare with")
    ap.add_argument("--prmon", metavar="PATH", help="a prmon binary to compare with")
    ap.add_argument("--sample-reads", type=int, default=10)
    ap.add_argument("--workloads", help="accuracy: only these (comma-separated)")
    ap.add_argument("--psutil-monitor", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if a.psutil_monitor:
        return psutil_monitor(1.0, a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd)
    out = [f"{os.uname().nodename}: {os.cpu_count()} CPUs, Linux {os.uname().release}"]
    for name, fn in (("cost", cost), ("sample", sample), ("accuracy", accuracy)):
        if a.only in (None, name):
            fn(a, out)
    print("\n".join(out))


if __name__ == "__main__":
    main()
