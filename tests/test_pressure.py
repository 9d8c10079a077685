"""Why a job waited, per job: the kernel's pressure stall information (PSI) of the job's own
cgroup where there is one (its v2 cgroup; on a hybrid host the controller-less v2 cgroup
jobmon makes beside the job's v1 ones), else the run-queue wait of its threads; CPU quota
throttling; PSI off detected. Real jobs beside real CPU hogs (the v2 guest has its own:
tests/guest/inside/test_contention.py)."""
import os
import subprocess
import threading
import time

import pytest

from contention import SPIN, cpu_hogs, cpu_quota_cgroup
from helpers import (JOBMON, PYTHON, TEST_USER, as_user, fixture, job_cgroup, load_json,
                     job_cgroup_method, needs_root, needs_test_user, root, shared_tmpdir)
from jobmon import cgroups
from jobmon.probes import pressure
from jobmon.probes.cgroup_v2 import CgroupV2Probe

# one share of a job's time spent waiting that a job of 2 spinning processes beside twice
# as many hogs as CPUs always exceeds (it gets at most 2/(2 + 2 x CPUs) of them)
CONTENDED = 25.0


def spin_job(tmp, args=(), user=None, procs=2, seconds=3.0, preexec_fn=None):
    """`jobmon run ARGS -- SPIN procs seconds`: its summary and samples."""
    summary, out = os.path.join(tmp, "s.json"), os.path.join(tmp, "samples.jsonl")
    argv = [JOBMON, "run", "--interval=0.5", "--store=none", f"--summary={summary}",
            f"--out={out}", "--tag=request_cpus=2"] + list(args) + \
        ["--", PYTHON, "-c", SPIN, str(procs), str(seconds)]
    p = subprocess.run(as_user(argv, user) if user else argv, capture_output=True, text=True,
                       timeout=120, preexec_fn=preexec_fn)
    assert p.returncode == 0, p.stderr
    import json
    with open(out) as f:
        samples = [json.loads(x) for x in f if x.strip()]
    return load_json(summary), samples


def counters_never_go_back(samples, field):
    values = [x[field] for x in samples if field in x]
    assert values, field
    assert values == sorted(values), values


@root
@needs_root
def test_a_job_beside_cpu_hogs_has_its_cpu_pressure_from_psi(tmp_path):
    """The cgroup a root job gets here: on a hybrid host (cgroup v1) jobmon puts the job in
    a v2 cgroup too, whose PSI is the job's own; on a pure v2 host its one cgroup's. The
    share of the run a thread of it waited for a CPU."""
    if not cgroups.resolve(*cgroups.own(), "v2") or pressure.psi_state() != "on":
        pytest.skip("no cgroup2 hierarchy with PSI here")
    with cpu_hogs():
        s, samples = spin_job(str(tmp_path), ["--cgroup=create"])
    assert s["method"] == job_cgroup_method(), s
    assert s["pressure_source"] == "psi" and s["psi"] == "on", s
    assert s["cpu_pressure_percent"] >= CONTENDED, s
    assert s["cpu_pressure_seconds"] <= s["wall_seconds"] + 0.01
    for f in ("cpu_pressure_seconds", "mem_pressure_seconds", "io_pressure_seconds"):
        counters_never_go_back(samples, f)
    assert s["mem_pressure_percent"] is not None and s["io_pressure_percent"] is not None
    assert s["cpu_wait_seconds"] is None     # PSI says it: no per-thread reads


@needs_test_user
def test_an_unprivileged_job_beside_cpu_hogs_has_its_run_queue_wait():
    """procfs mode: no cgroup, no PSI of the job's own; its threads' run-queue wait."""
    tmp = shared_tmpdir()
    with cpu_hogs():
        s, samples = spin_job(tmp, user=TEST_USER)
    assert s["method"] == "procfs" and s["pressure_source"] == "run-queue"
    assert s["cpu_wait_percent"] >= CONTENDED, s
    assert s["cpu_pressure_seconds"] is None and s["cpu_pressure_percent"] is None
    counters_never_go_back(samples, "cpu_wait_seconds")
    cpu = s["cpu_user_seconds"] + s["cpu_system_seconds"]
    # two processes over ~3 s: what they waited and ran fits in 2 x wall
    assert s["cpu_wait_seconds"] + cpu <= 2 * s["wall_seconds"] + 0.1, s


