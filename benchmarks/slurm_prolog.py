"""jobmon's Slurm Prolog and per-job sampler on a real cluster (tests/slurm): the Prolog's
wall time as slurmd runs it (median of N jobs), and what a sampler costs beside its job
(resident memory, CPU as a share of a core).

    sudo .venv/bin/python benchmarks/slurm_prolog.py [--jobs 20] [--long 60]

The Prolog is timed by a wrapper around the installed one (the exact file slurm.conf
names), with `date +%s%N` before and after: the figure includes one fork and exec of
`date`, so it overstates the Prolog by about a millisecond. Each sampler's own CPU comes
from its end-of-job record (monitor_cpu_seconds: its whole process, start-up included);
its peak resident memory from /proc/<pid>/status (VmHWM) read just before its job ends.
Prints a markdown table and the machine's load.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from slurm import Cluster  # noqa: E402
from slurm_site import JobmonSite, samplers  # noqa: E402

TIMED = """#!/bin/sh
t0=$(/bin/date +%s%N)
{prolog}
t1=$(/bin/date +%s%N)
echo "$SLURM_JOB_ID $((t1 - t0))" >> {log}
exit 0
"""


def hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None


def sampler_cost(site, c, seconds, interval):
    """One job of `seconds` (mostly asleep, as a job's sampler sees most jobs) sampled
    every `interval` s: the sampler's peak RSS and its CPU share over the job."""
    site.write_config(interval=interval)
    jid = c.submit(f"/usr/bin/python3 -c 'x = bytearray(50 << 20)\nimport time\n"
                   f"time.sleep({seconds})'\n")
    c.wait_running(jid)
    time.sleep(max(seconds - 2, 1))
    pids = [p for p, _ in samplers(c)]
    rss = max((hwm_kib(p) or 0) for p in pids) if pids else None
    c.wait_done(jid, timeout=seconds + 120)
    [rec] = site.wait_record(jid)
    s = rec.summary
    return {"interval": interval, "job_seconds": s["wall_seconds"], "samples": s["samples"],
            "sampler_cpu_seconds": s["monitor_cpu_seconds"],
            "sampler_cpu_share": s["monitor_cpu_seconds"] / s["wall_seconds"],
            "sampler_rss_kib": rss}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--long", type=float, default=60.0, help="seconds of the cost jobs")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    site = JobmonSite(None)
    log = os.path.join(site.dir, "prolog-times")
    timed = os.path.join(site.dir, "timed-prolog")
    with open(timed, "w") as f:
        f.write(TIMED.format(prolog=site.prolog, log=log))
    os.chmod(timed, 0o755)
    c = Cluster(prologs=[timed], epilogs=[site.epilog]).start()
    try:
        c.submit("true\n")        # warm: the first job of a cluster pays slurmd's own set-up
        time.sleep(3)
        open(log, "w").close()
        for _ in range(a.jobs):   # one at a time: each Prolog alone
            jid = c.submit("/bin/sleep 0.2\n")
            c.wait_done(jid)
        with open(log) as f:
            ms = sorted(int(l.split()[1]) / 1e6 for l in f if l.strip())
        cost = [sampler_cost(site, c, a.long, iv) for iv in (10.0, 1.0)]
    finally:
        c.stop()
        site.close()
    load = os.getloadavg()
    res = {"prolog_ms": ms, "prolog_median_ms": statistics.median(ms),
           "prolog_max_ms": max(ms), "cost": cost, "load": load, "cpus": os.cpu_count()}
    print(f"| Prolog wall time, median of {len(ms)} jobs | {res['prolog_median_ms']:.1f} ms "
          f"(min {ms[0]:.1f}, max {ms[-1]:.1f}) |")
    for r in cost:
        print(f"| sampler, {r['job_seconds']:.0f} s job, interval {r['interval']:g} s | "
              f"RSS {r['sampler_rss_kib'] / 1024:.1f} MiB, CPU {r['sampler_cpu_seconds']:.3f} s "
              f"= {100 * r['sampler_cpu_share']:.2f} % of a core ({r['samples']} samples) |")
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {res['cpus']} CPUs")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
