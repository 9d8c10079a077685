#!/usr/bin/env python3
"""What the node reader costs, on the node and in each job.

    sudo .venv/bin/python benchmarks/node_cost.py [--jobs 32] [--refreshes 200]
         [--reads 2000] [--jobmon PATH]

As root (the reader loads a BPF program; jobs trust only a root-made directory), on a node
with a cgroup v2 hierarchy (pure, or a hybrid host's):
1. the BPF program's cost per packet, timed by the kernel (BPF_PROG_TEST_RUN) on a packet
   of a socket in a cgroup 1 to 6 levels below the root (a Slurm task is 5-6 down);
2. the node reader at --jobs jobs: a recorded NVML of 8 H100s with the jobs' processes on
   them (4 a GPU), a recorded two-socket RAPL tree (tests/fixtures/powercap/xeon_2s), and
   the network counters of --jobs cgroups two levels deep, each with traffic: its CPU per
   refresh (process_time of the refreshes, in this process) and, as a real `jobmon
   node-reader` process at a 1 s period, its CPU per second over 30 s after its start-up
   (schedstat) and its resident memory (VmHWM);
3. the job side, per sample: the node-reader probe's read() on a main probe that costs
   nothing (its energy share and network counters), when the reader's files are unchanged
   since the last read and when they are new; and `jobmon run` peak RSS with the node
   reader's figures and with JOBMON_NODE=off.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from jobmon.node import bpf, netcount                         # noqa: E402
from jobmon.node.gpus import GpuSource                       # noqa: E402
from jobmon.node.rapl import EnergySource                    # noqa: E402
from jobmon.node.reader import NodeReader                    # noqa: E402
from jobmon.node.recorded import RecordedSource              # noqa: E402
from jobmon.probes.node_probe import NodeProbe               # noqa: E402
from node_site import Powered                                # noqa: E402
from peak_rss import peak_rss_mib                            # noqa: E402

FIXTURE = os.path.join(HERE, "..", "tests", "fixtures", "gpu", "h100x2.json")
XEON = {"intel-rapl:0": 60, "intel-rapl:1": 40, "intel-rapl:0:0": 12, "intel-rapl:1:0": 8}


def v2_root():
    return netcount.cgroup2_root()


def move(pid, cgroup):
    with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
        f.write(str(pid))


def on_cpu(pid):
    """Seconds the process has run on a CPU (schedstat: nanoseconds, not clock ticks)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def per_packet(base):
    """ns per run of the egress program on a socket `depth` levels below the root."""
    m = bpf.map_create(bpf.MAP_PERCPU_HASH, 8, 32, 1024, bpf.NO_PREALLOC)
    p = bpf.prog_load(bpf.PROG_CGROUP_SKB, netcount.program(m, True), bpf.CGROUP_INET_EGRESS)
    packet = b"\0" * 12 + b"\x08\x00" + b"\x45" + b"\0" * 1485      # Ethernet + IPv4, 1500
    home = open("/proc/self/cgroup").read().strip().partition("::")[2]
    out = []
    try:
        d = base
        for depth in range(1, 7):
            move(os.getpid(), d)
            bpf.test_run(p, packet, 1000)                    # the map's entries made
            runs = [bpf.test_run(p, packet, 200000)[1] for _ in range(5)]
            out.append((depth, min(runs), sorted(runs)[2]))
            d = os.path.join(d, f"l{depth + 1}")
            os.mkdir(d)
    finally:
        move(os.getpid(), os.path.join(v2_root(), home.lstrip("/")))
        os.close(p)
        os.close(m)
    return out


def recording(path, pids):
    with open(FIXTURE) as f:
        rec = json.load(f)
    devices = []
    for i in range(8):
        d = dict(rec["devices"][i % 2])
        d["uuid"] = d["uuid"][:-4] + f"{i:04x}"
        d["minor"] = i
        d["processes"] = [[p, 1 << 30, 0xFFFFFFFF, 0xFFFFFFFF] for p in pids[i::8]]
        devices.append(d)
    rec["devices"] = devices
    with open(path, "w") as f:
        json.dump(rec, f)


def jobs_with_traffic(base, n):
    """n job cgroups (job_N/task), each with a process that sends 1000 bytes over loopback
    every 0.5 s (its pid is on a GPU of the recording)."""
    server = socket.create_server(("127.0.0.1", 0))
    code = ("import socket, sys, time\n"
            "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
            "while True:\n"
            "    s.sendall(b'x' * 1000); time.sleep(0.5)\n")
    procs, conns = [], []
    for i in range(n):
        task = os.path.join(base, f"job_{i}", "task")
        os.makedirs(task)
        p = subprocess.Popen(["sh", "-c", f"echo $$ > {task}/cgroup.procs; exec "
                              f"{sys.executable} -c \"$0\" {server.getsockname()[1]}", code])
        procs.append(p)
        conns.append(server.accept()[0])
    return procs, conns


def reader_cost(directory, sources, refreshes):
    """(CPU s per refresh, {file: bytes}, cgroups counted)."""
    reader = NodeReader(sources, directory, period=1.0)
    try:
        reader.refresh()
        with open(os.path.join(directory, "network.txt")) as f:
            cgroups = json.loads(f.readline())["cgroups"]
        t = time.process_time()
        for _ in range(refreshes):
            reader.refresh()
        cpu = (time.process_time() - t) / refreshes
        sizes = {s.file: os.path.getsize(reader.path(s)) for s in sources}
    finally:
        reader.close()
    return cpu, sizes, cgroups


