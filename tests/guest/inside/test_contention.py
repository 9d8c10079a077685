"""Advice that knows contention, on cgroup v2: the PSI of the job's own cgroup, with real
workloads -- CPU hogs beside the job, a read from a disk throttled with io.max, a job
thrashing at its memory.max and one held at its memory.high. Through the real `jobmon run`
and the rules the report applies (the host has the same on cgroup v1:
tests/test_advice_jobs.py)."""
import os

import jobrun
import tree
from contention import DIRECT_READ, SPIN, THRASH, cpu_hogs, data_file, disk_of
from helpers import PYTHON
from jobrun import MiB

from jobmon.summary.advice import advise
from jobmon.config.report import defaults


def advice(summary):
    return {a["rule"]: a["text"] for a in advise(summary, defaults())}


def test_the_contended_job_is_not_told_to_ask_for_fewer_cores(raw_guest):
    """2 spinning processes asking for 2 cores beside 4 hogs on the guest's 2 CPUs. They
    spin 8 s: the run's single-threaded start (seconds under emulation, longer on a busy
    host) must not be most of its wall time, and the samples must see both processes (a
    pids.peak of 2 may be jobmon's exec trampoline's moment, so it does not count)."""
    with cpu_hogs():
        r = jobrun.Run(["--cgroup=create", "--cgroup-version=2", "--tag=request_cpus=2"],
                       [PYTHON, "-c", SPIN, "2", "8"], interval=0.5)
    s, got = r.summary, advice(r.summary)
    print({k: s.get(k) for k in ("cpu_pressure_percent", "cpu_efficiency_percent",
                                 "pressure_source", "psi", "threads_max", "wall_seconds")})
    assert s["method"] == "cgroup-v2" and s["pressure_source"] == "psi" and s["psi"] == "on"
    assert s["cpu_pressure_percent"] >= 25, s
    assert "cpu_underused" not in got and "(PSI)" in got["cpu_contended"], got


def test_a_job_reading_from_a_disk_throttled_with_io_max_is_io_bound(raw_guest, ext4):
    """6 MiB read with O_DIRECT from the ext4 disk, its cgroup's io.max 1 MiB/s of reads:
    6 s waiting, beside the 2-3 s jobmon and the job take to start under emulation."""
    path = data_file(ext4, 6 * MiB)
    d = tree.make("jobs/io-bound")
    tree.write(d, "io.max", f"{disk_of(path)} rbps={1 * MiB}")
    gate = os.path.join(ext4, "go")
    open(gate, "w").close()
    try:
        r = jobrun.Run(["--cgroup=existing"], [PYTHON, "-c", DIRECT_READ, path, gate],
                       cgroup=d, interval=0.5)
    finally:
        os.unlink(path)
        os.unlink(gate)
    s, got = r.summary, advice(r.summary)
    print({k: s.get(k) for k in ("io_pressure_percent", "read_bytes", "wall_seconds")})
    assert s["read_bytes"] >= 6 * MiB, s
    assert s["io_pressure_percent"] >= defaults()["io_pressure_percent"], s
    assert got["io_bound"].startswith("I/O-bound: waited for storage"), got


def test_a_job_thrashing_at_its_memory_max_is_told_so(raw_guest, ext4):
    """A 64 MiB file read once, then in random order for 8 s, by a job (and jobmon beside
    it) in a cgroup whose memory.max is 48 MiB: it keeps reading its pages back."""
    path = data_file(ext4, 64 * MiB)
    d = tree.make("jobs/thrash")
    tree.write(d, "memory.max", str(48 * MiB))
    try:
        r = jobrun.Run(["--cgroup=existing"], [PYTHON, "-c", THRASH, path, "8"], cgroup=d,
                       interval=0.5)
    finally:
        os.unlink(path)
    s, got = r.summary, advice(r.summary)
    print({k: s.get(k) for k in ("mem_pressure_percent", "io_pressure_percent",
                                 "mem_major_faults", "mem_limit_hits", "wall_seconds")})
    assert s["mem_limit_hits"] > 0 and s["mem_pressure_percent"] is not None, s
    assert "thrashing: " in got["memory_thrashing"], got


def test_a_job_held_at_its_memory_high_stalls_on_memory(raw_guest):
    """memory.high 48 MiB over jobmon and a job that adds 1 MiB of anonymous memory at a
    time for 3 s: past the mark the kernel reclaims and throttles it at every allocation
    (no swap in the guest: the pages stay, the job is slowed), and PSI counts that time."""
    d = tree.make("jobs/high")
    tree.write(d, "memory.high", str(48 * MiB))
    code = ("import time\nheld, t = [], time.time()\n"
            "while time.time() - t < 3:\n    held.append(b'1' * (1 << 20))\n")
    r = jobrun.Run(["--cgroup=existing"], [PYTHON, "-c", code], cgroup=d, interval=0.5)
    s, got = r.summary, advice(r.summary)
    print({k: s.get(k) for k in ("mem_pressure_percent", "mem_high_hits", "wall_seconds")})
    assert s["mem_high_hits"] > 0, s
    assert s["mem_pressure_percent"] >= 10 and "(PSI" in got["memory_thrashing"], (s, got)
