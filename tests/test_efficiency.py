"""What a job was given and what it used of it: the allocation, efficiency, canonical-unit
and suspect fields every end-of-job summary carries (core/summary/efficiency.py and the
fold in core/summary/fold.py), from hand-checked numbers, recorded cgroup files and real jobs in real cgroups."""
import json
import os
import subprocess
import time

import pytest

from helpers import JOBMON, PYTHON, cgroup_tree, job_cgroup, jobmon_run, load_json, py
from jobmon.summary import efficiency as eff
from jobmon.influx import grammar, schema
from jobmon.summary.advice import advise
from jobmon.report import job_efficiency
from jobmon.report.model import DEFAULT_CFG
from jobmon.summary import Fold

GIB = 1 << 30
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (real cgroups)")


def job_of(cores, mem_gib, used_cores, peak_gib, hours=1.0, **extra):
    wall = hours * 3600
    summary = {"wall_seconds": wall, "cpu_user_seconds": used_cores * wall,
               "cpu_system_seconds": 0.0, "rss_peak_bytes": int(peak_gib * GIB),
               "exit_code": 0, "signal": None}
    summary.update(extra)
    alloc = eff.allocation({"RequestCpus": str(cores), "RequestMemory": str(mem_gib * 1024)})
    return eff.figures(summary, alloc)


@pytest.mark.parametrize("cores, mem, used, peak, idle_units, by", [
    (4, 4, 1, 1, 1, "memory"),   # 3 cores + 3 GB idle: 1 unit, memory-limited
    (4, 2, 1, 1, 0, "memory"),   # 3 cores + 1 GB idle: 0
    (3, 7, 1, 1, 2, "cores"),    # 2 cores + 6 GB idle: 2, core-limited
])
def test_osg_examples_in_the_summary(cores, mem, used, peak, idle_units, by):
    f = job_of(cores, mem, used, peak)
    assert f["idle_canonical_core_hours"] == idle_units
    assert f["idle_limited_by"] == by
    assert f["idle_core_hours"] == cores - used
    assert f["provisioned_core_hours"] == cores and f["used_core_hours"] == used
    assert f["canonical_units"] == max(cores, mem / 2)
    assert f["cpu_efficiency_percent"] == pytest.approx(100 * used / cores, abs=0.005)
    assert f["mem_efficiency_percent"] == pytest.approx(100 * peak / mem, abs=0.005)
    assert (f["outcome"], f["outcome_reason"]) == ("goodput", "completed (exit code 0)")


def test_gpu_hours_are_time_and_idle_share_is_utilization():
    f = job_of(1, 2, 1, 1, hours=2, gpu_util_avg_percent=25.0)
    assert f["gpu_hours"] is None   # no GPUs known
    alloc = eff.allocation({"RequestGPUs": "2", "GPUsProvisioned": "2"})
    f = eff.figures({"wall_seconds": 7200, "gpu_util_avg_percent": 25.0}, alloc)
    assert f["gpu_hours"] == 4 and f["idle_gpu_hours"] == 3


def test_allocation_prefers_provisioned_then_the_kernel_then_the_request():
    tags = {"RequestCpus": "2", "RequestMemory": "ifThenElse(x, 1, 2)", "CpusProvisioned": "4",
            "request_memory": "3GiB"}
    a = eff.allocation(tags, {"cores": 1.0, "memory_bytes": 5 * GIB})
    # an unevaluated expression is not a number; the --tag form is the request then
    assert a["cores_requested"] == 2 and a["cores_allocated"] == 4
    assert a["mem_requested_bytes"] == 3 * GIB and a["mem_allocated_bytes"] == 5 * GIB
    a = eff.allocation({"request_cpus": "2"}, {})
    assert a["cores_allocated"] == 2 and a["mem_allocated_bytes"] is None
    assert eff.allocation({}, {}, gpu_count=2)["gpus_allocated"] == 2
    assert eff.allocation({"RequestCpus": "-1", "request_cpus": "nan"})["cores_requested"] is None


@pytest.mark.parametrize("text, n", [("4GiB", 4 * GIB), ("4096MB", 4 << 30), ("2.5G", int(2.5 * GIB)),
                                     ("1073741824", GIB), (" 512 mib ", 512 << 20),
                                     ("4 parsecs", None), ("", None), ("G", None)])
def test_size_bytes(text, n):
    assert eff.size_bytes(text) == n


