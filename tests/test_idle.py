"""Idle allocations: a job holding GPUs none of its processes is on, or cores it leaves at ~0
CPU, for longer than the site's [report] idle_allocation_seconds -- in every sample (how
long, this stretch), in the summary (the longest, and which), as a banner in `jobmon top`
and `jobmon watch` while it runs, and in `jobmon report`'s top wasters. GPUs from the
recorded node of tests/test_gpu_node.py (a real reader, real processes on the recording);
cores from real jobs. The early warning of a job near its memory limit is a banner too."""
import json
import os
import subprocess
import sys
import time

import pytest

from gpu_node_site import TELL_PID, GpuNode, wait_for_file
from helpers import JOBMON, PYTHON, jobmon, limit_job_memory, needs_root

GIB = 1 << 30
MiB = 1 << 20
IDLE_AFTER = "1.0"      # [report] idle_allocation_seconds for these jobs and views


def env(**extra):
    e = dict(os.environ, JOBMON_REPORT_IDLE_ALLOCATION_SECONDS=IDLE_AFTER, **extra)
    e.pop("JOBMON_STORE", None)
    return e


def run(tmp_path, job, code, *args):
    """`jobmon run` of a Python job (its summary and samples), its store in tmp_path."""
    store = str(tmp_path / "store.db")
    r = subprocess.run([JOBMON, "run", "--interval=0.2", f"--job-id={job}", f"--store={store}",
                        f"--summary={tmp_path}/{job}.json", f"--out={tmp_path}/{job}.jsonl",
                        *args, "--", PYTHON, "-c", code], env=env(), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    with open(tmp_path / f"{job}.json") as f:
        s = json.load(f)
    with open(tmp_path / f"{job}.jsonl") as f:
        return s, [json.loads(x) for x in f]


def test_cores_held_at_no_cpu_are_an_idle_allocation_and_busy_ones_are_not(tmp_path):
    sleeper, samples = run(tmp_path, "sleeper", "import time; time.sleep(2.5)",
                           "--tag=request_cpus=2")
    assert sleeper["idle_allocation"] == "cores", sleeper
    assert 1.5 <= sleeper["cpu_idle_longest_seconds"] <= sleeper["wall_seconds"], sleeper
    idle = [x["cpu_idle_seconds"] for x in samples if "cpu_idle_seconds" in x]
    # one stretch, growing (the interpreter's start and exit use CPU: 0 either side)
    top = idle.index(max(idle))
    assert max(idle) >= 1.5 and max(idle) == sleeper["cpu_idle_longest_seconds"], idle
    stretch = idle[:top + 1][::-1]
    stretch = stretch[:next((i for i, v in enumerate(stretch) if v == 0), len(stretch))]
    assert stretch == sorted(stretch, reverse=True) and len(stretch) >= 3, idle
    # a spinning job: never 5 samples (1 s) in a row under 0.01 cores, however busy the
    # machine (a starved process still runs)
    spinner, samples = run(tmp_path, "spinner",
                           "import time\nt = time.time()\nwhile time.time() - t < 2: pass")
    assert spinner["idle_allocation"] == "" and spinner["cpu_idle_longest_seconds"] < 1.0
    # `jobmon report` over the range: the idle one among the top wasters, marked
    r = jobmon("report", "--since", "1h", "--json", f"--store={tmp_path}/store.db", env=env())
    assert r.returncode == 0, r.stderr
    wasters = {w["job"]: w for w in json.loads(r.stdout)["top_wasters"]}
    assert wasters["sleeper"]["idle_allocation"] == "cores"
    t = jobmon("report", "--since", "1h", f"--store={tmp_path}/store.db", env=env())
    assert "idle cores" in t.stdout, t.stdout


def test_top_and_watch_show_a_banner_while_the_cores_are_idle(tmp_path):
    store = str(tmp_path / "store.db")
    stop = tmp_path / "stop"
    p = subprocess.Popen([JOBMON, "run", "--interval=0.2", "--job-id=idler", f"--store={store}",
                          "--", PYTHON, "-c", "import os, time\n"
                          f"while not os.path.exists({str(stop)!r}): time.sleep(0.1)"],
                         env=env(), stderr=subprocess.PIPE)
    try:
        deadline, out = time.time() + 60, ""
        while time.time() < deadline and "IDLE idler: its cores" not in out:
            out = jobmon("top", "--once", "--spool=none", f"--store={store}", env=env()).stdout
            time.sleep(0.2)
        assert "IDLE idler: its cores under 0.01 busy for " in out, out
        w = jobmon("watch", "idler", "--once", "--spool=none", f"--store={store}", env=env())
        assert "IDLE idler: its cores under 0.01 busy for " in w.stdout, w.stdout
    finally:
        stop.touch()
        p.wait(timeout=60)


@needs_root
@pytest.mark.parametrize("on, idle", [((0,), True), ((0, 1), False)])
def test_gpus_without_a_process_of_the_job_are_an_idle_allocation(tmp_path, on, idle):
    """The recorded 2-GPU node: the job's process (asleep: its cores are idle too) on GPU
    0 only, or on both."""
    node = GpuNode()
    try:
        node.start(period=0.2)
        pidfile = str(tmp_path / "pid")
        job = node.job(str(tmp_path), [PYTHON, "-c", TELL_PID, pidfile, "2.5"],
                       env=node.env(CUDA_VISIBLE_DEVICES="0,1",
                                    JOBMON_REPORT_IDLE_ALLOCATION_SECONDS=IDLE_AFTER),
                       interval=0.2)
        pid = int(wait_for_file(pidfile))
        for gpu in on:
            node.rec["devices"][gpu]["processes"] = [[pid, GIB, 0xFFFFFFFF, 0xFFFFFFFF]]
        node.write()
        job = job.done()
    finally:
        node.close()
    s = job.summary
    running = [x for x in job.samples if x.get("procs")]   # not the read after its end
    in_use = [x["gpus_in_use"] for x in running if "gpus_in_use" in x]
    assert in_use[-1] == len(on), in_use
    assert s["gpu_count"] == 2 and ("gpus" in s["idle_allocation"].split(",")) == idle, s
    if idle:
        assert s["gpu_unused_longest_seconds"] >= 1.0
        assert max(x.get("gpu_unused_seconds", 0) for x in job.samples) >= 1.0
    else:   # both in use from the sample that first saw the process on them
        assert running[-1]["gpu_unused_seconds"] == 0


# takes anonymous memory 1 MiB at a time until its resident memory is 93 % of the limit it
# is told, then holds it until the stop file appears
NEAR = r"""
import os, sys, time
limit, stop = int(sys.argv[1]), sys.argv[2]
held = []
def resident():
    with open("/proc/self/status") as f:
        return sum(int(l.split()[1]) * 1024 for l in f if l.startswith(("RssAnon", "RssShmem")))
while resident() < 0.93 * limit:
    held.append(b"1" * (1 << 20))
while not os.path.exists(stop):
    time.sleep(0.1)
"""


@needs_root
def test_a_job_near_its_memory_limit_is_flagged_in_top_and_watch(tmp_path):
    """jobmon's own cgroup (of the host's version) limited to 48 MiB before the job takes
    93 % of it: every sample carries the limit, and the live views say the job is near an
    OOM kill."""
    store, stop, gate = str(tmp_path / "store.db"), tmp_path / "stop", tmp_path / "go"
    p = subprocess.Popen([JOBMON, "run", "--interval=0.2", "--job-id=near", f"--store={store}",
                          "--cgroup=create", "--", "/bin/sh", "-c",
                          'while [ ! -e "$0" ]; do sleep 0.01; done; exec "$@"', str(gate),
                          PYTHON, "-c", NEAR, str(48 * MiB), str(stop)],
                         env=env(), stderr=subprocess.PIPE)
    try:
        limit_job_memory(p, 48 * MiB)
        gate.touch()
        deadline, out = time.time() + 60, ""
        while time.time() < deadline and "MEMORY near" not in out:
            out = jobmon("top", "--once", "--spool=none", f"--store={store}", env=env()).stdout
            time.sleep(0.2)
        assert "MEMORY near: resident " in out and " of its 48 MiB limit: near an OOM kill" \
            in out, out
        w = jobmon("watch", "near", "--once", "--spool=none", f"--store={store}", env=env())
        assert "near an OOM kill" in w.stdout, w.stdout
    finally:
        stop.touch()
        p.wait(timeout=60)
    assert p.returncode == 0, p.stderr.read()
