"""Shipper throughput into a real InfluxDB 1.6.7 on loopback, and `jobmon query` of one
job out of a database holding 10k jobs / 1M points.

    .venv/bin/python benchmarks/influx_ship.py [--jobs 10000] [--samples 100]

Starts its own influxd (tests/servers.py), spools jobs x samples points through the real
spool writer, ships them with the real shipper in this process (one core), and reports
points/s and where the time went; then times `jobmon query` (the whole command).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from servers import Influx  # noqa: E402
from jobmon import config  # noqa: E402
from jobmon.ship import shipper  # noqa: E402
from jobmon.ship.spooldir import prepare_spool  # noqa: E402
from jobmon.metrics import SAMPLE_NAMES  # noqa: E402
from jobmon.sinks.spool import SpoolSink  # noqa: E402
from jobmon.ship.transports.v1 import V1Transport  # noqa: E402


def spool_jobs(spool, jobs, samples):
    start = time.time() - 86400
    for j in range(jobs):
        job = {"job": f"bench-{j}", "host": "h", "user": None, "method": "cgroup-v2",
               "start_time": start + j, "tags": {"partition": "long"}, "command": ["x"],
               "interval": 10.0, "scheduler": "slurm"}
        s = SpoolSink(spool)
        s.open(job)
        t0 = int((start + j) * 1e9)
        for k in range(samples):
            sample = {"time": t0 + k * 10**10, "elapsed_seconds": k * 10.0, "method": "cgroup-v2"}
            sample.update({n: (k * 1.5 if n.startswith("cpu") else 1000 * k + 17)
                           for n in SAMPLE_NAMES})
            s.write(sample)
        s.close({"end_time": start + j + samples * 10, "exit_code": 0, "samples": samples,
                 "wall_seconds": samples * 10.0})


def timed(obj, name, bucket):
    fn = getattr(obj, name)

    def wrapper(*a, **kw):
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            bucket[name] += time.perf_counter() - t
    setattr(obj, name, wrapper)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--no-gzip", dest="gzip", action="store_false")
    ap.add_argument("--senders", type=int, default=2, help="batches in flight at once")
    ap.add_argument("--cpu", type=int, default=None,
                    help="pin the shipper to this one CPU (influxd keeps the others)")
    ap.add_argument("--no-query", dest="query", action="store_false")
    a = ap.parse_args()
    srv = Influx().start()
    if a.cpu is not None:   # the shipper gets one CPU, influxd (every thread) the others
        others = os.sched_getaffinity(0) - {a.cpu}
        for tid in os.listdir(f"/proc/{srv.proc.pid}/task"):
            os.sched_setaffinity(int(tid), others)
        os.sched_setaffinity(0, {a.cpu})
    srv.create_db("bench")
    d = tempfile.mkdtemp(prefix="jobmon-bench-")
    cfgfile = os.path.join(d, "jobmon.toml")
    with open(cfgfile, "w") as f:
        f.write(f'[store]\nkind = "influxdb"\n[influxdb]\nurl = "{srv.url}"\ndatabase = "bench"\n'
                f'[spool]\ndir = "{d}/spool"\nmax_bytes = {1 << 40}\n'
                f'[shipper]\nstate_dir = "{d}/state"\nbatch_points = {a.batch}\n'
                f'batch_bytes = {64 << 20}\nsenders = {a.senders}\n')
    cfg = config.load(cfgfile)
    prepare_spool(cfg["spool"]["dir"])
    t = time.perf_counter()
    spool_jobs(cfg["spool"]["dir"], a.jobs, a.samples)
    points = a.jobs * (a.samples + 2)
    print(f"spooled {points} points ({a.jobs} jobs) in {time.perf_counter() - t:.1f} s")
    spool_bytes = sum(os.path.getsize(os.path.join(cfg['spool']['dir'], n))
                      for n in os.listdir(cfg["spool"]["dir"]) if n.endswith(".lp"))

    transport = V1Transport(srv.url, "bench", gzip=a.gzip)
    s = shipper.Shipper(cfg, transport)
    where = defaultdict(float)
    for obj, names in ((s.lines, ("read", "stamp")), (s.spool, ("finish", "scan", "enforce_limit")),
                       (s, ("collect",))):
        for name in names:
            timed(obj, name, where)
    timed(s.state, "save", where)
    # split the transport: compression vs waiting for the server
    import zlib
    real_compressobj = zlib.compressobj

    def compressobj(*args):
        c = real_compressobj(*args)

        class Timed:
            def compress(self, b):
                t = time.perf_counter()
                r = c.compress(b)
                where["gzip"] += time.perf_counter() - t
                return r

            def flush(self):
                return c.flush()
        return Timed()
    zlib.compressobj = compressobj
    timed(transport, "send", where)
    c0, t0 = time.process_time(), time.perf_counter()
    s.once(60)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    zlib.compressobj = real_compressobj
    where["read"] -= where["stamp"]   # read() calls stamp()
    where["send"] -= where["gzip"]
    where["collect"] -= where["save"]  # collect() saves the state after each acknowledgement
    shipped = s.state.counters["shipped_points"]
    print(f"shipped {shipped} points, {spool_bytes / 1e6:.0f} MB of line protocol, batches "
          f"of {a.batch}, {a.senders} in flight, gzip {a.gzip}, shipper on CPUs "
          f"{sorted(os.sched_getaffinity(0))} of {os.cpu_count()}: {wall:.2f} s wall, {cpu:.2f} s shipper CPU")
    print(f"throughput: {shipped / wall:,.0f} points/s wall; {shipped / cpu:,.0f} points per "
          f"CPU-second of the shipper")
    for k, v in sorted(where.items(), key=lambda kv: -kv[1]):
        label = {"send": "sender thread: HTTP /write incl. server ingest",
                 "gzip": "sender thread: gzip level 1",
                 "collect": "main thread: waiting for the sender",
                 "read": "main thread: read + validate", "stamp": "main thread: set tags",
                 "save": "main thread: state fsync"}.get(k, k)
        print(f"  {label:45} {v:7.2f} s  {100 * v / wall:5.1f} %")
    s.close()
    if a.query:
        query(a, cfg, cfgfile, srv)
    srv.close()


def query(a, cfg, cfgfile, srv):
    # --- jobmon query of one job out of the whole store ---
    env = dict(os.environ, JOBMON_CONFIG=cfgfile)
    env.pop("JOBMON_STORE", None)
    rows = srv.rows('SELECT count("elapsed_seconds") FROM jobmon_sample', "bench")
    print(f"store holds {rows[0]['count']} samples of {a.jobs} jobs")
    jobmon = os.path.join(os.path.dirname(sys.executable), "jobmon")
    times = []
    for j in (0, a.jobs // 2, a.jobs - 1, 1234 % a.jobs, 77 % a.jobs):
        t = time.perf_counter()
        r = subprocess.run([jobmon, "query", "--json", f"bench-{j}"], env=env,
                           capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        assert r.returncode == 0, r.stderr
        assert r.stdout.count('"elapsed_seconds"') == a.samples, r.stdout[:2000]
    from jobmon.stores.influx import InfluxStore
    st = InfluxStore.from_config(cfg)
    t = time.perf_counter()
    for j in range(20):
        assert len(st.job(f"bench-{(j * 7) % a.jobs}").samples) == a.samples
    lookup = (time.perf_counter() - t) / 20
    print(f"jobmon query JOBID (whole command): median {sorted(times)[2]:.3f} s, max "
          f"{max(times):.3f} s; the InfluxQL lookups alone: {lookup * 1000:.1f} ms")


if __name__ == "__main__":
    main()
