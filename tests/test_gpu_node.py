"""The job side of the node GPU reader: real `jobmon run` jobs read what a real `jobmon
gpu-reader` publishes from a recorded NVML (tests/fixtures/gpu), with real processes on the
recorded GPUs, real device nodes, a real device cgroup and a real PID namespace. Tested
with a recorded reader, not on a GPU (tests/test_gpu.py covers the GPU)."""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from gpu_node_site import TELL_PID, GpuNode, wait_for_file
from helpers import (JOBMON, PYTHON, TEST_USER, as_user, needs_root, needs_test_user,
                     shared_tmpdir)

pytestmark = needs_root
GIB = 1 << 30
UUID0 = "GPU-5c1e1a0e-6c7b-2c3b-8f7e-2a4f6f0a9d11"    # index 0, /dev/nvidia1, 37 %, 72 W
UUID1 = "GPU-b08d3c64-1f2e-9a7d-4e55-7c1d0f3e8a20"    # index 1, /dev/nvidia0, 98 %, 350 W


@pytest.fixture
def node():
    n = GpuNode()
    yield n
    n.close()


@pytest.fixture
def other():
    """A process on the GPUs that is not the job's."""
    p = subprocess.Popen(["sleep", "60"])
    yield p
    p.kill()
    p.wait()


def gpu_job(node, tmp_path, seconds, procs, wrap=(), **env):
    """Run TELL_PID under jobmon; once its pid is known, `procs(pid)` -> {gpu: [(pid, bytes)]}
    goes into the recording (the GPU memory NVML would report)."""
    pidfile = str(tmp_path / "pid")
    job = node.job(str(tmp_path), [PYTHON, "-c", TELL_PID, pidfile, str(seconds)],
                   env=node.env(**env), wrap=wrap)
    pid = int(wait_for_file(pidfile))
    for gpu, plist in procs(pid).items():
        node.rec["devices"][gpu]["processes"] = [[p, b, 0xFFFFFFFF, 0xFFFFFFFF] for p, b in plist]
    node.write()
    return job.done()