class Nothing:
    """A main probe that costs nothing: what is left of a read is the node part's."""
    method = "none"

    def __init__(self):
        self.cpu = 0.0

    def read(self, final=False):
        self.cpu += 0.01
        return {"cpu_user_seconds": self.cpu, "cpu_system_seconds": 0.0}

    def pids(self):
        return []

    def close(self):
        pass


def job_side(directory, cgroup, reads):
    probe = NodeProbe(Nothing(), directory, print, cgroup)
    try:
        probe.read()
        t = time.process_time()
        for _ in range(reads):
            probe.read()
        same = (time.process_time() - t) / reads * 1e6
        t = time.process_time()
        for _ in range(reads // 2):
            probe.energy.published.key = probe.net.published.key = None   # as if new
            probe.read()
        new = (time.process_time() - t) / (reads // 2) * 1e6
    finally:
        probe.close()
    return same, new


def sampler_rss(jobmon, env, label):
    argv = [jobmon, "run", "--interval=0.05", "--out=/dev/null", "--", "sleep", "3"]
    env = dict(os.environ, JOBMON_STORE=os.path.join(tempfile.mkdtemp(), "store.db"), **env)
    print(f"jobmon run peak RSS (cgroup mode), {label}: {peak_rss_mib(argv, env):.1f} MiB")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=32)
    ap.add_argument("--refreshes", type=int, default=200)
    ap.add_argument("--reads", type=int, default=2000)
    ap.add_argument("--jobmon", default=os.environ.get("JOBMON") or
                    os.path.join(os.path.dirname(sys.executable), "jobmon"))
    a = ap.parse_args()
    if os.geteuid() != 0 or v2_root() is None:
        sys.exit("run as root on a node with a cgroup v2 hierarchy")
    print(f"load average before: {open('/proc/loadavg').read().strip()}")
    base = os.path.join(v2_root(), f"jobmon-bench-{os.getpid()}")
    os.mkdir(base)
    pub = tempfile.mkdtemp(prefix="jobmon-node-bench-",
                           dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    os.chmod(pub, 0o755)
    powered = Powered("xeon_2s", XEON)
    procs = []
    try:
        os.mkdir(os.path.join(base, "l1"))
        for depth, best, median in per_packet(os.path.join(base, "l1")):
            print(f"BPF program per packet, socket {depth} level(s) below the root: "
                  f"{best} ns best, {median} ns median of 5 x 200,000 runs")
        net = netcount.network_source(1.0)        # counting before the jobs' traffic
        procs, conns = jobs_with_traffic(os.path.join(base, "jobs"), a.jobs)
        rec = os.path.join(pub, "recording.json")
        recording(rec, [p.pid for p in procs])
        time.sleep(1)
        sources = [GpuSource(RecordedSource(rec), 1.0),
                   EnergySource(1.0, powercap=powered.powercap, cpu_stat=powered.stat), net]
        cpu, sizes, cgroups = reader_cost(os.path.join(pub, "inproc"), sources, a.refreshes)
        print(f"node reader, {a.jobs} jobs (8 GPUs x {a.jobs // 8} processes, 4 RAPL zones, "
              f"{cgroups} cgroups counted): {cpu * 1e3:.2f} ms CPU per refresh; bytes "
              f"published {sizes}")
        d = os.path.join(pub, "node")
        r = subprocess.Popen([a.jobmon, "node-reader", f"--dir={d}", f"--recorded={rec}",
                              f"--powercap={powered.powercap}", f"--cpu-stat={powered.stat}",
                              "--period=1"], stderr=subprocess.DEVNULL)
        # its counters fill as the jobs keep sending
        try:
            time.sleep(5)                            # past its start-up
            cpu0, t0 = on_cpu(r.pid), time.monotonic()
            time.sleep(30)
            per_s = (on_cpu(r.pid) - cpu0) / (time.monotonic() - t0)
            status = open(f"/proc/{r.pid}/status").read()
            hwm = int(status.split("VmHWM:")[1].split()[0]) / 1024
            print(f"jobmon node-reader process, {a.jobs} jobs, 1 s period, 30 s after its "
                  f"start-up: {per_s * 1e3:.2f} ms CPU per second ({per_s * 100:.3f} % of a "
                  f"core), VmHWM {hwm:.1f} MiB")
            same, new = job_side(d, os.path.join(base, "jobs", "job_0"), a.reads)
            print(f"job side, node-reader probe (energy share + network counters): "
                  f"{same:.1f} µs per read when the files are unchanged, {new:.1f} µs when "
                  "they are new")
            sampler_rss(a.jobmon, {"JOBMON_NODE_DIR": d, "JOBMON_GPU": "off"},
                        "node reader's energy and network figures")
            sampler_rss(a.jobmon, {"JOBMON_NODE_DIR": d, "JOBMON_GPU": "off",
                                   "JOBMON_NODE": "off"}, "JOBMON_NODE=off")
        finally:
            r.terminate()
            r.wait()
    finally:
        for p in procs:
            p.kill()
            p.wait()
        powered.close()
        shutil.rmtree(pub)
        for d, _dirs, _files in sorted(os.walk(base), key=lambda x: -len(x[0])):
            os.rmdir(d)
    print(f"load average after: {open('/proc/loadavg').read().strip()}")


if __name__ == "__main__":
    main()
