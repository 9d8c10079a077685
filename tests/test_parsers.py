"""Recorded /proc and cgroup files fed through jobmon's real parsers (golden files).

Fixtures: tests/fixtures/README.md. Expected values are read off the fixture files by hand.
"""
import os

import pytest

from jobmon.probes import cgroup_v1, cgroup_v2, procfs
from jobmon.probes.files import keyed

from helpers import read_fixture

TICK = os.sysconf("SC_CLK_TCK")
MiB = 1 << 20

V2_SLURM_JOB = ("cgroup_v2", "slurm", "system.slice", "slurmstepd.scope", "job_4242")
V2_CONDOR_SLOT = ("cgroup_v2", "htcondor", "htcondor", "condor_var_lib_condor_execute_slot1_1@host")


# --- /proc/<pid>/stat -------------------------------------------------------------------------

def test_stat_recorded_comm_with_spaces_and_parens():
    data = read_fixture("proc", "1234", "stat")
    assert b"(my (odd) job) x)" in data  # the recorded comm really is hostile
    ppid, state, user, system, threads = procfs.parse_stat(data)
    assert (ppid, state, threads) == (4756, b"S", 1)
    # utime 0 + cutime 15 (its reaped child), stime 4 + cstime 14, in clock ticks
    assert user == pytest.approx(15 / TICK)
    assert system == pytest.approx(18 / TICK)


def test_stat_zombie_comm_of_parens():
    ppid, state, user, system, threads = procfs.parse_stat(read_fixture("proc", "zombie_stat"))
    assert (ppid, state, threads) == (1, b"Z", 1)
    assert user == pytest.approx((250 + 100) / TICK)
    assert system == pytest.approx((50 + 25) / TICK)


@pytest.mark.parametrize("comm", [b"a", b"a b", b")", b"((", b") S 1 2 3", b"x) R 99 (y",
                                  b" ", b"\xff\xfe"])
def test_stat_any_comm(comm):
    rest = b"S 42 1 1 0 -1 0 0 0 0 0 7 3 2 1 20 0 5 0 1 0 0"
    ppid, state, user, system, threads = procfs.parse_stat(b"9 (" + comm + b") " + rest + b"\n")
    assert (ppid, state, threads) == (42, b"S", 5)
    assert user == pytest.approx(9 / TICK) and system == pytest.approx(4 / TICK)


def test_stat_truncated_raises():
    # a process that vanished mid-read gives an empty or cut read: must raise, not misparse
    for data in (b"", b"12 (x", b"12 (x) S 1"):
        with pytest.raises((ValueError, IndexError)):
            procfs.parse_stat(data)


# --- /proc/<pid>/io ---------------------------------------------------------------------------

def test_io_recorded():
    assert procfs.parse_io(read_fixture("proc", "1234", "io")) == {
        "rchar_bytes": 765324, "wchar_bytes": 4194326,
        "read_bytes": 4096, "write_bytes": 4194304}


def test_io_cancelled_write_bytes_subtracted():
    data = (b"rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\n"
            b"write_bytes: 1048576\ncancelled_write_bytes: 65536\n")
    assert procfs.parse_io(data) == {"rchar_bytes": 10, "wchar_bytes": 20,
                                     "read_bytes": 4096, "write_bytes": 1048576 - 65536}


# --- /proc/<pid>/smaps_rollup -----------------------------------------------------------------

def test_smaps_rollup_recorded():
    resident, file, swap = procfs.parse_smaps_rollup(read_fixture("proc", "1234", "smaps_rollup"))
    assert resident == (37696 + 0) * 1024      # Pss_Anon + Pss_Shmem
    assert file == 2619 * 1024                  # Pss_File
    assert swap == 0
    # 32 MiB touched by the workload are resident
    assert resident >= 32 * MiB


def test_smaps_rollup_before_linux_5_9():
    resident, file, swap = procfs.parse_smaps_rollup(read_fixture("proc", "smaps_rollup_old"))
    assert (resident, file, swap) == (12345 * 1024, 0, 256 * 1024)


def test_smaps_rollup_shmem_counts_as_resident():
    data = b"Pss:  300 kB\nPss_Anon:  100 kB\nPss_File:  150 kB\nPss_Shmem:  50 kB\nSwapPss:  7 kB\n"
    assert procfs.parse_smaps_rollup(data) == (150 * 1024, 150 * 1024, 7 * 1024)