def test_cgroup_limit_files_as_the_kernel_writes_them():
    assert eff.cgroup_memory_limit("max\n") is None
    assert eff.cgroup_memory_limit("536870912\n") == 512 << 20
    assert eff.cgroup_memory_limit("9223372036854771712\n") is None   # v1: no limit
    assert eff.cgroup_cpu_quota(b"max", b"100000") is None
    assert eff.cgroup_cpu_quota(b"250000", b"100000") == 2.5
    assert eff.cgroup_cpu_quota(b"-1", b"100000") is None


def test_outcome_from_the_exit_status():
    assert eff.exit_outcome(1, None) == ("badput", "failed (exit code 1)")
    assert eff.exit_outcome(None, 9) == ("badput", "killed by SIGKILL")
    assert eff.exit_outcome(None, None)[0] is None


def test_the_peak_that_sizes_a_job_never_misses_a_spike_the_kernel_kept():
    MiB = 1 << 20
    s = {"rss_peak_bytes": 50 * MiB, "mem_peak_bytes": 80 * MiB}
    assert eff.sizing_basis(s) == eff.RESIDENT              # reaped: each process's mark
    assert eff.sizing_basis(s, reaped=False) == eff.KERNEL   # sampled only: the kernel's
    assert eff.sizing_basis({"rss_peak_bytes": 5 * MiB}, reaped=False) == eff.SAMPLED
    assert eff.sizing_peak(dict(s, mem_sizing_basis="kernel")) == (80 * MiB, eff.KERNEL)
    # a Slurm sampler's summary from before the basis: sized by the kernel's peak
    old = dict(s, tags={"measured": "job-cgroup", "job_id": "7"}, outcome="goodput",
               mem_efficiency_percent=5.0, wall_seconds=10.0)
    assert eff.sizing_peak(old) == (80 * MiB, eff.KERNEL)
    figures = job_efficiency.efficiency_of(dict(old, mem_allocated_bytes=4096 * MiB,
                                                cores_allocated=1.0))
    assert figures["mem_efficiency_percent"] == 1.95 and figures["mem_sizing_basis"] == "kernel"
    adv = {a["rule"]: a["text"] for a in advise(dict(old, **figures), DEFAULT_CFG)}
    assert adv["memory_overrequested"] == \
        "kernel peak (page cache incl.) 80.0 MiB of 4 GiB memory: ask for 512 MiB"


def _fold(mem, cores=1.0, step=10.0):
    f = Fold()
    for i, m in enumerate(mem):
        f.add({"elapsed_seconds": i * step, "mem_resident_bytes": m, "cpu_cores": cores,
               "procs": 1})
    return f.totals()


def test_a_job_no_sample_saw_had_a_thread():
    """A job over before jobmon's first sample (`sleep 0.3` while jobmon starts under
    emulation, in a v2 cgroup whose pids peak of 2 was the exec trampoline's moment, so
    not the job's): its one process had a thread (seen: threads_max 0, procs_max 1)."""
    f = Fold()
    f.add({"elapsed_seconds": 0.9, "procs": 0, "threads": 0})
    s = f.totals(tasks_peak=None)
    assert (s["procs_max"], s["threads_max"]) == (1, 1), s


def test_suspects_leak_idle_and_flat():
    leak = _fold([(100 << 20) + i * (10 << 20) for i in range(20)])
    assert leak["mem_rising"] == 1
    assert leak["mem_growth_bytes_per_hour"] == pytest.approx((10 << 20) * 360)
    flat = _fold([(100 << 20) + (i % 3) * (1 << 20) for i in range(40)], cores=0.0)
    assert flat["mem_rising"] == 0 and flat["cpu_idle_samples"] == 40
    short = _fold([(100 << 20) + i * (50 << 20) for i in range(5)])   # too few samples
    assert short["mem_rising"] == 0 and short["mem_growth_bytes_per_hour"] > 0
    # a leak whose exit is sampled while its memory goes: the teardown is left out
    torn = _fold([(100 << 20) + i * (10 << 20) for i in range(20)] + [4 << 20])
    assert torn["mem_rising"] == 1
    # grew at the start, then flat for long: not a leak
    early = _fold([(100 << 20) + min(i, 10) * (10 << 20) for i in range(60)])
    assert early["mem_rising"] == 0


