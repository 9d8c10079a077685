"""OOM forensics on cgroup v2: a job killed at its memory.max, through the real `jobmon run`
as root (the kernel's log is read): which process, when, the charge and its split, the
cgroup's memory.events counters (the host has cgroup v1 and Slurm: tests/test_oom.py)."""
import json
import os
import subprocess
import time

from helpers import JOBMON, PYTHON, shared_tmpdir
from jobrun import MiB

from jobmon import cgroups
from jobmon.summary.oom import story

GREEDY = ("import sys, time\nx = b'1' * (16 << 20)\ntime.sleep(1)\n"
          "y = b'2' * (64 << 20)\ntime.sleep(1)\n")


def test_a_job_killed_at_its_memory_max_gets_the_kernels_story(raw_guest):
    d = shared_tmpdir("jobmon-oom-")
    summary, gate = os.path.join(d, "s.json"), os.path.join(d, "go")
    p = subprocess.Popen([JOBMON, "run", "--interval=0.5", "--store=none",
                          f"--summary={summary}", "--cgroup=create", "--cgroup-version=2",
                          "--", "/bin/sh", "-c",
                          'while [ ! -e "$0" ]; do sleep 0.05; done; exec "$@"', gate,
                          PYTHON, "-c", GREEDY], stderr=subprocess.PIPE, text=True)
    try:
        top = cgroups.resolve(*cgroups.own(), "v2")
        job = os.path.join(top, f"jobmon-{p.pid}")
        deadline = time.time() + 120
        while not os.path.exists(os.path.join(job, "memory.max")):
            assert time.time() < deadline and p.poll() is None, "no job cgroup"
            time.sleep(0.05)
        with open(os.path.join(job, "memory.max"), "w") as f:
            f.write(str(48 * MiB))
        open(gate, "w").close()
        _out, err = p.communicate(timeout=180)
    finally:
        p.kill()
    with open(summary) as f:
        s = json.load(f)
    print("\n".join(story(s)))
    assert p.returncode == -9 and s["signal"] == 9, err
    assert s["method"] == "cgroup-v2" and s["oom_kills"] == 1 and s["oom_events"] >= 1, s
    assert s["mem_limit_hits"] > 0, s
    assert s["oom_source"] == "kernel log" and s["oom_command"] == os.path.basename(PYTHON)[:15]
    assert s["oom_limit_bytes"] == 48 * MiB and s["oom_time_within_seconds"] == 0
    assert s["oom_anon_bytes"] >= 32 * MiB and s["oom_charge_bytes"] <= 48 * MiB, s
    assert s["start_time"] < s["oom_time"] <= s["end_time"] + 0.01
