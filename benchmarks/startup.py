#!/usr/bin/env python3
"""Start-up latency: from invoking `jobmon run` to the command running.

The command is `date +%s%N`, exec'd directly: it prints the wall clock at its own start.
The same measurement without jobmon gives the baseline (fork + exec of date itself).

    .venv/bin/python benchmarks/startup.py [--reps 30] [--jobmon PATH]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def once(argv):
    t0 = time.time_ns()
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return (int(out.strip()) - t0) / 1e6  # ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--jobmon", default=shutil.which("jobmon") or
                    os.path.join(os.path.dirname(sys.executable), "jobmon"))
    a = ap.parse_args()
    date = shutil.which("date")
    store = os.path.join(tempfile.mkdtemp(), "startup.db")
    rows = []
    for name, argv in (("bare", [date, "+%s%N"]),
                       ("jobmon run (embedded store)",
                        [a.jobmon, "run", "--store", store, "--", date, "+%s%N"]),
                       ("jobmon run --store none", [a.jobmon, "run", "--store", "none", "--", date, "+%s%N"])):
        once(argv)  # warm the page cache
        ms = sorted(once(argv) for _ in range(a.reps))
        rows.append((name, statistics.median(ms), ms[int(0.9 * (len(ms) - 1))]))
    print(f"uid {os.getuid()}, {a.reps} runs each\n")
    print("| invocation | median ms to command start | p90 ms |")
    print("|---|---|---|")
    for name, med, p90 in rows:
        print(f"| {name} | {med:.1f} | {p90:.1f} |")


if __name__ == "__main__":
    main()
