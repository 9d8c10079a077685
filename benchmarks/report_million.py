"""Reports at a million jobs: `jobmon report --since 30d` over 1,000,000 job summaries
(target <= 5 s) and `jobmon query JOBID` of one job among them (target <= 0.5 s), in the
embedded store and in a real InfluxDB 1.6.7 on loopback, this code side by side with an
earlier revision's (`--baseline`, default the commit before the rollups), each timed as
the whole command a user types, with its CPU time and peak memory (RSS).

    .venv/bin/python benchmarks/report_million.py [--jobs 1000000] [--days 30]
        [--store both|local|influxdb] [--data DIR] [--baseline REV] [--writers 4]

The jobs go in through the real writers: the embedded store's sink (a connection per job;
another connection stays open meanwhile, as running jobs' do, so no job's close
checkpoints the file), or the spool writer (`--writers` processes) and the real shipper,
100,000 jobs a round. Their summaries are what the sampler writes (efficiency figures,
outcome, suspects): 200 users, 20 accounts, 4 partitions, arrays of 100 tasks, HTCondor
clusters, GPU jobs, failures, idle jobs. Each has one sample, and one job in 50,000 has
360 (an hour at 10 s): those are the ones `jobmon query` reads. With --data, the filled
stores are kept there and used again by the next run.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))

from jobmon.summary.efficiency import allocation, figures  # noqa: E402

MiB = 1 << 20
SHOWCASE = 50_000


def job(i, n, days, now):
    """(job, samples, summary) of job i of n, started evenly over `days` before now - 4 h."""
    rnd = random.Random(i)
    array, task = divmod(i, 100)
    arnd = random.Random(array)          # an array's tasks ask alike
    cores = arnd.choice((1, 1, 2, 4, 8))
    mem = cores * arnd.choice((2048, 4096))
    start = now - 4 * 3600 - days * 86400 * (1 - i / n)
    tags = {"request_cpus": str(cores), "request_memory": f"{mem}MB",
            "account": f"acct{array % 20}", "partition": ("short", "long", "gpu", "big")[i % 4]}
    if array % 3:
        job_id, tags["array_job_id"] = f"{100000 + array}_{task}", str(100000 + array)
    else:
        job_id = f"{200000 + array}.{task}"
    gpu = i % 33 == 0
    if gpu:
        tags["request_gpus"] = "1"
    wall = rnd.uniform(60, 4 * 3600)
    busy = cores * min(arnd.uniform(0.05, 0.9) * rnd.uniform(0.7, 1.3), 1.0)
    peak = int(mem * MiB * min(arnd.uniform(0.05, 0.7) * rnd.uniform(0.7, 1.4), 1.0))
    host, user = f"wn{i % 400}", f"user{array % 200}"
    info = {"job": job_id, "host": host, "user": user, "method": "cgroup-v2",
            "start_time": round(start, 6), "tags": tags, "command": ["./fit", str(i)],
            "interval": 10.0, "scheduler": "slurm" if array % 3 else "htcondor"}
    count = 360 if i % SHOWCASE == 0 else 1
    samples = [{"time": int((start + 10 * (k + 1)) * 1e9), "elapsed_seconds": 10.0 * (k + 1),
                "method": "cgroup-v2", "cpu_user_seconds": busy * 10 * (k + 1),
                "cpu_system_seconds": 0.0, "cpu_cores": busy, "mem_resident_bytes": peak,
                "procs": 3, "threads": 5} for k in range(count)]
    fail = rnd.random() < 0.05
    s = dict(info, end_time=round(start + wall, 3), exit_code=1 if fail else 0, signal=None,
             wall_seconds=wall, cpu_user_seconds=busy * wall, cpu_system_seconds=0.0,
             rss_peak_bytes=peak, mem_peak_bytes=peak, samples=count, interval_seconds=10.0,
             procs_max=3, threads_max=5, cpu_idle_samples=count // 2 if i % 97 == 0 else 0,
             mem_rising=int(i % 89 == 0), cut_short=0, reconciled=0)
    if gpu:
        s.update(gpu_count=1, gpu_util_avg_percent=3.0, gpu_idle_samples=count)
    s.update(figures(s, allocation(tags, gpu_count=s.get("gpu_count"))))
    return info, samples, s


def write(sink, info, samples, summary):
    sink.open(info)
    for x in samples:
        sink.write(x)
    sink.close(summary)


def fill_embedded(path, a, now):
    from jobmon.stores.local import LocalStore
    hold = LocalStore(path)           # running jobs' connections: no close checkpoints
    t = time.perf_counter()
    for i in range(a.jobs):
        write(LocalStore(path), *job(i, a.jobs, a.days, now))
    hold.db.close()
    return time.perf_counter() - t


def spool_part(spool, part, parts, lo, hi, n, days, now):
    from jobmon.sinks.spool import SpoolSink
    for i in range(lo + part, hi, parts):
        write(SpoolSink(spool), *job(i, n, days, now))


def fill_influx(srv, d, a, now):
    from jobmon import config
    from jobmon.ship import shipper
    from jobmon.ship.spooldir import prepare_spool
    from jobmon.ship.transports.v1 import V1Transport
    cfgfile = os.path.join(d, "jobmon.toml")
    with open(cfgfile, "w") as f:
        f.write(f'[store]\nkind = "influxdb"\n[influxdb]\nurl = "{srv.url}"\n'
                f'database = "bench"\n[spool]\ndir = "{d}/spool"\nmax_bytes = {1 << 40}\n'
                f'[shipper]\nstate_dir = "{d}/state"\nbatch_bytes = {16 << 20}\n'
                f'batch_points = 20000\n')
    cfg = config.load(cfgfile)
    prepare_spool(cfg["spool"]["dir"])
    took = {"spool": 0.0, "ship": 0.0}
    for lo in range(0, a.jobs, 100_000):
        t = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", (
            f"import sys; sys.path.insert(0, {HERE!r}); import report_million as r; "
            f"r.spool_part({cfg['spool']['dir']!r}, {p}, {a.writers}, {lo}, "
            f"{min(lo + 100_000, a.jobs)}, {a.jobs}, {a.days}, {now})")])
            for p in range(a.writers)]
        assert all(p.wait() == 0 for p in procs)
        took["spool"] += time.perf_counter() - t
        t = time.perf_counter()
        s = shipper.Shipper(cfg, V1Transport(srv.url, "bench", gzip=True))
        assert s.once(600), "the shipper did not drain the spool"
        s.close()
        took["ship"] += time.perf_counter() - t
        print(f"  {min(lo + 100_000, a.jobs):,} jobs in", flush=True)
    return cfgfile, took


def timed(argv, env, timeout=3600, memory=None):
    """(wall s, CPU s, peak RSS MiB, stdout, stderr) of one command; None when it ran out
    of time or of `memory` (bytes of address space). Through GNU time: a child forked from
    this (large) process would count this one's memory as its own."""
    cap = ["prlimit", f"--as={memory}"] if memory else []
    with tempfile.NamedTemporaryFile("r") as usage:
        t = time.perf_counter()
        try:
            r = subprocess.run(["/usr/bin/time", "-o", usage.name, "-f", "%M %U %S"] + cap +
                               argv, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        wall = time.perf_counter() - t
        if r.returncode != 0 and memory and "MemoryError" in r.stderr:
            return None
        assert r.returncode == 0, (argv, r.stderr[-2000:])
        rss, user, system = usage.read().split()[-3:]
    return wall, float(user) + float(system), int(rss) / 1024, r.stdout, r.stderr


def load():
    return os.getloadavg()[0]


def baseline(rev, d):
    """An importable copy of revision `rev`'s package (core/ -> jobmon, plugins/)."""
    pkg = os.path.join(d, "baseline")
    if not os.path.isdir(pkg):
        src = os.path.join(d, "baseline-src")
        os.makedirs(src)
        arch = subprocess.run(["git", "-C", REPO, "archive", rev, "core", "plugins"],
                              check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", src], input=arch, check=True)
        os.makedirs(pkg)
        shutil.copytree(os.path.join(src, "core"), os.path.join(pkg, "jobmon"))
        shutil.copytree(os.path.join(src, "plugins"), os.path.join(pkg, "jobmon", "plugins"))
    return pkg


def measure(name, store_args, env, a, old_pkg, first=()):
    jobmon = [sys.executable, "-m", "jobmon"]
    old_env = dict(env, PYTHONPATH=old_pkg)
    show = [job(i, a.jobs, a.days, 0)[0]["job"] for i in range(0, a.jobs, SHOWCASE)][:5]
    for code, e in (("this", env), ("baseline", old_env)):
        q = [timed(jobmon + ["query", "--json", j] + store_args, e) for j in show]
        walls = sorted(x[0] for x in q)
        print(f"{name}, {code}: jobmon query JOBID median {walls[len(walls) // 2]:.3f} s "
              f"(max {walls[-1]:.3f} s), CPU {sorted(x[1] for x in q)[len(q) // 2]:.3f} s, "
              f"RSS {max(x[2] for x in q):.0f} MiB (load {load():.1f})", flush=True)
    for argv in first:       # what makes the rollups (timed: a cron job's or the first report's)
        w, c, m, _o, err = timed(jobmon + argv + store_args, env)
        print(f"{name}, this: {' '.join(argv)}: {w:.1f} s, CPU {c:.1f} s, RSS {m:.0f} MiB "
              f"(load {load():.1f}) {err.strip()[-120:]}", flush=True)
    for window in a.windows.split(","):
        # from the start of an hour, for both: this code takes --since back to it
        days = float(window.rstrip("d"))
        since = time.strftime("%Y-%m-%dT%H:00:00+00:00", time.gmtime(time.time() - days * 86400))
        reports = {}
        for code, e, times, cap in (("this", env, 3, None),
                                    ("baseline", old_env, 1, a.baseline_memory)):
            argv = jobmon + ["report", f"--since={since}", "--json"] + store_args
            got = [timed(argv, e, a.timeout, cap) for _ in range(times)]
            if None in got:
                print(f"{name}, {code}: jobmon report --since={window} did not end within "
                      f"{a.timeout:.0f} s and {cap or 'any'} bytes (load {load():.1f})",
                      flush=True)
                continue
            walls = sorted(x[0] for x in got)
            reports[code] = json.loads(got[0][3])
            print(f"{name}, {code}: jobmon report --since={window} median "
                  f"{walls[len(walls) // 2]:.2f} s (max {walls[-1]:.2f} s), CPU "
                  f"{sorted(x[1] for x in got)[len(got) // 2]:.2f} s, RSS "
                  f"{max(x[2] for x in got):.0f} MiB, {reports[code]['jobs']:,} job runs "
                  f"(load {load():.1f})", flush=True)
        if len(reports) == 2:
            new, old = reports["this"], reports["baseline"]
            keys = ("jobs", "goodput", "badput", "provisioned_core_hours",
                    "idle_canonical_core_hours")
            same = all(abs((new["total"][k] or 0) - (old["total"][k] or 0)) <= 1e-6 * max(
                1, abs(old["total"][k] or 0)) for k in keys) and \
                {g["key"]: g["jobs"] for g in new["groups"]} == \
                {g["key"]: g["jobs"] for g in old["groups"]}
            print(f"{name}: this and baseline give the same totals and groups over "
                  f"{window}: {same}", flush=True)


def day_rollups(srv, env, old_pkg, now, a):
    """`jobmon rollup` of one whole day by each code, on days of their own (their rollups
    deleted first): what making the rollups costs, before the month's."""
    jobmon = [sys.executable, "-m", "jobmon"]
    first = int(now - 4 * 3600 - a.days * 86400) // 86400 * 86400 + 86400
    for k, (code, e) in enumerate((("this", env), ("baseline", dict(env, PYTHONPATH=old_pkg)))):
        day = first + (5 + k) * 86400
        srv.query(f'DELETE FROM "jobmon_rollup" WHERE time >= {day * 10**9} AND '
                  f'time < {(day + 86400) * 10**9}', "bench")
        w, c, m, _o, err = timed(jobmon + ["rollup", f"--since={iso(day)}",
                                           f"--until={iso(day + 86400)}"], e)
        print(f"influxdb, {code}: jobmon rollup of one day ({iso(day)[:10]}): {w:.1f} s, CPU "
              f"{c:.1f} s, RSS {m:.0f} MiB (load {load():.1f}) {err.strip()[-60:]}", flush=True)


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(t))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--days", type=float, default=30)
    ap.add_argument("--store", choices=("both", "local", "influxdb"), default="both")
    ap.add_argument("--data", help="keep the filled stores here (and use them again)")
    ap.add_argument("--baseline", default="HEAD~1", help="the earlier code (a git revision)")
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=1800, help="for one report command")
    ap.add_argument("--windows", default="30d,3d", help="the reports' ranges, days")
    ap.add_argument("--baseline-memory", type=int, default=8 << 30,
                    help="the baseline report's address space, bytes (it holds every record)")
    a = ap.parse_args()
    d = a.data or tempfile.mkdtemp(prefix="jobmon-bench-")
    os.makedirs(d, exist_ok=True)
    old_pkg = baseline(a.baseline, d)
    env = dict(os.environ)
    env.pop("JOBMON_STORE", None)
    env.pop("JOBMON_CONFIG", None)
    stamp = os.path.join(d, "filled.json")
    filled = json.load(open(stamp)) if os.path.exists(stamp) else {}
    now = filled.get("now") or time.time()
    try:
        if a.store in ("both", "local"):
            path = os.path.join(d, "jobmon.db")
            if "local" not in filled:
                took = fill_embedded(path, a, now)
                filled.update(local=took, now=now)
                json.dump(filled, open(stamp, "w"))
            print(f"embedded: {a.jobs:,} jobs written through the store's sink in "
                  f"{filled['local']:.0f} s; file {os.path.getsize(path) / 1e6:.0f} MB",
                  flush=True)
            measure("embedded", [f"--store={path}"], env, a, old_pkg,
                    first=[["report", "--since=30d", "--json"]])
        if a.store in ("both", "influxdb"):
            influx(a, d, env, old_pkg, filled, stamp, now)
    finally:
        if not a.data:
            shutil.rmtree(d, ignore_errors=True)


