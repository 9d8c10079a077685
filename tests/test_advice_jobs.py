"""Advice that knows contention, each rule shown on a real job on this host, in the cgroups
a root job gets here (v1 on a hybrid host, v2 on a pure v2 one; the cgroup v2 guest has the
same on its ext4 disk in tests/guest/inside/test_contention.py): a job beside
CPU hogs, a job reading from a throttled device, a job thrashing at its memory limit.
Through the real `jobmon run` and `jobmon query --json`."""
import json
import os
import subprocess
import time

import pytest

from contention import DIRECT_READ, SPIN, THRASH, cpu_hogs, data_file, disk_of
from helpers import (JOBMON, PYTHON, TEST_USER, as_user, job_cgroup, job_cgroup_method, jobmon,
                     limit_job_memory, needs_root, needs_test_user, root, set_job_cgroup,
                     shared_tmpdir)
from jobmon import cgroups
from jobmon.probes.pressure import psi_state

MiB = 1 << 20


def query(store, job, cfg=""):
    """The job's report as `jobmon query --json` gives it, with [report] settings `cfg`."""
    conf = os.path.join(os.path.dirname(store), "jobmon.toml")
    with open(conf, "w") as f:
        f.write(cfg)
    env = dict(os.environ, JOBMON_CONFIG=conf)
    env.pop("JOBMON_STORE", None)
    q = jobmon("query", job, "--json", f"--store={store}", "--no-scheduler", env=env)
    assert q.returncode == 0, q.stderr
    return json.loads(q.stdout)


def advice(rep):
    return {a["rule"]: a["text"] for a in rep["advice"]}


def run(tmp, job, cmd, args=(), user=None, preexec_fn=None, wait=True):
    store = os.path.join(tmp, "store.db")
    argv = [JOBMON, "run", "--interval=0.5", f"--job-id={job}", f"--store={store}"] + \
        list(args) + ["--"] + list(cmd)
    p = subprocess.Popen(as_user(argv, user) if user else argv, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn)
    if not wait:
        return p, store
    _out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    return store


def needs_psi():
    if not cgroups.resolve(*cgroups.own(), "v2") or psi_state() != "on":
        pytest.skip("no cgroup2 hierarchy with PSI here (hybrid host)")


# --- CPU: a job beside hogs -----------------------------------------------------------------

@root
@needs_root
def test_the_contended_two_process_job_is_not_told_to_ask_for_fewer_cores(tmp_path):
    """2 processes spinning, 2 cores asked for, on a node whose CPUs are busy with hogs:
    it gets a fraction of its cores. It used to be told "ask for 1 core" (which would halve
    its speed on a quiet node); now it is told the node was busy, and nothing on cores."""
    needs_psi()
    with cpu_hogs():
        store = run(str(tmp_path), "contended", [PYTHON, "-c", SPIN, "2", "3"],
                    ["--cgroup=create", "--tag=request_cpus=2"])
    rep = query(store, "contended")
    got = advice(rep)
    assert rep["summary"]["cpu_efficiency_percent"] < 50, rep["summary"]   # it got little
    assert "cpu_underused" not in got, got
    assert got["cpu_contended"].startswith("the node was busy: it got "), got
    assert "% of the run (PSI)" in got["cpu_contended"]
    # without the contention rule's threshold met it is judged on what it wanted, the CPU
    # it got and the CPU it waited for: 2 cores, so it is still not told to ask for 1
    assert "ask for 1 core" not in str(advice(query(store, "contended", "[report]\n"
                                                    "cpu_wait_percent = 100.1\n")))


@needs_test_user
def test_the_contended_job_in_procfs_mode_is_told_from_its_run_queue_wait():
    tmp = shared_tmpdir()
    with cpu_hogs():
        store = run(tmp, "contended-procfs", [PYTHON, "-c", SPIN, "2", "3"],
                    ["--tag=request_cpus=2"], user=TEST_USER)
    rep = query(store, "contended-procfs")
    got = advice(rep)
    assert rep["summary"]["method"] == "procfs"
    assert "cpu_underused" not in got, got
    assert "(run queue)" in got["cpu_contended"], got


# --- I/O: a job reading from a throttled device ---------------------------------------------

