"""What every probe promises (psutil's test_contracts idea): readings hold only fields of the
metric table, bytes and counts as ints, no negative numbers, and counters that never go
back over successive reads of a live job. Each probe is checked on what it measures:
procfs on a live tree and on the recorded tree, cgroup v1 on a real transient cgroup (as
root), cgroup v2 on the recorded fixture tree (this machine's cgroup2 has no controllers)."""
import os
import shutil
import subprocess
import sys
import time

import pytest

from jobmon import cgroups
from jobmon.metrics import COUNTERS, SAMPLE_NAMES, UNITS
from jobmon.probes import select
from jobmon.probes.cgroup_v2 import CgroupV2Probe
from jobmon.probes.procfs import ProcfsProbe

from helpers import cgroup_tree, fixture, job_cgroup, needs_root, root

# forks children that burn CPU, write and exit (reaped by their parent), for ~2 s
CHURN = r"""
import os, sys, time
path = sys.argv[1]
end = time.time() + 2.0
while time.time() < end:
    pid = os.fork()
    if pid == 0:
        t = time.process_time()
        while time.process_time() - t < 0.002:
            pass
        with open(path, "ab") as f:
            f.write(b"x" * 65536)
        os._exit(0)
    os.waitpid(pid, 0)
"""
TREE_ROOT = 25010   # the recorded tree's top process (tests/fixtures/record_proc.py)


def check_contract(reads):
    """reads: successive probe readings of one job."""
    assert len(reads) >= 2
    for r in reads:
        assert set(r) <= set(SAMPLE_NAMES), set(r) - set(SAMPLE_NAMES)
        for k, v in r.items():
            assert isinstance(v, (int, float)) and not isinstance(v, bool), (k, v)
            if UNITS[k] in ("bytes", "count"):
                assert isinstance(v, int), (k, v)
            assert v >= 0, (k, v)
    for before, after in zip(reads, reads[1:]):
        for k in COUNTERS:
            if k in before and k in after:
                assert after[k] >= before[k], (k, before[k], after[k])


def read_while_running(probe, p, n=100000):
    """Readings taken back to back while p runs (a race with every exit and reap)."""
    reads = []
    while p.poll() is None and len(reads) < n:
        reads.append(probe.read())
    return reads


def churn(tmp_path, preexec_fn=None):
    return subprocess.Popen([sys.executable, "-c", CHURN, str(tmp_path / "out")],
                            preexec_fn=preexec_fn)


def test_procfs_live_tree(tmp_path):
    p = churn(tmp_path)
    try:
        probe = ProcfsProbe(p.pid)
        reads = read_while_running(probe, p)
        check_contract(reads)
        assert reads[-1]["cpu_user_seconds"] + reads[-1]["cpu_system_seconds"] > 0.1
        assert reads[-1]["wchar_bytes"] >= 65536
        probe.close()
    finally:
        p.kill()
        p.wait()


def test_procfs_recorded_tree():
    for share in (None, 0.001):
        probe = ProcfsProbe(TREE_ROOT, proc=fixture("proc", "tree"), pss_share=share)
        check_contract([probe.read() for _ in range(3)])
        probe.close()


@root
@needs_root
@cgroup_tree
def test_cgroup_live(tmp_path):
    """The probe of the cgroup a root job gets here (v1 on a hybrid host, v2 on a pure v2
    one) keeps the contract on a real job."""
    cg = job_cgroup(f"jobmon-pytest-contract-{os.getpid()}")
    try:
        p = churn(tmp_path, cg.join)
        try:
            probe = select(cgroups=cg)
            assert probe.method == f"cgroup-v{cg.version}"
            reads = read_while_running(probe, p)
            check_contract(reads)
            assert reads[-1]["cpu_user_seconds"] + reads[-1]["cpu_system_seconds"] > 0.1
            probe.close()
        finally:
            p.kill()
            p.wait()
    finally:
        cg.remove()


@pytest.mark.parametrize("job", ["slurm/system.slice/slurmstepd.scope/job_4242",
                                 "htcondor/htcondor/condor_var_lib_condor_execute_slot1_1@host"])
def test_cgroup_v2_recorded(tmp_path, job):
    for name in ("slurm", "htcondor"):
        shutil.copytree(fixture("cgroup_v2", name), tmp_path / name)
    probe = CgroupV2Probe(cgroups.JobCgroups(2, {"v2": str(tmp_path / job)}))
    try:
        reads = [probe.read() for _ in range(3)]
        check_contract(reads)
        assert reads[0]["procs"] >= 1
    finally:
        probe.close()


def test_contract_catches_a_counter_going_back():
    """The check itself fails on what it is there to catch."""
    good = {"cpu_user_seconds": 1.0, "read_bytes": 10, "procs": 2}
    check_contract([good, dict(good, read_bytes=11)])
    for bad in (dict(good, read_bytes=9), dict(good, procs=2.0), dict(good, procs=-1),
                dict(good, nonsense=1)):
        with pytest.raises(AssertionError):
            check_contract([good, bad])


# writes 1 MiB to a file (dirty in the page cache: counted as written), then, once told,
# truncates it before writeback (the kernel cancels that write)
CANCEL = r"""
import os, sys
with open(sys.argv[1], "wb") as f:
    f.write(b"x" * (1 << 20))
print("written", flush=True)
sys.stdin.readline()
os.truncate(sys.argv[1], 0)
print("cancelled", flush=True)
sys.stdin.readline()
"""


def test_procfs_a_cancelled_write_takes_nothing_back(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", CANCEL, str(tmp_path / "out")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        probe = ProcfsProbe(p.pid)
        assert p.stdout.readline() == "written\n"
        before = probe.read()
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.stdout.readline() == "cancelled\n"
        after = probe.read()
        with open(f"/proc/{p.pid}/io") as f:
            cancelled = int(f.read().split("cancelled_write_bytes:")[1].split()[0])
        if before["write_bytes"] < 1 << 20 or cancelled < 1 << 20:
            pytest.skip("this filesystem does not account the write to the process")
        check_contract([before, after])
        probe.close()
    finally:
        p.kill()
        p.wait()