def influx(a, d, env, old_pkg, filled, stamp, now):
    import re
    from servers import INFLUX_CONF, Influx, free_port
    srv = Influx()
    shutil.rmtree(srv.dir)
    srv.dir = os.path.join(d, "influxdb")       # kept with --data, on a new port each run
    os.makedirs(srv.dir, exist_ok=True)
    srv.conf = os.path.join(srv.dir, "influxdb.conf")
    with open(srv.conf, "w") as f:              # tsi1, as docs/scale.md says for large sites
        f.write(INFLUX_CONF.format(d=srv.dir, port=srv.port, rpc=free_port(), auth="false")
                .replace('index-version = "inmem"', 'index-version = "tsi1"'))
    srv.start(timeout=600)          # a million series' index takes a while to open
    try:
        cfgfile = os.path.join(d, "jobmon.toml")
        if "influxdb" not in filled:     # 1-day shards, as deploy/create-influxdb.sh makes
            srv.create_db("bench")
            srv.query('CREATE RETENTION POLICY "jobmon_180d" ON "bench" DURATION 180d '
                      'REPLICATION 1 SHARD DURATION 1d DEFAULT')
            cfgfile, took = fill_influx(srv, d, a, now)
            filled.update(influxdb=took, now=now)
            json.dump(filled, open(stamp, "w"))
        with open(cfgfile) as f:      # the server's port is new on each start
            text = f.read()
        with open(cfgfile, "w") as f:
            f.write(re.sub(r'url = "[^"]*"', f'url = "{srv.url}"', text))
        t = filled["influxdb"]
        print(f"influxdb: {a.jobs:,} jobs spooled in {t['spool']:.0f} s ({a.writers} writers), "
              f"shipped in {t['ship']:.0f} s", flush=True)
        env = dict(env, JOBMON_CONFIG=cfgfile)
        day_rollups(srv, env, old_pkg, now, a)
        measure("influxdb", [], env, a, old_pkg, first=[["rollup", "--since=31d"]])
    finally:
        srv.stop()
        if not a.data:
            srv.close()


if __name__ == "__main__":
    main()
