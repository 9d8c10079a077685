"""GPU metrics through the real NVML, with real CUDA work (PyTorch) as the job.

Needs a node with an NVIDIA driver (and PyTorch for the workloads): skipped elsewhere.
"""
import json
import os
import subprocess
import time

import pytest

from helpers import JOBMON, PYTHON

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


def run_job(tmp_path, *cmd, env=None):
    out = tmp_path / "samples.jsonl"
    summary = tmp_path / "summary.json"
    r = subprocess.run([JOBMON, "run", "--interval=0.2", f"--out={out}", f"--summary={summary}",
                        f"--store={tmp_path / 'store.db'}", "--", *cmd],
                       env=dict(os.environ, **(env or {})), capture_output=True, text=True,
                       timeout=120)
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


def test_gpu_memory_utilization_and_energy_of_a_cuda_job(tmp_path):
    pytest.importorskip("torch")
    r, samples, summary = run_job(tmp_path, PYTHON, "-c", HOLD, "2", "3")
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
    assert summary["gpu_energy_joules"] == energy[-1]
    assert summary["gpu_count"] == 1 and all(s["gpu_count"] == 1 for s in samples)


def test_another_process_on_the_gpu_is_not_the_jobs(tmp_path):
    pytest.importorskip("torch")
    other = subprocess.Popen([PYTHON, "-c", HOLD, "1", "8"], stdout=subprocess.PIPE)
    try:
        time.sleep(4)     # CUDA start-up, then its gigabyte is held
        assert other.poll() is None
        _r, samples, summary = run_job(tmp_path, "sleep", "1")
    finally:
        other.kill()
        other.wait()
    assert all(s["gpu_mem_bytes"] == 0 for s in samples)
    assert summary["gpu_mem_peak_bytes"] == 0


def test_a_job_without_gpus_gets_no_gpu_readings(tmp_path):
    _r, samples, summary = run_job(tmp_path, "sleep", "0.5", env={"CUDA_VISIBLE_DEVICES": ""})
    assert all(s["gpu_count"] == 0 and "gpu_util_percent" not in s for s in samples)
    assert summary["gpu_count"] == 0 and summary["gpu_mem_peak_bytes"] is None
