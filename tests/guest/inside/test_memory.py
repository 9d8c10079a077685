"""Memory on cgroup v2 through the real probe and the real `jobmon run`: anonymous memory,
shmem (tmpfs) and file cache told apart from memory.stat, the peak from memory.peak."""
import json
import os
import subprocess

import jobrun
from jobrun import MiB

from jobmon import cgroups
from jobmon.probes import select

ANON, SHM, FILE = 48 * MiB, 32 * MiB, 64 * MiB


def test_anon_shmem_and_cache_told_apart(raw_guest, ext4):
    """shmem is resident (it cannot be dropped like cache), though memory.stat puts it in
    "file"; clean page cache of a real file is cache, not resident."""
    cg = cgroups.create(f"jobmon-kinds-{os.getpid()}", prefer=2)
    assert cg is not None and cg.version == 2
    p = subprocess.Popen(jobrun.job("memory_kinds", ext4, ANON, SHM, FILE),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, preexec_fn=cg.join)
    probe = None
    try:
        own = json.loads(p.stdout.readline())   # RssAnon etc. of the job's one process
        probe = select(cgroups=cg)
        v = probe.read()
        with open(os.path.join(cg.dirs["v2"], "memory.stat")) as f:
            raw = f.read()
        assert v["mem_resident_bytes"] >= own["RssAnon"] + SHM, (v, own, raw)
        assert v["mem_resident_bytes"] <= own["RssAnon"] + SHM + 8 * MiB, (v, own, raw)
        assert FILE <= v["mem_cache_bytes"] <= FILE + 16 * MiB, (v, raw)
    finally:
        p.stdin.close()
        p.wait(timeout=60)
        if probe:
            probe.close()
        cg.remove()


def test_mem_peak_from_memory_peak_between_samples(raw_guest):
    """A 96 MiB spike of 0.3 s that no sample sees (it waits for the first sample; the next
    is the final one): mem_peak_bytes is the kernel's high-water mark of the job's cgroup."""
    r, t = jobrun.run_tree(["--cgroup=create", "--cgroup-version=2"], interval=60,
                           spike_after_first_sample=True)
    assert r.summary["method"] == "cgroup-v2"
    assert all(x.get("mem_resident_bytes", 0) < t.spike for x in r.samples), r.samples
    assert t.spike <= r.summary["mem_peak_bytes"] <= t.spike_hwm + 64 * MiB, \
        (r.summary["mem_peak_bytes"], t.spike, t.spike_hwm)


def test_report_names_each_figure_for_how_v2_gives_it(raw_guest):
    """`jobmon query --json` of a cgroup v2 job: the figures named and explained for v2
    (memory.stat anon + shmem, memory.peak); none below a figure it is defined to
    include."""
    r, t = jobrun.run_tree(["--cgroup=create", "--cgroup-version=2", "--job-id=v2-memory"],
                           interval=0.5)
    assert r.summary["method"] == "cgroup-v2"
    q = subprocess.run([jobrun.JOBMON, "query", "v2-memory", "--json",
                        f"--store={os.path.join(r.dir, 'store.db')}"],
                       capture_output=True, text=True, timeout=jobrun.TIMEOUT)
    assert q.returncode == 0, q.stderr
    rows = {m["name"]: m for m in json.loads(q.stdout)["memory"]}
    assert list(rows) == ["resident peak", "resident, sampled", "charged peak, sampled",
                          "kernel peak (cgroup)"]
    for m in rows.values():
        for inner in m["includes"]:
            assert m["value"] >= rows[inner]["value"], (m, rows[inner])
    assert rows["resident peak"]["value"] >= 0.9 * t.spike_hwm
    assert "memory.stat anon + shmem" in rows["resident, sampled"]["meaning"]
    assert "memory.peak" in rows["kernel peak (cgroup)"]["meaning"]