def test_every_summary_field_passes_the_shippers_grammar(tmp_path):
    r = jobmon_run(["--store=none", f"--summary={tmp_path}/s.json", "--job-id=g1",
                    "--tag=request_cpus=2", "--tag=request_memory=1GiB"], ["true"])
    assert r.returncode == 0, r.stderr
    s = load_json(tmp_path / "s.json")
    for k in ("cpu_efficiency_percent", "canonical_units", "outcome", "cpu_idle_samples"):
        assert s[k] is not None, k
    job = {"job": "g1", "start_time": s["start_time"], "scheduler": "local", "tags": {}}
    line = schema.job_line(job, s).encode()
    assert grammar.valid(line) and b'outcome="goodput"' in line, line


def test_a_leaking_job_and_a_stalled_job(tmp_path):
    leak = py("import time\nx = []\nfor _ in range(30):\n"
              "    x.append(b\"\\1\" * (8 << 20)); time.sleep(0.05)")
    r = jobmon_run(["--store=none", "--interval=0.05", f"--summary={tmp_path}/leak.json",
                    "--cgroup=none"], leak)
    assert r.returncode == 0, r.stderr
    s = load_json(tmp_path / "leak.json")
    assert s["mem_rising"] == 1 and s["mem_growth_bytes_per_hour"] > 0, \
        {k: s[k] for k in ("samples", "rss_peak_bytes", "mem_growth_bytes_per_hour")}
    r = jobmon_run(["--store=none", "--interval=0.05", f"--summary={tmp_path}/idle.json",
                    "--cgroup=none"], ["sleep", "1"])
    s = load_json(tmp_path / "idle.json")
    assert s["cpu_idle_samples"] >= 10 and s["mem_rising"] == 0, s


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two CPUs")
def test_a_taskset_is_the_allocation(tmp_path):
    code = "import time\nt = time.time()\nwhile time.time() - t < 0.5: pass"
    r = subprocess.run(["taskset", "-c", "0", JOBMON, "run", "--store=none",
                        f"--summary={tmp_path}/s.json", "--", PYTHON, "-c", code],
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    s = load_json(tmp_path / "s.json")
    assert s["cores_allocated"] == 1.0 and s["cores_requested"] is None
    cpu = s["cpu_user_seconds"] + s["cpu_system_seconds"]
    assert s["cpu_efficiency_percent"] == pytest.approx(100 * cpu / s["wall_seconds"], abs=0.01)


@needs_root
@cgroup_tree
def test_a_cgroup_limit_is_the_allocation(tmp_path):
    """A job in a real cgroup of the host's version with a 256 MiB limit (and a 0.5-core
    quota: v2's cpu.max, or v1's where the cpu controller shares cpuacct's hierarchy): the
    summary's allocation is that, and its efficiency is against it."""
    cg = job_cgroup(f"jobmon-pytest-limits-{os.getpid()}", memory=256 << 20, cores=0.5)
    try:
        code = "import time\nx = b'1' * (64 << 20)\nt = time.time()\nwhile time.time() - t < 1: pass"
        p = subprocess.run([JOBMON, "run", "--store=none", "--cgroup=existing",
                            "--interval=0.2", f"--summary={tmp_path}/s.json", "--",
                            PYTHON, "-c", code], preexec_fn=cg.join, capture_output=True,
                           timeout=180)
        assert p.returncode == 0, p.stderr
        s = load_json(tmp_path / "s.json")
        assert s["method"] == f"cgroup-v{cg.version}", s["method"]
        assert s["mem_allocated_bytes"] == 256 << 20, s
        assert s["mem_efficiency_percent"] == pytest.approx(
            100 * s["rss_peak_bytes"] / (256 << 20), abs=0.01)
        assert s["rss_peak_bytes"] > 64 << 20
        if cg.quota:
            assert s["cores_allocated"] == 0.5 and 20 < s["cpu_efficiency_percent"] <= 110, s
    finally:
        time.sleep(0.05)
        cg.remove()


def test_the_json_summary_round_trips_through_the_embedded_store(tmp_path):
    store = tmp_path / "s.db"
    r = jobmon_run(["--job-id=rt1", "--tag=request_cpus=4"], ["true"], store=store)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([JOBMON, "query", "rt1", f"--store={store}", "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)["summary"]
    assert summary["cores_allocated"] == 4 and summary["outcome"] == "goodput"