# --- cgroup v1 --------------------------------------------------------------------------------

def test_v1_cpuacct_recorded():
    total = int(read_fixture("cgroup_v1", "job", "cpuacct", "cpuacct.usage"))
    user = int(read_fixture("cgroup_v1", "job", "cpuacct", "cpuacct.usage_user"))
    system = int(read_fixture("cgroup_v1", "job", "cpuacct", "cpuacct.usage_sys"))
    assert (total, user, system) == (353477555, 159980895, 191998162)
    out = cgroup_v1.split_cpu(total, user, system)
    # the exact total is kept; user/sys only split it
    assert out["cpu_user_seconds"] + out["cpu_system_seconds"] == pytest.approx(total / 1e9)
    assert out["cpu_user_seconds"] == pytest.approx(total / 1e9 * user / (user + system))
    # the workload's child burnt 0.3 s of CPU
    assert 0.3 <= total / 1e9 < 1.0


def test_v1_split_cpu_no_split_available():
    out = cgroup_v1.split_cpu(5_000_000_000, 0, 0)
    assert out["cpu_user_seconds"] + out["cpu_system_seconds"] == pytest.approx(5.0)


def test_v1_memory_stat_recorded():
    out = cgroup_v1.parse_memory_stat(read_fixture("cgroup_v1", "job", "memory", "memory.stat"))
    # total_rss 38600704 + total_shmem 0; total_cache 4198400 - shmem; total_swap 0;
    # total_pgmajfault 0
    assert out == {"mem_resident_bytes": 38600704, "mem_cache_bytes": 4198400,
                   "mem_swap_bytes": 0, "mem_major_faults": 0}
    peak = int(read_fixture("cgroup_v1", "job", "memory", "memory.max_usage_in_bytes"))
    assert peak == 47624192 and peak >= out["mem_resident_bytes"] + out["mem_cache_bytes"]


def test_v1_memory_stat_uses_hierarchical_totals_and_shmem():
    data = (b"cache 100\nrss 200\nshmem 0\nswap 0\n"
            b"total_cache 10000\ntotal_rss 20000\ntotal_rss_huge 999999\ntotal_shmem 3000\n"
            b"total_mapped_file 4444\ntotal_swap 512\n")
    assert cgroup_v1.parse_memory_stat(data) == {
        "mem_resident_bytes": 23000, "mem_cache_bytes": 7000, "mem_swap_bytes": 512}


def test_v1_blkio_recorded():
    for name in ("blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_service_bytes"):
        out = cgroup_v1.parse_blkio(read_fixture("cgroup_v1", "job", "blkio", name))
        assert out == {"read_bytes": 4096, "write_bytes": 4210688}
        assert out["write_bytes"] >= 4 * MiB  # the workload fsync'ed 4 MiB


def test_v1_blkio_sums_devices_ignores_totals():
    data = (b"8:0 Read 100\n8:0 Write 200\n8:0 Sync 300\n8:0 Async 0\n8:0 Discard 7\n"
            b"8:0 Total 300\n8:16 Read 1000\n8:16 Write 2000\n8:16 Total 3000\nTotal 3300\n")
    assert cgroup_v1.parse_blkio(data) == {"read_bytes": 1100, "write_bytes": 2200}
    assert cgroup_v1.parse_blkio(b"Total 0\n") == {"read_bytes": 0, "write_bytes": 0}


def test_v1_pids_peak_recorded():
    # the workload (1 process) forked one child: peak 2, now 1
    assert int(read_fixture("cgroup_v1", "job", "pids", "pids.peak")) == 2
    assert int(read_fixture("cgroup_v1", "job", "pids", "pids.current")) == 1


# --- cgroup v2 --------------------------------------------------------------------------------

def test_v2_cpu_stat():
    out = cgroup_v2.parse_cpu_stat(read_fixture(*V2_SLURM_JOB, "cpu.stat"))
    assert out["cpu_user_seconds"] == pytest.approx(6.0)
    assert out["cpu_system_seconds"] == pytest.approx(1.5)


