"""Ingest at scale: many nodes, one shipper each, into one InfluxDB 1.6.7 on loopback.

    .venv/bin/python benchmarks/ingest_nodes.py [--nodes 100] [--levels 10,25,50,100]
                                                [--jobs 32] [--samples 300]

Each simulated node is a real `jobmon ship --follow` process with its own config, spool
and state (host node-NNN). For each level of k nodes, every one of them is given the same
backlog at once -- `--jobs` jobs of `--samples` samples each, written through the real spool
writer into a staging directory and renamed into the node's spool -- and the benchmark
times the points from that moment until InfluxDB holds all of them (counted with a
query), with influxd's and the shippers' CPU over the same time (from /proc). So it gives
the end-to-end rate, the server's CPU per point, the shippers', and -- across levels --
where the rate stops growing with more nodes. The shippers run all the time, as on a
cluster: their start-up is not in the figures.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from jobmon.metrics import SAMPLE_NAMES  # noqa: E402
from jobmon.sinks.spool import SpoolSink  # noqa: E402

JOBMON = os.path.join(os.path.dirname(sys.executable), "jobmon")
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def backlog(staging, node, jobs, samples, start):
    """The node's jobs, written through the spool writer; [file names]."""
    before = set(os.listdir(staging))
    for j in range(jobs):
        job = {"job": f"{node}-{j}", "host": "x", "user": None, "method": "cgroup-v2",
               "start_time": start + j, "tags": {"request_cpus": "4", "account": "bench"},
               "command": ["./sim"], "interval": 10.0, "scheduler": "slurm"}
        sink = SpoolSink(staging)
        sink.open(job)
        for k in range(samples):
            s = {n: 1000 * k + 7 for n in SAMPLE_NAMES if not n.startswith("gpu")}
            s.update(time=int((start + j + 10 * (k + 1)) * 1e9), elapsed_seconds=10.0 * k,
                     method="cgroup-v2", cpu_cores=3.5, cpu_user_seconds=35.0 * k)
            sink.write(s)
        sink.close({"job": job["job"], "end_time": start + j + 10 * samples, "exit_code": 0,
                    "wall_seconds": 10.0 * samples, "cpu_user_seconds": 35.0 * samples,
                    "samples": samples})
    return sorted(set(os.listdir(staging)) - before)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--levels", default="10,25,50,100")
    ap.add_argument("--jobs", type=int, default=32, help="jobs in each node's backlog")
    ap.add_argument("--samples", type=int, default=300, help="samples of each job")
    a = ap.parse_args()
    from servers import INFLUX_CONF, Influx, free_port
    d = tempfile.mkdtemp(prefix="jobmon-ingest-")
    srv = Influx()
    with open(srv.conf, "w") as f:
        f.write(INFLUX_CONF.format(d=srv.dir, port=srv.port, rpc=free_port(), auth="false")
                .replace('index-version = "inmem"', 'index-version = "tsi1"'))
    srv.start()
    srv.create_db("bench")
    srv.query('CREATE RETENTION POLICY "jobmon_180d" ON "bench" DURATION 180d REPLICATION 1 '
              'SHARD DURATION 1d DEFAULT')
    shippers = []
    try:
        levels = [int(x) for x in a.levels.split(",")]
        for level in levels:
            k = min(level, a.nodes)
            # k shippers, started and idle before their backlog comes
            nodes = []
            for n in range(k):
                nd = os.path.join(d, f"l{level}", f"node-{n:03d}")
                os.makedirs(nd)
                cfg = os.path.join(nd, "jobmon.toml")
                with open(cfg, "w") as f:
                    f.write(f'[store]\nkind = "influxdb"\n[influxdb]\nurl = "{srv.url}"\n'
                            f'database = "bench"\n[spool]\ndir = "{nd}/spool"\n'
                            f'[shipper]\nstate_dir = "{nd}/state"\nhost = "node-{n:03d}"\n'
                            f'cluster = "level{level}"\npoll_seconds = 0.5\nflush_seconds = 0.5\n')
                p = subprocess.Popen([JOBMON, "ship", "--follow", "--config", cfg],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                shippers.append(p)
                nodes.append((nd, p))
            staging = os.path.join(d, f"l{level}", "staging")
            from jobmon.ship.spooldir import prepare_spool
            prepare_spool(staging)
            start = time.time() - 2 * 86400
            t = time.perf_counter()
            files = [backlog(staging, f"l{level}n{n}", a.jobs, a.samples, start + n * 1000)
                     for n in range(k)]
            written = time.perf_counter() - t
            for nd, _p in nodes:        # the shippers made their spools meanwhile
                while not os.path.isdir(os.path.join(nd, "spool")):
                    time.sleep(0.1)
            time.sleep(2)               # all idle
            want = k * a.jobs * a.samples
            cpu0 = {p.pid: cpu_seconds(p.pid) for _nd, p in nodes}
            srv0 = cpu_seconds(srv.proc.pid)
            load0 = os.getloadavg()[0]
            t0 = time.perf_counter()
            for (nd, _p), names in zip(nodes, files):
                for name in names:
                    os.rename(os.path.join(staging, name), os.path.join(nd, "spool", name))
            got = 0
            while got < want:     # each count costs the server too: once a second
                time.sleep(1.0)
                try:
                    rows = srv.rows(f'SELECT count("elapsed_seconds") FROM "jobmon_sample" '
                                    f'WHERE "cluster" = \'level{level}\'', "bench")
                except OSError:   # a saturated server answers late: ask again
                    continue
                got = rows[0]["count"] if rows else 0
            wall = time.perf_counter() - t0
            srv_cpu = cpu_seconds(srv.proc.pid) - srv0
            ship_cpu = sum(cpu_seconds(p.pid) - cpu0[p.pid] for _nd, p in nodes)
            points = want + 2 * k * a.jobs
            print(f"{k} nodes: {points:,} points ({want:,} samples) written by the samplers' "
                  f"spool writer in {written:.0f} s; shipped and stored in {wall:.1f} s: "
                  f"{points / wall:,.0f} points/s end to end; influxd CPU {srv_cpu:.1f} s = "
                  f"{1e6 * srv_cpu / points:.1f} us/point; shippers' CPU {ship_cpu:.1f} s = "
                  f"{1e6 * ship_cpu / points:.1f} us/point; load {load0:.1f} -> "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
            for _nd, p in nodes:
                p.send_signal(signal.SIGTERM)
            for _nd, p in nodes:
                p.wait(60)
            shippers = []
    finally:
        for p in shippers:
            p.kill()
        srv.close()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
