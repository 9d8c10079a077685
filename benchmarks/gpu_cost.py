#!/usr/bin/env python3
"""What GPU metrics cost: the job's side (per sample, and the sampler's memory) and the node
GPU reader's CPU per refresh.

    sudo .venv/bin/python benchmarks/gpu_cost.py [--reads 2000] [--gpus 8] [--jobmon PATH]

--jobmon: the `jobmon` whose `run` is measured for memory (default: next to this Python);
a regular `pip install .` rather than the editable one of .venv (which adds ~1.3 MiB).

Everywhere (as root: the reader's directory must be root's for jobs to trust it), with a
recorded NVML (tests/fixtures/gpu/h100x2.json, repeated to --gpus GPUs, 4 processes each):
1. the node reader's CPU per refresh (process_time: user + kernel) on the recorded source;
2. CPU per read() of the procfs probe alone and wrapped in the node-reader probe, with
   the published file unchanged between reads and with a new file at every read;
3. peak RSS of `jobmon run --interval=0.05 -- sleep 3` with the node reader's GPU metrics
   (JOBMON_GPU=node, a real reader publishing the recording) and without (JOBMON_GPU=off).
On a node with an NVIDIA driver, also: the in-process NVML probe (JOBMON_GPU=nvml) per
read, per NVML call, and its sampler RSS; the reader's CPU per refresh on the real NVML.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from jobmon.node.gpus import GpuSource
from jobmon.node.reader import NodeReader
from jobmon.node.recorded import RecordedSource
from jobmon.probes import select
from jobmon.probes.gpu_node import node_probe
from peak_rss import peak_rss_mib

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "tests", "fixtures", "gpu", "h100x2.json")


def per_read(probe, reads, between=None):
    probe.read()
    spent = 0.0
    for _ in range(reads):
        if between:
            between()
        t = time.process_time()
        probe.read()
        spent += time.process_time() - t
    return spent / reads * 1e6


def recording(path, gpus):
    """gpus H100s with 4 GPU processes each (live pids: this process and its parents)."""
    with open(FIXTURE) as f:
        rec = json.load(f)
    pids = [os.getpid(), os.getppid(), 1, 2]
    devices = []
    for i in range(gpus):
        d = dict(rec["devices"][i % 2])
        d["uuid"] = d["uuid"][:-4] + f"{i:04x}"
        d["minor"] = i
        d["processes"] = [[p, (1 << 30) + p, 0xFFFFFFFF, 0xFFFFFFFF] for p in pids]
        devices.append(d)
    rec["devices"] = devices
    with open(path, "w") as f:
        json.dump(rec, f)


def reader_cpu(source, directory, refreshes):
    src = GpuSource(source, 1.0)
    reader = NodeReader([src], directory, period=1.0)
    try:
        reader.refresh()
        t = time.process_time()
        for _ in range(refreshes):
            reader.refresh()
        cpu = (time.process_time() - t) / refreshes
        size = os.path.getsize(reader.path(src))
    finally:
        reader.close()
    return cpu, size


class JobOnTheGpu:
    """A main probe that costs nothing and whose job is this process (which is on every
    GPU of the recording): what is left of a read is the node-reader probe's own cost."""
    method = "none"

    def read(self, final=False):
        return {}

    def pids(self):
        return [os.getpid()]

    def close(self):
        pass