@root
@needs_root
def test_a_job_reading_from_a_throttled_device_is_io_bound(tmp_path):
    """The job's cgroup limited to 1 MiB/s of reads from the disk its file is on (v1's
    blkio throttle, or v2's io.max; set once jobmon made the cgroup, before the job reads):
    4 MiB read with O_DIRECT, the job waits for storage nearly all of its run."""
    needs_psi()
    path = data_file(str(tmp_path), 4 * MiB)
    gate = str(tmp_path / "go")
    p, store = run(str(tmp_path), "io-bound", [PYTHON, "-c", DIRECT_READ, path, gate],
                   ["--cgroup=create"], wait=False)
    try:
        if job_cgroup_method() == "cgroup-v2":
            set_job_cgroup(p, "v2", "io.max", f"{disk_of(path)} rbps={1 * MiB}")
        else:
            set_job_cgroup(p, "blkio", "blkio.throttle.read_bps_device",
                           f"{disk_of(path)} {1 * MiB}")
        open(gate, "w").close()
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    finally:
        p.kill()
    rep = query(store, "io-bound")
    s, got = rep["summary"], advice(rep)
    assert s["read_bytes"] >= 4 * MiB, s
    assert s["io_pressure_percent"] >= 50, s
    assert got["io_bound"].startswith("I/O-bound: waited for storage"), got


# --- memory: a job thrashing at its memory limit --------------------------------------------

def thrash_in(tmp_path, job, args, preexec_fn=None, limit_after_start=False):
    """The THRASH job over a 56 MiB file for 4 s in a cgroup limited to 48 MiB
    (limit_after_start: the limit set on the memory cgroup jobmon makes for it)."""
    path = data_file(str(tmp_path), 56 * MiB)
    cmd = [PYTHON, "-c", THRASH, path, "4"]
    if not limit_after_start:
        return run(str(tmp_path), job, cmd, args, preexec_fn=preexec_fn)
    gate = str(tmp_path / "go")
    cmd = ["/bin/sh", "-c", 'while [ ! -e "$0" ]; do sleep 0.01; done; exec "$@"', gate] + cmd
    p, store = run(str(tmp_path), job, cmd, args, wait=False)
    try:
        limit_job_memory(p, 48 * MiB)
        open(gate, "w").close()
        _out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
    finally:
        p.kill()
    return store


FAULTS = "major page faults a second while at its memory limit"


@root
@needs_root
def test_a_job_thrashing_at_its_limit_in_jobmons_cgroup_is_told_so(tmp_path):
    """jobmon's own transient cgroup, its memory limit set to 48 MiB before the job maps
    its 56 MiB file: the pages it keeps reading back. PSI is there too (its v2 cgroup):
    this kernel counts those reads as I/O stalls, not memory ones (it never held the
    pages as a working set), so the rule speaks from the faults."""
    needs_psi()
    store = thrash_in(tmp_path, "thrash-own", ["--cgroup=create"], limit_after_start=True)
    rep = query(store, "thrash-own")
    s, got = rep["summary"], advice(rep)
    assert s["pressure_source"] == "psi" and s["mem_pressure_percent"] is not None, s
    assert s["mem_limit_hits"] > 0 and s["mem_major_faults"] > 1000, s
    assert FAULTS in got["memory_thrashing"], got


@root
@needs_root
def test_a_job_thrashing_in_a_schedulers_cgroup_is_told_so(tmp_path):
    """A cgroup someone else made, of the host's version, limited to 48 MiB: its major
    page faults a second while it kept hitting the limit. On v1 it has no PSI of the job's
    own (the run-queue wait instead); on v2 its own PSI."""
    cg = job_cgroup(f"jobmon-pytest-thrash-{os.getpid()}", memory=48 * MiB)
    try:
        store = thrash_in(tmp_path, "thrash-sched", ["--cgroup=existing"],
                          preexec_fn=cg.join)
    finally:
        time.sleep(0.05)
        cg.remove()
    rep = query(store, "thrash-sched")
    s, got = rep["summary"], advice(rep)
    assert s["method"] == f"cgroup-v{cg.version}" and s["mem_limit_hits"] > 0, s
    if cg.version == 1:
        assert s["pressure_source"] == "run-queue" and s["mem_pressure_percent"] is None, s
    else:
        assert s["pressure_source"] == "psi" and s["mem_pressure_percent"] is not None, s
    assert FAULTS in got["memory_thrashing"], got
    assert s["mem_allocated_bytes"] == 48 * MiB and "it was given" in got["memory_thrashing"]