def test_the_jobs_gpu_memory_and_not_another_processs(node, other, tmp_path):
    node.set_procs(0, [(other.pid, 3 * GIB)])
    node.start(period=0.2)
    job = gpu_job(node, tmp_path, 2, lambda pid: {0: [(other.pid, 3 * GIB), (pid, GIB)],
                                                   1: [(pid, GIB // 2), (other.pid, 5 * GIB)]},
                  CUDA_VISIBLE_DEVICES=UUID0)
    mem = [s["gpu_mem_bytes"] for s in job.samples if "gpu_mem_bytes" in s]
    assert set(mem) <= {0, GIB} and GIB in mem          # its own GiB, on its own GPU only
    assert job.summary["gpu_mem_peak_bytes"] == GIB
    assert all(s["gpu_count"] == 1 and s["gpu_util_percent"] == 37 for s in job.samples)
    assert job.summary["gpu_samples_missing"] == 0 and "warning" not in job.stderr


def test_memory_nvml_cannot_tell_is_left_out_not_guessed(node, tmp_path):
    node.start(period=0.2)
    job = gpu_job(node, tmp_path, 1.5, lambda pid: {1: [(pid, (1 << 64) - 1)]},
                  CUDA_VISIBLE_DEVICES="1")
    late = [s for s in job.samples if s["elapsed_seconds"] > 1.0 and s["procs"]]
    assert late and all("gpu_mem_bytes" not in s for s in late)
    assert all(s.get("gpu_mem_bytes", 0) < GIB for s in job.samples)


def test_energy_is_interpolated_at_the_jobs_start_and_end(node, tmp_path):
    """At a 1 s refresh, energy taken from the nearest reading would be off by up to
    350 J at each end; interpolated between readings, it is power x the job's time."""
    node.start(period=1.0)
    job = gpu_job(node, tmp_path, 2.5, lambda pid: {}, CUDA_VISIBLE_DEVICES="1")
    s = job.summary
    assert s["gpu_util_avg_percent"] == 98                   # index 1 is the 350 W GPU
    window = s["gpu_energy_joules"] / 350.0                  # seconds the probe measured
    assert s["wall_seconds"] - 0.3 < window <= s["wall_seconds"] + 0.01, (window, s)
    energy = [x["gpu_energy_joules"] for x in job.samples if "gpu_energy_joules" in x]
    assert energy == sorted(energy) and energy[-1] <= s["gpu_energy_joules"]
    assert len(energy) >= len(job.samples) - 12           # in (nearly) every sample


def test_indices_count_only_the_gpus_the_job_may_open(node, tmp_path):
    """Slurm with ConstrainDevices numbers a job's GPUs from 0: a real v1 device cgroup that
    denies /dev/nvidia1 (GPU index 0) makes CUDA_VISIBLE_DEVICES=0 the node's GPU 1."""
    devices = "/sys/fs/cgroup/devices"
    if not os.path.exists(os.path.join(devices, "devices.deny")):
        pytest.skip("no cgroup v1 devices controller")
    node.start(period=0.2)
    cg = os.path.join(devices, f"jobmon-gpu-test-{os.getpid()}")
    os.mkdir(cg)
    try:
        with open(os.path.join(cg, "devices.deny"), "w") as f:
            f.write("c 195:1 rwm\n")                         # GPU index 0 is /dev/nvidia1
        wrap = ["sh", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$@"', "sh"]
        constrained = node.job(str(tmp_path), ["sleep", "0.5"], wrap=wrap,
                               env=node.env(CUDA_VISIBLE_DEVICES="0")).done()
        everything = node.job(str(tmp_path), ["sleep", "0.5"], wrap=wrap).done()
    finally:
        os.rmdir(cg)
    free = node.job(str(tmp_path), ["sleep", "0.5"], env=node.env(CUDA_VISIBLE_DEVICES="0")).done()
    assert constrained.summary["gpu_util_avg_percent"] == 98       # the node's GPU 1
    assert free.summary["gpu_util_avg_percent"] == 37               # unconstrained: GPU 0
    assert everything.summary["gpu_count"] == 1 and free.summary["gpu_count"] == 1


@pytest.mark.parametrize("visible, count, util", [
    (None, 2, 67.5), ("1,0,1", 2, 67.5), ("GPU-b08d", 1, 98), ("0,7,1", 1, 37),
    ("NoDevFiles", 0, None), ("", 0, None)])
def test_cuda_visible_devices(node, tmp_path, visible, count, util):
    node.start(period=0.2)
    env = node.env() if visible is None else node.env(CUDA_VISIBLE_DEVICES=visible)
    job = node.job(str(tmp_path), ["sleep", "0.4"], env=env).done()
    assert job.summary["gpu_count"] == count
    assert job.summary["gpu_util_avg_percent"] == util


def test_a_job_without_gpus_reads_nothing(node, tmp_path):
    """CUDA_VISIBLE_DEVICES="" costs no read: it even does without a reader."""
    job = node.job(str(tmp_path), ["sleep", "0.3"], env=node.env(CUDA_VISIBLE_DEVICES="")).done()
    assert all(s["gpu_count"] == 0 for s in job.samples)
    assert job.summary["gpu_samples_missing"] == 0 and "warning" not in job.stderr


def test_mig_slice_by_uuid_memory_only(tmp_path, other):
    node = GpuNode("a100_mig.json")
    try:
        node.start(period=0.2)
        pidfile = str(tmp_path / "pid")
        job = node.job(str(tmp_path), [PYTHON, "-c", TELL_PID, pidfile, "1.5"],
                       env=node.env(CUDA_VISIBLE_DEVICES="MIG-c4d9e1f2"))
        pid = int(wait_for_file(pidfile))
        mig = node.rec["devices"][0]["mig_devices"]
        mig[0]["processes"] = [[other.pid, 4 * GIB, 1, 0]]
        mig[1]["processes"] = [[pid, 2 * GIB, 5, 0], [other.pid, GIB, 5, 0]]
        node.write()
        job.done()
    finally:
        node.close()
    assert job.summary["gpu_count"] == 1 and job.summary["gpu_mem_peak_bytes"] == 2 * GIB
    assert all("gpu_util_percent" not in s and "gpu_energy_joules" not in s
               for s in job.samples)                 # per-instance: not given by NVML
    assert job.summary["gpu_energy_joules"] is None


def test_reader_down_mid_job_no_guesses_one_warning(node, tmp_path):
    node.start(period=0.2)
    job = node.job(str(tmp_path), ["sleep", "2.5"], env=node.env(CUDA_VISIBLE_DEVICES="0"))
    time.sleep(1.0)
    node.reader.send_signal(signal.SIGKILL)        # the file stays, and ages
    killed = time.time()
    job.done()
    with_gpu = [s for s in job.samples if "gpu_util_percent" in s]
    without = [s for s in job.samples if "gpu_util_percent" not in s]
    assert with_gpu and without
    assert all(s["time"] / 1e9 <= killed + 2 * 0.2 + 0.05 for s in with_gpu)   # 2 periods
    assert job.summary["gpu_samples_missing"] == len(without)
    assert job.stderr.count("warning") == 0 and job.stderr.count("no GPU metrics") == 1
    assert "old" in job.stderr


def test_no_reader_running_measured_without_gpus(node, tmp_path):
    job = node.job(str(tmp_path), ["sleep", "0.5"]).done()       # the directory, no file
    assert all(not any(k.startswith("gpu_") for k in s) for s in job.samples)
    assert job.summary["gpu_samples_missing"] == job.summary["samples"]
    assert job.summary["gpu_count"] is None and job.stderr.count("no GPU metrics") == 1


def test_pid_namespaces_match_by_nspid_and_start_time(node, tmp_path):
    """jobmon inside its own PID namespace: its job's pid N is not the node's pid N, nor
    pid N of another namespace (a decoy holding 5 GiB); the reader's NSpid and start time
    tell them apart."""
    unshare = shutil.which("unshare")
    if not unshare:
        pytest.skip("no unshare")
    decoy = subprocess.Popen([unshare, "--pid", "--fork", "--mount-proc", "sh", "-c",
                              "for i in 1 2 3 4 5 6; do sleep 60 & done; wait"])
    decoy_init = None
    try:
        while not decoy_init:
            decoy_init = children(decoy.pid)
        decoy_init = decoy_init[0]                         # its namespace's pid 1
        node.start(period=0.2)
        pidfile = str(tmp_path / "pid")
        job = node.job(str(tmp_path), [PYTHON, "-c", TELL_PID, pidfile, "2"],
                       wrap=[unshare, "--pid", "--fork", "--mount-proc"],
                       env=node.env(CUDA_VISIBLE_DEVICES="0"))
        n = int(wait_for_file(pidfile))                    # the job's pid in its namespace
        host = [p for p in proc_pids() if pidfile.encode() in cmdline(p) and ns_pids(p)[1:] == [n]]
        assert len(host) == 1                              # the job's pid on the node
        twin = [p for p in children(decoy_init) if ns_pids(p)[1:] == [n]]
        assert len(twin) == 1                              # the decoy's pid N
        node.set_procs(0, [(n, 7 * GIB), (twin[0], 5 * GIB), (host[0], GIB)])
        job.done()
    finally:
        if decoy_init:
            os.kill(decoy_init, signal.SIGKILL)            # the namespace goes with it
        decoy.wait()
    mem = [s["gpu_mem_bytes"] for s in job.samples if "gpu_mem_bytes" in s]
    assert job.summary["gpu_mem_peak_bytes"] == GIB and set(mem) <= {0, GIB}


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def proc_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def ns_pids(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return [int(x) for x in re.search(r"^NSpid:\s+(.*)$", f.read(), re.M).group(1).split()]
    except OSError:
        return []


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


@pytest.mark.parametrize("tamper, why", [
    ("file_owner", "not a file of the reader's user"),
    ("file_mode", "not a file of the reader's user"),
    ("dir_mode", "writable by others than its owner"),
    ("symlink", "Too many levels of symbolic links"),
    ("parent_owner", "not root"),
    (None, None)])
def test_jobs_trust_only_what_the_readers_user_alone_could_write(node, tmp_path, tamper, why):
    r = subprocess.run([JOBMON, "gpu-reader", f"--dir={node.dir}", f"--recorded={node.recording}",
                        "--once"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    if tamper == "file_owner":
        os.chown(node.file, 65534, 65534)
    elif tamper == "file_mode":
        os.chmod(node.file, 0o666)
    elif tamper == "dir_mode":
        os.chmod(node.dir, 0o757)
    elif tamper == "symlink":
        os.rename(node.file, os.path.join(node.base, "elsewhere.json"))
        os.symlink(os.path.join(node.base, "elsewhere.json"), node.file)
    elif tamper == "parent_owner":
        os.chown(node.base, 65534, 65534)
    job = node.job(str(tmp_path), ["sleep", "0.2"], env=node.env(CUDA_VISIBLE_DEVICES="0")).done()
    if tamper is None:
        assert job.summary["gpu_util_avg_percent"] == 37 and "warning" not in job.stderr
    else:
        assert job.summary["gpu_util_avg_percent"] is None
        assert why in job.stderr and job.stderr.count("no GPU metrics") == 1


def test_a_directory_squatted_in_tmp_is_refused(tmp_path):
    squat = shared_tmpdir("jobmon-gpu-squat-")      # straight in sticky /tmp, like a user's
    try:
        os.chmod(squat, 0o755)
        r = subprocess.run([JOBMON, "gpu-reader", f"--dir={squat}", "--once",
                            "--recorded=" + os.path.join(os.path.dirname(__file__), "fixtures",
                                                         "gpu", "h100x2.json")],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "jobs will not trust" in r.stderr
        out = tmp_path / "s.jsonl"
        r = subprocess.run([JOBMON, "run", f"--out={out}", "--store=none", "--", "true"],
                           env=dict(os.environ, JOBMON_GPU="node", JOBMON_GPU_DIR=squat),
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "/tmp is writable by others than root" in r.stderr
        assert "gpu_" not in out.read_text()
    finally:
        shutil.rmtree(squat)


@needs_test_user
def test_reader_as_a_service_user_and_a_job_of_another_user(tmp_path):
    """The deployment: the reader runs as its own user, jobs as theirs; the job's user
    cannot write into the reader's directory."""
    node = GpuNode(reader_user=TEST_USER)
    try:
        node.start(period=0.2)
        assert os.stat(node.file).st_uid == os.stat(node.dir).st_uid != 0
        d = shared_tmpdir()
        out = os.path.join(d, "s.jsonl")
        r = subprocess.run(as_user([JOBMON, "run", f"--out={out}", "--store=none", "--",
                                    "sleep", "0.3"], "jobmon-test2"),
                           env=node.env(CUDA_VISIBLE_DEVICES=UUID1), capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
        assert '"gpu_util_percent":98' in open(out).read()
        w = subprocess.run(as_user(["sh", "-c", f"echo '{{}}' > {node.dir}/gpus.json"],
                                   "jobmon-test2"), capture_output=True, text=True)
        assert w.returncode != 0 and "Permission denied" in w.stderr
        shutil.rmtree(d)
    finally:
        node.close()


@pytest.mark.parametrize("mode, warns, gpu", [
    ("nvml", False, False), ("off", False, False), ("auto", False, True),
    ("node", False, True), ("bogus", True, False)])
def test_jobmon_gpu_setting(node, tmp_path, mode, warns, gpu):
    node.start(period=0.2)
    job = node.job(str(tmp_path), ["sleep", "0.3"], env=node.env(JOBMON_GPU=mode)).done()
    assert ("gpu_count" in job.samples[-1]) == gpu   # nvml: this node has no driver
    assert ("JOBMON_GPU" in job.stderr) == warns


def test_no_reader_directory(tmp_path):
    env = dict(os.environ, JOBMON_GPU_DIR=str(tmp_path / "none"))
    for mode, warning in (("auto", 0), ("node", 1)):
        out = tmp_path / f"{mode}.jsonl"
        r = subprocess.run([JOBMON, "run", f"--out={out}", "--store=none", "--", "true"],
                           env=dict(env, JOBMON_GPU=mode), capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and r.stderr.count("no node reader") == warning, r.stderr
        assert "gpu_" not in out.read_text()


def test_the_job_side_loads_neither_nvml_nor_the_reader(node, tmp_path):
    node.start(period=0.2)
    r = subprocess.run([sys.executable, "-X", "importtime", JOBMON, "run", "--store=none",
                        f"--out={tmp_path / 's.jsonl'}", "--", "sleep", "0.3"],
                       env=node.env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    loaded = set(re.findall(r"\|\s+([\w.]+)$", r.stderr, re.M))
    assert "jobmon.probes.gpu_node" in loaded and "json" in loaded
    assert not {m for m in loaded if m.startswith(("jobmon.node", "jobmon.probes.nvml",
                                                   "typer"))}
    assert '"gpu_util_percent":67.5' in (tmp_path / "s.jsonl").read_text()


def test_a_gpu_jobs_spooled_lines_pass_the_shippers_check(node, tmp_path):
    """The GPU fields and the summary's gpu_samples_missing are typed as the shipper's line
    check expects: a GPU job's spool file is sent, not quarantined."""
    from jobmon.influx import grammar
    spool = tmp_path / "spool"
    spool.mkdir()
    os.chmod(spool, 0o3733)
    cfg = tmp_path / "jobmon.toml"
    cfg.write_text(f'[store]\nkind = "influxdb"\n[spool]\ndir = "{spool}"\n')
    node.start(period=0.2)
    r = subprocess.run([JOBMON, "run", "--interval=0.1", "--", "sleep", "0.5"],
                       env=node.env(JOBMON_CONFIG=str(cfg)), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    lines = b"".join(p.read_bytes() for p in spool.iterdir() if p.name.endswith(".lp"))
    assert b"gpu_util_percent=67.5" in lines and b"gpu_samples_missing=0i" in lines
    assert grammar.Checker().first_bad(lines) is None


def test_energy_needs_a_reading_before_the_start_and_a_counter_that_never_goes_back():
    from jobmon.probes.gpu_node import Energy, interpolate
    assert interpolate([(1.0, 100), (3.0, 300)], 2.5) == 250
    assert interpolate([(1.0, 100)], 2.5) is None            # nothing after 2.5 yet
    e = Energy(["GPU-a"], t0=10.0)
    e.feed({"GPU-a": {"energy_prev": [9.5, 1000], "energy": [10.5, 2000]}})
    assert e.base == {"GPU-a": 1500} and e.joules() == 0.5
    e.feed({"GPU-a": {"energy_prev": [10.5, 2000], "energy": [11.5, 900]}})   # reloaded
    assert e.lost and e.joules() is None
    late = Energy(["GPU-a"], t0=10.0)                        # the reader was down at the start
    late.feed({"GPU-a": {"energy_prev": [10.2, 1000], "energy": [11.2, 2000]}})
    assert "before the job started" in late.lost and late.joules() is None


@pytest.mark.parametrize("period,seconds", [(1.0, 1), (1.0, 2.5), (0.2, 2), (1.0, 5)])
def test_short_jobs_gpu_energy_lies_within_its_bound(node, tmp_path, period, seconds):
    """The recorded 350 W GPU: the truth is 350 W x the job's wall time, from its start
    (before its sampler's probe was made) to its end. The figure is that within 2 %; the
    bound, what interpolating the counter at each end can misplace, holds it and is at
    most one refresh interval's energy at each end (docs/energy.md)."""
    node.start(period=period)
    job = gpu_job(node, tmp_path, seconds, lambda pid: {}, CUDA_VISIBLE_DEVICES="1")
    s = job.summary
    figure, bound, truth = s["gpu_energy_joules"], s["gpu_energy_error_joules"], \
        350.0 * s["wall_seconds"]
    print(f"\ngpu: period {period} s, job {s['wall_seconds']:.2f} s: figure {figure:.1f} J, "
          f"truth {truth:.1f} J, bound ± {bound:.1f} J")
    assert abs(figure - truth) <= min(bound, 0.02 * truth), (figure, truth, bound)
    assert 0 < bound <= 2 * 350.0 * period * 1.05, bound
    assert s["energy_error_joules"] == bound
    assert s["energy_method"] == ("gpu: NVML energy counter, interpolated at the job's start "
                                  "and end between the node reader's readings")