@root
@needs_root
def test_a_job_in_a_schedulers_cgroup_has_its_wait(tmp_path):
    """A cgroup someone else made (--cgroup=existing), of the host's version: under a
    scheduler's cgroup v1 it has no PSI, so the run-queue wait of the threads in its tasks
    file; a v2 one has PSI of its own."""
    cg = job_cgroup(f"jobmon-pytest-wait-{os.getpid()}")
    try:
        with cpu_hogs():
            s, samples = spin_job(str(tmp_path), ["--cgroup=existing"], preexec_fn=cg.join)
    finally:
        time.sleep(0.05)
        cg.remove()
    assert s["method"] == f"cgroup-v{cg.version}", s
    if cg.version == 1:
        assert s["pressure_source"] == "run-queue", s
        assert s["cpu_wait_percent"] >= CONTENDED, s
        counters_never_go_back(samples, "cpu_wait_seconds")
    else:
        if pressure.psi_state() != "on":
            pytest.skip("a kernel without PSI")
        assert s["pressure_source"] == "psi" and s["cpu_pressure_percent"] >= CONTENDED, s
        counters_never_go_back(samples, "cpu_pressure_seconds")


# a process of `n` threads that wait `hold` seconds, then exits with status 3
THREADS = ("import sys, threading, time\n"
           "ev = threading.Event()\n"
           "ts = [threading.Thread(target=ev.wait) for _ in range(int(sys.argv[1]))]\n"
           "[t.start() for t in ts]\n"
           "time.sleep(float(sys.argv[2])); ev.set(); [t.join() for t in ts]\n"
           "sys.exit(3)\n")


@pytest.mark.parametrize("mode", ["procfs", "cgroup"])
def test_more_threads_than_descriptors_still_end_as_the_job_ended(tmp_path, mode):
    """The run-queue wait keeps a file open per thread: under a descriptor limit of 1024
    (soft and hard), a job of 1100 threads must leave jobmon the files it needs to end (in
    a cgroup: one of the host's version; a v1 one has no PSI, so its threads are read)."""
    cg = None
    if mode == "cgroup":
        if os.geteuid() != 0:
            pytest.skip("needs root")
        cg = job_cgroup(f"jobmon-pytest-fds-{os.getpid()}")

    def limited():
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))
        if cg is not None:
            cg.join()
    summary = str(tmp_path / "s.json")
    try:
        p = subprocess.run([JOBMON, "run", "--interval=0.5", "--store=none",
                            f"--summary={summary}",
                            "--cgroup=existing" if cg else "--cgroup=none", "--", PYTHON, "-c",
                            THREADS, "1100", "2"], capture_output=True, text=True,
                           timeout=120, preexec_fn=limited)
    finally:
        if cg is not None:
            time.sleep(0.05)
            cg.remove()
    assert p.returncode == 3, p.stderr
    s = load_json(summary)
    assert s["method"] == (f"cgroup-v{cg.version}" if cg else mode), s
    assert s["exit_code"] == 3 and s["threads_max"] >= 1101, s   # (a v1 cgroup: jobmon too)
    psi = cg is not None and cg.version == 2 and pressure.psi_state() == "on"
    assert s["pressure_source"] == ("psi" if psi else "run-queue"), s
    if not psi:     # procfs, v1: its threads were read
        assert s["cpu_wait_seconds"] is not None, s


@root
@needs_root
def test_a_cpu_quota_shows_as_throttled_time(tmp_path):
    """A job cgroup with a quota of 0.2 cores: the time the quota held it back. On v1 one of
    the cpu controller too (same path as cpuacct's, as HTCondor and systemd make them); on
    v2 its cpu.max (tests/contention.py)."""
    with cpu_quota_cgroup(20000) as job:
        s, samples = spin_job(str(tmp_path), ["--cgroup=existing"], procs=1, seconds=1.5,
                              preexec_fn=job.join)
    check_throttled(s, samples)


