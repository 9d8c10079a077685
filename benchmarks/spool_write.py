"""Cost of the per-job sampler's spool write, and the sampler's memory with the spool.

    .venv/bin/python benchmarks/spool_write.py

1. CPU µs (process_time; wall beside it) per SpoolSink.write() of a full sample (encode +
   one O_APPEND write()), 100,000 samples.
2. Peak RSS of a real `jobmon run` whose config selects InfluxDB (so it writes the spool),
   sampling every 50 ms for 3 s.
"""
import os
import sys
import tempfile
import time

from jobmon.metrics import SAMPLE_NAMES
from jobmon.ship.spooldir import prepare_spool
from jobmon.sinks.spool import SpoolSink
from peak_rss import peak_rss_mib


def per_sample(spool, gpu, n=100_000):
    sink = SpoolSink(spool)
    sink.open({"job": "bench", "host": "h", "user": None, "method": "cgroup-v2",
               "start_time": time.time(), "tags": {"partition": "x"}, "command": ["x"],
               "interval": 1.0, "scheduler": "local"})
    sample = {"time": time.time_ns(), "elapsed_seconds": 1.0, "method": "cgroup-v2"}
    sample.update({n: (1.25 if n.startswith("cpu") else 123456789) for n in SAMPLE_NAMES
                   if gpu or not n.startswith("gpu_")})
    t, cpu = time.perf_counter(), time.process_time()
    for k in range(n):
        sample["time"] += 1
        sink.write(sample)
    us = (time.process_time() - cpu) / n * 1e6
    wall = (time.perf_counter() - t) / n * 1e6
    sink.close({"end_time": time.time()})
    size = os.path.getsize(sink.path) / (n + 2)
    print(f"spool write, {'GPU' if gpu else 'CPU'} node sample: {us:.1f} µs of CPU per sample "
          f"({wall:.1f} µs wall; {size:.0f} bytes of line protocol each)")


def sampler_rss(d, spool):
    cfg = os.path.join(d, "jobmon.toml")
    with open(cfg, "w") as f:
        f.write(f'[store]\nkind = "influxdb"\n[spool]\ndir = "{spool}"\n')
    env = dict(os.environ, JOBMON_CONFIG=cfg)
    jobmon = os.path.join(os.path.dirname(sys.executable), "jobmon")
    peak = peak_rss_mib([jobmon, "run", "--interval=0.05", "--", "sleep", "3"], env)
    files = [n for n in os.listdir(spool) if n.endswith(".lp")]
    print(f"jobmon run (spool sink, 50 ms interval): peak RSS {peak:.1f} MiB; "
          f"spool files: {len(files)} (the two above and this run's)")


if __name__ == "__main__":
    d = tempfile.mkdtemp(prefix="jobmon-spool-bench-")
    spool = os.path.join(d, "spool")
    prepare_spool(spool)
    per_sample(spool, gpu=False)
    per_sample(spool, gpu=True)
    sampler_rss(d, spool)
