"""GPU metrics through the real NVML, with real CUDA work (PyTorch) as the job: in the
sampler (JOBMON_GPU=nvml) and through the node GPU reader (`jobmon gpu-reader`, the default).

Needs a node with an NVIDIA driver (and PyTorch for the workloads): skipped elsewhere. The
reader's tests also need root (the reader's directory must be root's to be trusted).
"""
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time

import pytest

from helpers import JOBMON, PYTHON, needs_root

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidiactl"),
                                reason="no NVIDIA driver on this node")

# holds `gib` GiB on the GPU and keeps it busy for `seconds`, then prints what CUDA holds
HOLD = """
import sys, time, torch
gib, seconds = float(sys.argv[1]), float(sys.argv[2])
x = torch.empty(int(gib * 2**30), dtype=torch.uint8, device="cuda")
a = torch.randn(4096, 4096, device="cuda")
end = time.monotonic() + seconds
while time.monotonic() < end:
    for _ in range(20):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
print(torch.cuda.memory_reserved(), flush=True)
"""


@pytest.fixture(scope="module")
def nvml():
    from jobmon.probes.nvml import Nvml
    n = Nvml()
    yield n
    n.close()


@pytest.fixture(params=["nvml", "node"])
def source(request):
    """Where the job's GPU figures come from: NVML in the sampler, or a real node reader."""
    if request.param == "nvml":
        yield {"JOBMON_GPU": "nvml"}
        return
    if os.geteuid() != 0:
        pytest.skip("the node reader's tests need root")
    base = tempfile.mkdtemp(prefix="jobmon-gpu-")          # root's, in sticky /tmp: trusted
    os.chmod(base, 0o755)
    d = os.path.join(base, "gpu")
    reader = subprocess.Popen([JOBMON, "gpu-reader", f"--dir={d}", "--period=0.2"],
                              stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 30
    while not os.path.exists(os.path.join(d, "gpus.json")):
        assert reader.poll() is None and time.monotonic() < end, reader.stderr.read()
        time.sleep(0.05)
    yield {"JOBMON_GPU": "node", "JOBMON_GPU_DIR": d}
    reader.terminate()
    reader.wait(10)
    shutil.rmtree(base)


def run_job(tmp_path, *cmd, env=None):
    out = tmp_path / "samples.jsonl"
    summary = tmp_path / "summary.json"
    env = dict(os.environ, **(env or {}))
    env.setdefault("JOBMON_GPU", "nvml")
    r = subprocess.run([JOBMON, "run", "--interval=0.2", f"--out={out}", f"--summary={summary}",
                        f"--store={tmp_path / 'store.db'}", "--", *cmd],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    samples = [json.loads(line) for line in out.read_text().splitlines()]
    return r, samples, json.loads(summary.read_text())


def test_devices_follow_cuda_visible_devices(nvml):
    from jobmon.probes.nvml import job_devices
    n = nvml.count()
    assert n >= 1
    assert len(job_devices(nvml, None)) == n
    assert job_devices(nvml, "") == [] and job_devices(nvml, "NoDevFiles") == []
    uuid = nvml.uuid(nvml.handle(0))
    assert uuid.startswith("GPU-")
    assert [nvml.uuid(h) for h in job_devices(nvml, uuid)] == [uuid]
    assert [nvml.uuid(h) for h in job_devices(nvml, "0")] == [uuid]


def test_gpu_memory_utilization_and_energy_of_a_cuda_job(tmp_path, source):
    pytest.importorskip("torch")
    r, samples, summary = run_job(tmp_path, PYTHON, "-c", HOLD, "2", "3", env=source)
    reserved = int(r.stdout.split()[-1])
    assert reserved >= 2 * 2**30
    peak = max(s.get("gpu_mem_bytes", 0) for s in samples)
    # NVML's per-process figure is CUDA's allocations plus the context (a few 100 MiB)
    assert reserved <= peak <= reserved + 2**30, (reserved, peak)
    assert summary["gpu_mem_peak_bytes"] == peak
    assert max(s.get("gpu_util_percent", 0) for s in samples) >= 50
    assert summary["gpu_util_avg_percent"] > 10
    energy = [s["gpu_energy_joules"] for s in samples if "gpu_energy_joules" in s]
    assert "gpu_energy_joules" in samples[-1]                 # read once the job is over
    assert energy == sorted(energy) and energy[-1] > 50       # an H100 idles at ~70 W
    if source["JOBMON_GPU"] == "nvml":
        assert summary["gpu_energy_joules"] == energy[-1]
    else:      # the reader's: interpolated to the job's end, after the last sample
        assert energy[-1] <= summary["gpu_energy_joules"] <= energy[-1] + 700 * 0.5
    # its bound: the power limit (700 W at most on an H100 or H200) x the time to the
    # sampler's first read of the counter (nvml); one 0.2 s refresh at each end (reader)
    bound = summary["gpu_energy_error_joules"]
    assert 0 < bound <= (700 * 0.5 if source["JOBMON_GPU"] == "nvml" else 2 * 700 * 0.2 * 1.1)
    assert summary["gpu_count"] == 1 and all(s["gpu_count"] == 1 for s in samples)
    assert summary["gpu_samples_missing"] == 0


def test_another_process_on_the_gpu_is_not_the_jobs(tmp_path, source):
    pytest.importorskip("torch")
    other = subprocess.Popen([PYTHON, "-c", HOLD, "1", "8"], stdout=subprocess.PIPE)
    try:
        time.sleep(4)     # CUDA start-up, then its gigabyte is held
        assert other.poll() is None
        _r, samples, summary = run_job(tmp_path, "sleep", "1", env=source)
    finally:
        other.kill()
        other.wait()
    assert all(s["gpu_mem_bytes"] == 0 for s in samples)
    assert summary["gpu_mem_peak_bytes"] == 0


def test_a_job_without_gpus_gets_no_gpu_readings(tmp_path, source):
    _r, samples, summary = run_job(tmp_path, "sleep", "0.5",
                                   env=dict(source, CUDA_VISIBLE_DEVICES=""))
    assert all(s["gpu_count"] == 0 and "gpu_util_percent" not in s for s in samples)
    assert summary["gpu_count"] == 0 and summary["gpu_mem_peak_bytes"] is None


@needs_root
def test_reader_publishes_the_nodes_gpus_by_uuid_and_minor(nvml, source, tmp_path):
    if source["JOBMON_GPU"] != "node":
        pytest.skip("the reader's file")
    with open(os.path.join(source["JOBMON_GPU_DIR"], "gpus.json")) as f:
        lines = [json.loads(line) for line in f]           # a header, then a line per GPU
    assert lines[0]["format"] == 1 and len(lines) - 1 == nvml.count()
    for g in lines[1:]:
        h = nvml.handle(g["index"])
        assert g["uuid"] == nvml.uuid(h) and g["minor"] == nvml.minor(h)
        st = os.stat(f"/dev/nvidia{g['minor']}")          # the device node of that GPU
        assert stat.S_ISCHR(st.st_mode) and os.minor(st.st_rdev) == g["minor"]
        assert g["energy"] and g["mem_total"] > 0
        assert g["mig"] or g["util"] is not None


@needs_root
def test_a_recording_of_the_real_nvml_publishes_the_same_gpus(nvml, tmp_path):
    """`--record` on a GPU node: the fixtures of tests/fixtures/gpu can be re-recorded."""
    rec = tmp_path / "rec.json"
    r = subprocess.run([JOBMON, "gpu-reader", f"--record={rec}"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    data = json.loads(rec.read_text())
    assert [d["uuid"] for d in data["devices"]] == \
        [nvml.uuid(nvml.handle(i)) for i in range(nvml.count())]
    assert all(d["power_mw"] > 10000 for d in data["devices"] if "power_mw" in d)   # > 10 W
    base = tempfile.mkdtemp(prefix="jobmon-gpu-")
    try:
        os.chmod(base, 0o755)
        r = subprocess.run([JOBMON, "gpu-reader", f"--dir={base}/gpu", f"--recorded={rec}",
                            "--once"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        with open(f"{base}/gpu/gpus.json") as f:
            assert [json.loads(line)["uuid"] for line in f][1:] == \
                [d["uuid"] for d in data["devices"]]
    finally:
        shutil.rmtree(base)