def check_throttled(s, samples):
    assert s["cores_allocated"] == 0.2, s
    # 1.5 s wanting a whole core under a 0.2-core quota: held back most of the time
    assert s["cpu_throttled_seconds"] >= 0.5, s
    counters_never_go_back(samples, "cpu_throttled_seconds")


def test_psi_off_is_detected(tmp_path):
    """A kernel built or booted without PSI has no /proc/pressure (RHEL 8 without psi=1);
    one with it, a readable one."""
    assert pressure.psi_state(str(tmp_path)) == "off"
    (tmp_path / "pressure").mkdir()
    (tmp_path / "pressure" / "cpu").write_bytes(
        b"some avg10=0.00 avg60=0.00 avg300=0.00 total=4242\n"
        b"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    assert pressure.psi_state(str(tmp_path)) == "on"
    if os.path.exists("/proc/pressure/cpu"):
        assert pressure.psi_state() == "on"


def test_a_v2_cgroup_without_pressure_files_falls_back_to_the_run_queue(tmp_path):
    """A v2 job cgroup on a kernel without PSI has no pressure files (the recorded Slurm
    job is one): the probe says so and reads its threads' run-queue wait instead -- here
    of a real thread of this process, busy beside hogs."""
    import shutil
    shutil.copytree(fixture("cgroup_v2", "slurm"), tmp_path / "slurm")
    job = tmp_path / "slurm/system.slice/slurmstepd.scope/job_4242"
    for d in job.glob("**/"):
        (d / "cgroup.threads").write_text("")
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            pass
    t = threading.Thread(target=busy)
    t.start()
    try:
        (job / "step_0" / "cgroup.threads").write_text(f"{t.native_id}\n")
        probe = CgroupV2Probe(cgroups.JobCgroups(2, {"v2": str(job)}))
        assert probe.pressure_source == "run-queue"
        with cpu_hogs():
            first = probe.read()
            time.sleep(1.0)
            second = probe.read()
        assert "cpu_pressure_seconds" not in second
        assert second["cpu_wait_seconds"] > first["cpu_wait_seconds"] > 0 \
            or second["cpu_wait_seconds"] > 0.1, (first, second)
    finally:
        stop.set()
        t.join()
    gone = probe.read()   # the thread has exited: its wait stays in the figure
    assert gone["cpu_wait_seconds"] >= second["cpu_wait_seconds"]
    probe.close()


def test_the_run_queue_keeps_what_exited_threads_waited():
    """Threads that wait beside hogs and then exit: the sum never goes back."""
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            pass
    threads = [threading.Thread(target=busy) for _ in range(3)]
    rq = pressure.RunQueue()
    with cpu_hogs():
        for t in threads:
            t.start()
        time.sleep(0.5)
        during = rq.read([t.native_id for t in threads])
        time.sleep(0.5)
        last = rq.read([t.native_id for t in threads])
        stop.set()
        for t in threads:
            t.join()
    after = rq.read([])
    assert 0 < during <= last == after, (during, last, after)
    rq.close()


def test_pressure_files_parse_as_the_kernel_writes_them():
    """Recorded from this host's kernel (6.18) and Debian 12's (6.1): some and full."""
    data = (b"some avg10=2.35 avg60=0.42 avg300=0.08 total=267035\n"
            b"full avg10=2.35 avg60=0.42 avg300=0.08 total=266986\n")
    assert pressure.parse_pressure(data) == (267035, 266986)
    assert pressure.parse_pressure(b"some avg10=0.00 avg60=0.00 avg300=0.00 total=12\n") \
        == (12, None)
    assert pressure.run_delay(b"1424390317 3440007823 681\n") == 3440007823
    if os.path.exists("/proc/pressure/io"):
        with open("/proc/pressure/io", "rb") as f:
            some, full = pressure.parse_pressure(f.read())
        assert some >= full >= 0
