"""Reports at scale: `jobmon query JOBID` in a store of 10k jobs / 1M points (target <= 0.5 s)
and `jobmon report` over those 10k jobs (target <= 5 s), in the embedded store and in a real
InfluxDB 1.6.7 (tests/servers.py), each timed as the whole command a user types.

    .venv/bin/python benchmarks/report_scale.py [--jobs 10000] [--samples 100]
                                                [--store both|local|influxdb]

Jobs go in through the real writers: the embedded store's sink (one connection per job, as
jobs do), or the spool writer and the real shipper. Their summaries are varied (50 users,
8 accounts, 3 partitions, arrays of 100 tasks, requests, failures, suspects), so the report
does all its work: every job's efficiency is computed from its totals and tags.
"""
import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from jobmon import config  # noqa: E402
from jobmon.metrics import SAMPLE_NAMES  # noqa: E402
from jobmon.sinks.spool import SpoolSink  # noqa: E402
from jobmon.stores.local import LocalStore  # noqa: E402

JOBMON = os.path.join(os.path.dirname(sys.executable), "jobmon")
GiB, MiB = 1 << 30, 1 << 20


def jobs(n, samples, start):
    """(job, samples, summary) of n varied jobs, one every 30 s from `start`."""
    rnd = random.Random(7)
    for j in range(n):
        array, task = divmod(j, 100)
        if task == 0:   # an array's tasks ask alike and use alike, with a spread
            cores = rnd.choice((1, 1, 2, 4, 8))
            mem = cores * rnd.choice((2048, 4096))
            use_cpu, use_mem = rnd.uniform(0.05, 0.9), rnd.uniform(0.05, 0.7)
        busy = cores * min(use_cpu * rnd.uniform(0.7, 1.3), 1.0)
        peak = int(mem * MiB * min(use_mem * rnd.uniform(0.7, 1.4), 1.0))
        t0 = start + 30 * j
        wall = samples * 10.0
        tags = {"array_job_id": str(1000 + array), "request_cpus": str(cores),
                "request_memory": f"{mem}MB", "account": f"acct{array % 8}",
                "partition": ("short", "long", "gpu")[j % 3]}
        job = {"job": f"{1000 + array}_{task}", "host": f"wn{j % 40}",
               "user": f"user{array % 50}", "method": "cgroup-v2", "start_time": t0, "tags": tags,
               "command": ["./fit", "--seed", str(j)], "interval": 10.0, "scheduler": "slurm"}
        smp = []
        for k in range(samples):
            s = {n: 1000 * k + 17 for n in SAMPLE_NAMES}
            s.update(time=int((t0 + k * 10) * 1e9), elapsed_seconds=k * 10.0, method="cgroup-v2",
                     cpu_user_seconds=busy * k * 10.0, cpu_system_seconds=0.0,
                     cpu_cores=busy, mem_resident_bytes=peak * (k + 1) // samples)
            smp.append(s)
        fail = rnd.random() < 0.05
        summary = {"job": job["job"], "host": job["host"], "method": "cgroup-v2",
                   "start_time": t0, "end_time": t0 + wall, "exit_code": 1 if fail else 0,
                   "signal": None, "wall_seconds": wall, "cpu_user_seconds": busy * wall,
                   "cpu_system_seconds": 0.0, "rss_peak_bytes": peak, "samples": samples,
                   "interval_seconds": 10.0, "procs_max": 3, "threads_max": 5,
                   "cpu_idle_samples": samples // 2 if j % 97 == 0 else 0,
                   "mem_rising": 1 if j % 89 == 0 else 0, "tags": tags}
        yield job, smp, summary


def fill(sink_for, runs):
    """Seconds to write `runs` ((job, samples, summary) each) through their own sinks."""
    t = time.perf_counter()
    for job, smp, summary in runs:
        sink = sink_for()
        sink.open(job)
        for s in smp:
            sink.write(s)
        sink.close(summary)
    return time.perf_counter() - t


def timed(argv, env, repeat, check):
    """Sorted wall times of `repeat` runs of the command; its CPU times go to CPU[argv[1]]
    (the VM is shared: CPU time is what load does not inflate)."""
    times = []
    for _ in range(repeat):
        c = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        r = subprocess.run(argv, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        c2 = resource.getrusage(resource.RUSAGE_CHILDREN)
        CPU.setdefault(argv[1], []).append(c2.ru_utime + c2.ru_stime - c.ru_utime - c.ru_stime)
        assert r.returncode == 0, r.stderr
        check(r.stdout)
    return sorted(times)


CPU = {}


def median_cpu(command):
    xs = sorted(CPU.pop(command, []))
    return xs[len(xs) // 2] if xs else float("nan")


def measure(name, store_args, env, a, inproc_store):
    def one_job(out):
        assert out.count('"elapsed_seconds"') == a.samples, out[:500]

    def all_jobs(out):
        assert f"{a.jobs:,} job runs" in out, out[:500]
    q = []
    for j in (0, a.jobs // 2, a.jobs - 1, 1234 % a.jobs, 77 % a.jobs):
        array, task = divmod(j, 100)
        q += timed([JOBMON, "query", "--json", f"{1000 + array}_{task}"] + store_args, env, 1,
                   one_job)
    q.sort()
    q_cpu = median_cpu("query")
    rep = timed([JOBMON, "report", "--since=30d"] + store_args, env, 3, all_jobs)
    rep_cpu = median_cpu("report")
    repj = timed([JOBMON, "report", "--since=30d", "--json"] + store_args, env, 3,
                 lambda out: None)
    # where the report's time goes, in this process
    from jobmon.report import aggregate, rightsize
    from jobmon.report.job_efficiency import INPUTS
    t = time.perf_counter()
    records = inproc_store().summaries(time.time() - 30 * 86400, None, fields=INPUTS)
    t_read = time.perf_counter() - t
    t = time.perf_counter()
    aggregate.aggregate(records, "user")
    rightsize.rightsize(records)
    t_agg = time.perf_counter() - t
    assert len(records) == a.jobs
    print(f"{name}: jobmon query JOBID median {q[2]:.3f} s (max {q[-1]:.3f} s, CPU "
          f"{q_cpu:.3f} s); jobmon report median {rep[1]:.3f} s (max {rep[-1]:.3f} s, CPU "
          f"{rep_cpu:.3f} s), --json {repj[1]:.3f} s; "
          f"in process: read {len(records)} summaries {t_read:.3f} s, aggregate + "
          f"right-size {t_agg:.3f} s")
    base = timed([JOBMON, "--version"], env, 3, lambda out: None)
    print(f"{name}: (the command's start-up alone, jobmon --version: {base[1]:.3f} s, CPU "
          f"{median_cpu('--version'):.3f} s; load average {os.getloadavg()[0]:.1f})")


def settle(pid, quiet=0.05, most=600):
    """Seconds until process `pid` used under `quiet` of a core over 10 s (at most `most`)."""
    tick = os.sysconf("SC_CLK_TCK")

    def cpu():
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick
    t0 = time.monotonic()
    while time.monotonic() - t0 < most:
        c = cpu()
        time.sleep(10)
        if cpu() - c < quiet * 10:
            break
    return time.monotonic() - t0


def embedded(a, d, start):
    path = os.path.join(d, "jobmon.db")
    took = fill(lambda: LocalStore(path), jobs(a.jobs, a.samples, start))
    print(f"embedded: wrote {a.jobs} jobs x {a.samples} samples through the store's sink in "
          f"{took:.0f} s; file {os.path.getsize(path) / 1e6:.0f} MB")
    env = dict(os.environ)
    env.pop("JOBMON_STORE", None)
    measure("embedded", [f"--store={path}"], env, a, lambda: LocalStore(path))


def spool_and_ship(srv, d, runs):
    """A site config for database "bench" on `srv`; `runs` written through the spool writer
    and sent by the real shipper. Returns the config's path."""
    from jobmon.ship import shipper
    from jobmon.ship.spooldir import prepare_spool
    from jobmon.ship.transports.v1 import V1Transport
    srv.create_db("bench")
    cfgfile = os.path.join(d, "jobmon.toml")
    with open(cfgfile, "w") as f:
        f.write(f'[store]\nkind = "influxdb"\n[influxdb]\nurl = "{srv.url}"\n'
                f'database = "bench"\n[spool]\ndir = "{d}/spool"\nmax_bytes = {1 << 40}\n'
                f'[shipper]\nstate_dir = "{d}/state"\nbatch_bytes = {64 << 20}\n')
    os.chmod(cfgfile, 0o644)
    cfg = config.load(cfgfile)
    prepare_spool(cfg["spool"]["dir"])
    took = fill(lambda: SpoolSink(cfg["spool"]["dir"]), runs)
    t = time.perf_counter()
    s = shipper.Shipper(cfg, V1Transport(srv.url, "bench", gzip=True))
    s.once(120)
    s.close()
    print(f"influxdb: spooled the jobs in {took:.0f} s, shipped "
          f"{s.state.counters['shipped_points']} points in {time.perf_counter() - t:.0f} s")
    return cfgfile


def influxdb(a, d, start):
    from servers import Influx
    from jobmon.stores.influx import InfluxStore
    srv = Influx()
    # a shard is fully compacted once written to and cold for compact-full-write-cold-duration
    # (default 4 h: last week's data is); here 30 s, so the "compacted" figures come soon
    with open(srv.conf) as f:
        conf = f.read().replace("[data]\n", '[data]\n  compact-full-write-cold-duration = "30s"\n', 1)
    with open(srv.conf, "w") as f:
        f.write(conf)
    srv.start()
    try:
        cfgfile = spool_and_ship(srv, d, jobs(a.jobs, a.samples, start))
        env = dict(os.environ, JOBMON_CONFIG=cfgfile)
        env.pop("JOBMON_STORE", None)
        store = lambda: InfluxStore(srv.url, "bench")   # noqa: E731
        tsm = sum(n.endswith(".tsm") for _d, _s, names in os.walk(srv.dir) for n in names)
        print(f"influxdb: {tsm} TSM files")
        measure("influxdb, just shipped", [], env, a, store)
        # a job point's start and end went in different batches, so in different TSM files
        # until a full compaction merges them: measure again once influxd compacted and idles
        time.sleep(40)
        waited = 40 + settle(srv.proc.pid)
        tsm = sum(n.endswith(".tsm") for _d, _s, names in os.walk(srv.dir) for n in names)
        print(f"influxdb: compacted and idle after {waited:.0f} s more ({tsm} TSM files)")
        measure("influxdb, compacted", [], env, a, store)
    finally:
        srv.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--store", choices=("both", "local", "influxdb"), default="both")
    a = ap.parse_args()
    start = time.time() - 7 * 86400
    for kind, fn in (("local", embedded), ("influxdb", influxdb)):
        if a.store in ("both", kind):
            d = tempfile.mkdtemp(prefix="jobmon-bench-")
            try:
                fn(a, d, start)
            finally:
                shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
