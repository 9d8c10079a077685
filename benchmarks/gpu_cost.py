#!/usr/bin/env python3
"""What the GPU probe costs: CPU per sample (NVML calls) and the sampler's memory.

On a node with an NVIDIA driver:

    python3 benchmarks/gpu_cost.py [--reads 500]

1. CPU per read() of the procfs probe alone and wrapped in the GPU probe, for this
   process (process_time(): user + kernel CPU, NVML's ioctls included), and per NVML call.
2. Peak RSS of `jobmon run --interval=0.05 -- sleep 3` with NVML loaded and, for
   comparison, with JOBMON_GPU=off.
"""
import argparse
import os
import sys
import tempfile
import time

from jobmon.probes import nvml, select
from peak_rss import peak_rss_mib


def per_read(probe, reads):
    probe.read()
    t = time.process_time()
    for _ in range(reads):
        probe.read()
    return (time.process_time() - t) / reads * 1e6


def per_call(nvml, reads):
    h = nvml.handle(0)
    for name, call in (("utilization", nvml.utilization), ("memory used", nvml.memory_used),
                       ("process list", nvml.processes), ("energy counter", nvml.energy_mj)):
        call(h)
        t = time.process_time()
        for _ in range(reads):
            call(h)
        print(f"  {name:15} {(time.process_time() - t) / reads * 1e6:7.0f} µs CPU per call")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reads", type=int, default=200)
    a = ap.parse_args()
    main_probe = select(root=os.getpid(), include_root=True)
    plain = per_read(main_probe, a.reads)
    gpu = nvml.gpu_probe(main_probe)
    wrapped = per_read(gpu, a.reads)   # the energy counter is read every 10 s only
    print(f"{len(gpu.devices)} GPU(s): procfs probe {plain:.0f} µs per read; with the GPU "
          f"probe {wrapped:.0f} µs (+{wrapped - plain:.0f} µs)")
    per_call(gpu.nvml, a.reads)
    jobmon = os.environ.get("JOBMON") or os.path.join(os.path.dirname(sys.executable), "jobmon")
    argv = [jobmon, "run", "--interval=0.05", "--cgroup=none", "--out=/dev/null",
            "--", "sleep", "3"]
    env = dict(os.environ, JOBMON_STORE=os.path.join(tempfile.mkdtemp(), "store.db"))
    with_nvml = peak_rss_mib(argv, env)
    env["JOBMON_GPU"] = "off"     # the same run, NVML not loaded
    without = peak_rss_mib(argv, env)
    print(f"jobmon run peak RSS: {with_nvml:.1f} MiB with NVML, {without:.1f} MiB without")


if __name__ == "__main__":
    main()