def test_v2_cpu_stat_without_cpu_controller():
    # a cgroup2 mount with no controllers (this machine) still has the three usage keys
    out = cgroup_v2.parse_cpu_stat(b"usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n")
    assert out == {"cpu_user_seconds": pytest.approx(1.0), "cpu_system_seconds": pytest.approx(0.5)}


def test_v2_cpu_stat_usage_is_the_total():
    # user/system are tick-sampled and may not add up to usage_usec: the total wins
    out = cgroup_v2.parse_cpu_stat(b"usage_usec 3000000\nuser_usec 1000000\nsystem_usec 1000000\n")
    assert out["cpu_user_seconds"] + out["cpu_system_seconds"] == pytest.approx(3.0)
    assert out["cpu_user_seconds"] == pytest.approx(1.5)


def test_v2_memory_stat_slurm_job():
    data = read_fixture(*V2_SLURM_JOB, "memory.stat")
    assert b"\nanon_thp 2097152\n" in data and b"\nfile_mapped " in data  # look-alike keys
    out = cgroup_v2.parse_memory_stat(data)
    assert out == {"mem_resident_bytes": 268435456 + 4194304,      # anon + shmem
                   "mem_cache_bytes": 33554432 - 4194304,          # file - shmem
                   "mem_major_faults": 3}                          # pgmajfault


def test_v2_memory_stat_condor_slot():
    out = cgroup_v2.parse_memory_stat(read_fixture(*V2_CONDOR_SLOT, "memory.stat"))
    assert out == {"mem_resident_bytes": 536870912, "mem_cache_bytes": 104857600,
                   "mem_major_faults": 3}


def test_v2_memory_stat_without_memory_controller():
    assert cgroup_v2.parse_memory_stat(b"") == {}


def test_v2_io_stat():
    out = cgroup_v2.parse_io_stat(read_fixture(*V2_SLURM_JOB, "io.stat"))
    assert out == {"read_bytes": 1048576 + 524288, "write_bytes": 4194304}
    out = cgroup_v2.parse_io_stat(read_fixture(*V2_CONDOR_SLOT, "io.stat"))
    assert out == {"read_bytes": 2097152, "write_bytes": 73400320}


def test_v2_io_stat_iocost_fields_and_empty():
    data = (b"8:0 rbytes=90430464 wbytes=299008000 rios=8950 wios=12252 dbytes=50331648 dios=3021 "
            b"cost.vrate=135.68 cost.usage=44452 cost.wait=0 cost.indebt=0 cost.indelay=0\n")
    assert cgroup_v2.parse_io_stat(data) == {"read_bytes": 90430464, "write_bytes": 299008000}
    assert cgroup_v2.parse_io_stat(b"") == {"read_bytes": 0, "write_bytes": 0}


def test_keyed_exact_keys_only():
    data = b"anon 1\nanon_thp 2\nfile 3\nfile_mapped 4\nshmem 5\nshmem_thp 6\n"
    assert keyed(data, {b"anon", b"file", b"shmem"}) == {b"anon": 1, b"file": 3, b"shmem": 5}


# --- property tests: any comm the kernel can show, any mount point --------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

from jobmon import cgroups  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(comm=st.binary(max_size=15).filter(lambda b: b"\x00" not in b),
       ut=st.integers(0, 10**9), ct=st.integers(0, 10**9), threads=st.integers(1, 10**5))
def test_stat_property(comm, ut, ct, threads):
    data = b"4242 (%s) R 17 1 1 0 -1 0 0 0 0 0 %d 1 %d 2 20 0 %d 0 5 0 0\n" % (comm, ut, ct, threads)
    ppid, state, user, system, nthr = procfs.parse_stat(data)
    assert (ppid, state, nthr) == (17, b"R", threads)
    assert user == pytest.approx((ut + ct) / TICK) and system == pytest.approx(3 / TICK)


@settings(max_examples=200, deadline=None)
@given(mnt=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                   min_size=1, max_size=40))
def test_mountinfo_unescape_property(mnt):
    mnt = "/" + mnt
    escaped = (mnt.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")
               .replace("\n", "\\012"))
    text = f"30 23 0:26 / {escaped} rw,relatime - cgroup2 cgroup2 rw\n"
    assert cgroups.parse_mountinfo(text) == {"v2": (mnt, "/")}