def job_side(directory, dev, reads):
    """CPU per read() of the node-reader probe itself; then, for scale, what the main
    probe's read() and pids() cost (pids() is asked for when a process is on the job's
    GPUs, as the in-process probe does)."""
    for visible in ("0", None):
        env = {"JOBMON_GPU_DEV": dev}       # every GPU the recording has is usable
        if visible is not None:
            env["CUDA_VISIBLE_DEVICES"] = visible
        probe = node_probe(JobOnTheGpu(), directory, print, env)
        same = per_read(probe, reads)
        new = per_read(probe, reads // 2, between=lambda: setattr(probe.published, "key", None))
        print(f"job side, {len(probe.devices)} GPU(s) of the job: the node-reader probe "
              f"{same:.1f} µs per read when the file is unchanged, {new:.1f} µs when it is new")
    try:
        main_probe = select(root=os.getpid(), include_root=True)
        read = per_read(main_probe, reads)
        main_probe.read = lambda final=False: main_probe.pids()
        print(f"for scale, the procfs probe of this process: read() {read:.1f} µs, "
              f"pids() {per_read(main_probe, reads):.1f} µs")
    except Exception as e:          # a main probe that fails is not this benchmark's subject
        print(f"for scale: the procfs probe failed ({type(e).__name__}: {e})")


def sampler_rss(jobmon, env, label):
    argv = [jobmon, "run", "--interval=0.05", "--cgroup=none", "--out=/dev/null", "--",
            "sleep", "3"]
    env = dict(os.environ, JOBMON_STORE=os.path.join(tempfile.mkdtemp(), "store.db"), **env)
    mib = peak_rss_mib(argv, env)
    print(f"jobmon run peak RSS, {label}: {mib:.1f} MiB")
    return mib


def nvml_part(reads, base, jobmon):
    from jobmon.probes import nvml
    main_probe = select(root=os.getpid(), include_root=True)
    plain = per_read(main_probe, reads)
    gpu = nvml.gpu_probe(main_probe)
    wrapped = per_read(gpu, reads)   # the energy counter is read every 10 s only
    print(f"in-process NVML, {len(gpu.devices)} GPU(s): procfs probe {plain:.0f} µs per read; "
          f"with the NVML probe {wrapped:.0f} µs (+{wrapped - plain:.0f} µs)")
    h = gpu.nvml.handle(0)
    for name, call in (("utilization", gpu.nvml.utilization), ("memory", gpu.nvml.memory),
                       ("process list", gpu.nvml.process_list),
                       ("energy counter", gpu.nvml.energy_mj)):
        call(h)
        t = time.process_time()
        for _ in range(reads):
            call(h)
        print(f"  {name:15} {(time.process_time() - t) / reads * 1e6:7.0f} µs CPU per call")
    cpu, size = reader_cpu(nvml.Nvml(), os.path.join(base, "real"), 50)
    print(f"node reader on the real NVML: {cpu * 1e3:.2f} ms CPU per refresh, "
          f"{size} bytes published")
    sampler_rss(jobmon, {"JOBMON_GPU": "nvml"}, "NVML in the sampler (JOBMON_GPU=nvml)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reads", type=int, default=2000)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--jobmon", default=os.environ.get("JOBMON") or
                    os.path.join(os.path.dirname(sys.executable), "jobmon"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: jobs trust only a reader directory in root's directories")
    base = tempfile.mkdtemp(prefix="jobmon-gpu-bench-")
    os.chmod(base, 0o755)
    # the reader publishes in tmpfs, as in /run on a systemd node (rename on a disk
    # file system costs ~250 µs of journal work more)
    pub = tempfile.mkdtemp(prefix="jobmon-gpu-bench-",
                           dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    os.chmod(pub, 0o755)
    try:
        dev = os.path.join(base, "dev")
        os.mkdir(dev)
        for i in range(a.gpus):
            os.mknod(os.path.join(dev, f"nvidia{i}"), 0o666 | 0o020000, os.makedev(195, i))
            os.chmod(os.path.join(dev, f"nvidia{i}"), 0o666)
        rec = os.path.join(base, "recording.json")
        for n in sorted({2, a.gpus}):
            recording(rec, n)
            cpu, size = reader_cpu(RecordedSource(rec), os.path.join(pub, f"r{n}"), 500)
            print(f"node reader, recorded NVML, {n} GPUs x 4 processes: {cpu * 1e6:.0f} µs "
                  f"CPU per refresh (NVML's own calls excluded), {size} bytes published")
        recording(rec, a.gpus)
        directory = os.path.join(pub, "gpu")
        reader = subprocess.Popen([sys.executable, "-m", "jobmon", "gpu-reader",
                                   f"--dir={directory}", f"--recorded={rec}", "--period=1"],
                                  stderr=subprocess.DEVNULL)
        try:
            while not os.path.exists(os.path.join(directory, "gpus.json")):
                time.sleep(0.05)
            job_side(directory, dev, a.reads)
            env = {"JOBMON_GPU_DIR": directory, "JOBMON_GPU_DEV": dev}
            sampler_rss(a.jobmon, dict(env, JOBMON_GPU="node"),
                        f"node reader's GPU metrics ({a.gpus} GPUs)")
            sampler_rss(a.jobmon, {"JOBMON_GPU": "off"}, "no GPU metrics (JOBMON_GPU=off)")
        finally:
            reader.terminate()
            reader.wait()
        if os.path.exists("/dev/nvidiactl"):
            nvml_part(a.reads // 10, pub, a.jobmon)
    finally:
        shutil.rmtree(base)
        shutil.rmtree(pub)


if __name__ == "__main__":
    main()
