"""Finding a job's cgroup (parse_proc_cgroup, parse_mountinfo, resolve) and the cgroup probes
reading recorded fixture trees, including cgroup v2 layouts of Slurm and HTCondor."""
import os
import shutil
import subprocess
import time

import pytest

from jobmon import cgroups
from jobmon.probes import select
from jobmon.probes.cgroup_v1 import CgroupV1Probe
from jobmon.probes.cgroup_v2 import CgroupV2Probe

from helpers import cgroup_tree, fixture, job_cgroup, needs_root, read_fixture, root

SLURM_JOB = "system.slice/slurmstepd.scope/job_4242"
CONDOR_SLOT = "htcondor/condor_var_lib_condor_execute_slot1_1@host"


def esc(path):
    """A path as mountinfo writes it (octal escapes for space, tab, newline, backslash)."""
    return (path.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")
            .replace("\n", "\\012"))


@pytest.fixture
def v2tree(tmp_path):
    """Copies of the recorded cgroup2 mounts (probes keep files open: never the originals)."""
    for name in ("slurm", "htcondor"):
        shutil.copytree(fixture("cgroup_v2", name), tmp_path / name)
    return tmp_path


# --- /proc/<pid>/cgroup ------------------------------------------------------------------------

def test_proc_cgroup_recorded_hybrid():
    paths = cgroups.parse_proc_cgroup(read_fixture("proc", "1234", "cgroup").decode())
    assert paths["v2"] == "/"
    assert paths["cpuacct"] == "/jobmon-record-4756"
    assert paths["memory"].endswith("/jobmon-record-4756")
    assert paths["blkio"] == paths["pids"] == "/jobmon-record-4756"
    assert paths["cpu"] == "/" and paths["name=systemd"] == "/"


def test_proc_cgroup_combined_controllers_and_colons():
    text = ("12:cpu,cpuacct:/slurm/uid_1000/job_7/step_0/task_0\n"
            "11:memory:/slurm/uid_1000/job_7/step_0/task_0\n"
            "1:name=systemd:/user.slice/a:b\n0::/odd:path\n")
    paths = cgroups.parse_proc_cgroup(text)
    assert paths["cpu"] == paths["cpuacct"] == "/slurm/uid_1000/job_7/step_0/task_0"
    assert paths["name=systemd"] == "/user.slice/a:b"
    assert paths["v2"] == "/odd:path"


def test_proc_cgroup_v2_layouts():
    assert cgroups.parse_proc_cgroup(read_fixture("proc", "slurm_task", "cgroup").decode()) == {
        "v2": "/" + SLURM_JOB + "/step_0/user/task_0"}
    assert cgroups.parse_proc_cgroup(read_fixture("proc", "condor_job", "cgroup").decode()) == {
        "v2": "/" + CONDOR_SLOT}


# --- /proc/self/mountinfo ----------------------------------------------------------------------

def test_mountinfo_recorded_hybrid():
    m = cgroups.parse_mountinfo(read_fixture("proc", "self", "mountinfo").decode())
    assert m["v2"] == ("/sys/fs/cgroup/unified", "/")
    for c in ("cpuacct", "memory", "blkio", "pids", "cpu", "cpuset"):
        assert m[c] == (f"/sys/fs/cgroup/{c}", "/")
    assert m["name=systemd"] == ("/sys/fs/cgroup/systemd", "/")
    assert "devices" not in m and "freezer" not in m   # not measured
    assert not any(mnt == "/sys/fs/cgroup" for mnt, _ in m.values())  # the tmpfs is no cgroup


def test_mountinfo_pure_v2():
    assert cgroups.parse_mountinfo(read_fixture("proc", "mountinfo_v2").decode()) == {
        "v2": ("/sys/fs/cgroup", "/")}


def test_mountinfo_combined_v1_controllers():
    text = ("35 25 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:11 "
            "- cgroup cgroup rw,cpu,cpuacct\n"
            "36 25 0:31 / /sys/fs/cgroup/memory rw,nosuid shared:12 - cgroup cgroup rw,memory\n")
    m = cgroups.parse_mountinfo(text)
    assert m["cpu"] == m["cpuacct"] == ("/sys/fs/cgroup/cpu,cpuacct", "/")
    assert m["memory"] == ("/sys/fs/cgroup/memory", "/")


def test_mountinfo_optional_fields_vary():
    # zero or several optional fields before the " - " separator
    text = ("30 23 0:26 / /a rw - cgroup2 cgroup2 rw\n"
            "31 23 0:27 / /b rw shared:4 master:1 propagate_from:2 unbindable - cgroup cgroup rw,pids\n")
    m = cgroups.parse_mountinfo(text)
    assert m == {"v2": ("/a", "/"), "pids": ("/b", "/")}


def test_mountinfo_escaped_mount_points():
    weird = "/mnt/my cgroups\\x\tand\nnl"
    text = f"30 23 0:26 {esc('/a b')} {esc(weird)} rw,relatime - cgroup2 cgroup2 rw\n"
    assert cgroups.parse_mountinfo(text) == {"v2": (weird, "/a b")}


def test_mountinfo_first_v2_mount_wins():
    text = ("30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
            "99 30 0:26 /some/where /other rw - cgroup2 cgroup2 rw\n")
    assert cgroups.parse_mountinfo(text)["v2"] == ("/sys/fs/cgroup", "/")


# --- resolve -----------------------------------------------------------------------------------

def _mountinfo_for(mnt, root="/"):
    return f"30 23 0:26 {esc(root)} {esc(mnt)} rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n"


def test_resolve_slurm_task_on_fixture_mount(v2tree):
    mnt = str(v2tree / "slurm")
    mounts = cgroups.parse_mountinfo(_mountinfo_for(mnt))
    paths = cgroups.parse_proc_cgroup(read_fixture("proc", "slurm_task", "cgroup").decode())
    assert cgroups.resolve(mounts, paths, "v2") == os.path.join(mnt, SLURM_JOB, "step_0/user/task_0")
    assert cgroups.resolve(mounts, paths, "memory") is None   # no v1 here


def test_resolve_condor_slot_with_at_sign(v2tree):
    mnt = str(v2tree / "htcondor")
    mounts = cgroups.parse_mountinfo(_mountinfo_for(mnt))
    paths = cgroups.parse_proc_cgroup(read_fixture("proc", "condor_job", "cgroup").decode())
    assert cgroups.resolve(mounts, paths, "v2") == os.path.join(mnt, CONDOR_SLOT)


def test_resolve_escaped_mount_point(tmp_path):
    mnt = tmp_path / "cgroup mount\\x"
    (mnt / "job 1").mkdir(parents=True)
    mounts = cgroups.parse_mountinfo(_mountinfo_for(str(mnt)))
    assert cgroups.resolve(mounts, {"v2": "/job 1"}, "v2") == str(mnt / "job 1")


def test_resolve_namespace_root(tmp_path):
    """A container sees its own cgroup as the mount's root: strip that root from the path."""
    mnt = tmp_path / "sys_fs_cgroup"
    (mnt / "sub").mkdir(parents=True)
    text = read_fixture("proc", "mountinfo_container").decode().replace(
        " /sys/fs/cgroup ", f" {esc(str(mnt))} ")
    mounts = cgroups.parse_mountinfo(text)
    assert mounts["v2"] == (str(mnt), "/docker/5f2d3c7e9a1b")
    paths = cgroups.parse_proc_cgroup(read_fixture("proc", "container_cgroup").decode())
    assert cgroups.resolve(mounts, paths, "v2") == str(mnt)
    assert cgroups.resolve(mounts, {"v2": "/docker/5f2d3c7e9a1b/sub"}, "v2") == str(mnt / "sub")
    # a root that is only a prefix of the path's first component is not the root
    (mnt / "docker" / "5f2d3c7e9a1b-other").mkdir(parents=True)
    assert cgroups.resolve(mounts, {"v2": "/docker/5f2d3c7e9a1b-other"}, "v2") != str(mnt) + "-other"


def test_resolve_never_leaves_the_mount(tmp_path):
    """A cgroup outside what the mount shows (moved out of a namespace: '/../x') is not found."""
    mnt = tmp_path / "cg"
    mnt.mkdir()
    (tmp_path / "outside").mkdir()
    mounts = {"v2": (str(mnt), "/")}
    for p in ("/../outside", "/../../" + os.path.basename(str(tmp_path)) + "/outside"):
        got = cgroups.resolve(mounts, {"v2": p}, "v2")
        assert got is None or os.path.commonpath([got, str(mnt)]) == str(mnt), got


def test_resolve_missing_dir_or_key(tmp_path):
    mounts = {"v2": (str(tmp_path), "/")}
    assert cgroups.resolve(mounts, {"v2": "/gone"}, "v2") is None
    assert cgroups.resolve(mounts, {}, "v2") is None
    assert cgroups.resolve({}, {"v2": "/"}, "v2") is None
    assert cgroups.resolve(mounts, {"v2": "/"}, "v2") == str(tmp_path)


# --- walk --------------------------------------------------------------------------------------

def test_walk_slurm_job(v2tree):
    job = v2tree / "slurm" / SLURM_JOB
    rel = sorted(os.path.relpath(d, job) for d in cgroups.walk(str(job)))
    assert rel == sorted([".", "step_0", "step_0/slurm", "step_0/user", "step_0/user/task_0",
                          "step_0/user/task_1", "step_extern", "step_extern/slurm",
                          "step_extern/user", "step_extern/user/task_special", "step_batch",
                          "step_batch/slurm"])


def test_walk_gone_dir(tmp_path):
    assert list(cgroups.walk(str(tmp_path / "nope"))) == [str(tmp_path / "nope")]


# --- the v2 probe on recorded trees ------------------------------------------------------------

def test_v2_probe_slurm_job_counts_nested_steps(v2tree):
    job = str(v2tree / "slurm" / SLURM_JOB)
    probe = select(cgroups=cgroups.JobCgroups(2, {"v2": job}))
    assert isinstance(probe, CgroupV2Probe) and probe.method == "cgroup-v2"
    try:
        out = probe.read()
        assert out["cpu_user_seconds"] == pytest.approx(6.0)
        assert out["cpu_system_seconds"] == pytest.approx(1.5)
        assert out["mem_resident_bytes"] == 268435456 + 4194304
        assert out["mem_cache_bytes"] == 33554432 - 4194304
        assert out["mem_peak_bytes"] == 402653184
        assert out["mem_swap_bytes"] == 8192
        assert (out["read_bytes"], out["write_bytes"]) == (1048576 + 524288, 4194304)
        # processes only in leaves: step_0/{slurm,user/task_0,user/task_1}, step_extern/...
        assert out["procs"] == 6 and out["threads"] == 10
        assert sorted(probe.pids()) == [1990, 1991, 2000, 2001, 2002, 2010]
        assert probe.alive()
        assert probe.tasks_peak() == 9
    finally:
        probe.close()


def test_v2_probe_slurm_step(v2tree):
    step = str(v2tree / "slurm" / SLURM_JOB / "step_0")
    probe = CgroupV2Probe(cgroups.JobCgroups(2, {"v2": step}))
    try:
        out = probe.read()
        assert out["cpu_user_seconds"] + out["cpu_system_seconds"] == pytest.approx(7.0)
        assert (out["procs"], out["threads"]) == (4, 7)
        assert sorted(probe.pids()) == [2000, 2001, 2002, 2010]
    finally:
        probe.close()


def test_v2_probe_condor_slot_not_its_sibling(v2tree):
    slot = str(v2tree / "htcondor" / CONDOR_SLOT)
    probe = CgroupV2Probe(cgroups.JobCgroups(2, {"v2": slot}))
    try:
        out = probe.read()
        assert out["cpu_user_seconds"] == pytest.approx(10.0)
        assert out["cpu_system_seconds"] == pytest.approx(2.345678)
        assert out["mem_resident_bytes"] == 536870912
        assert out["mem_cache_bytes"] == 104857600
        assert out["mem_peak_bytes"] == 671088640
        assert out["mem_swap_bytes"] == 0
        assert (out["read_bytes"], out["write_bytes"]) == (2097152, 73400320)
        assert (out["procs"], out["threads"]) == (3, 5)
        assert sorted(probe.pids()) == [5001, 5002, 5003]
    finally:
        probe.close()


def test_v2_probe_cpu_only_cgroup(v2tree):
    """A cgroup with only cpu.stat (no controllers enabled, as on this machine)."""
    leaf = str(v2tree / "slurm" / SLURM_JOB / "step_0" / "user" / "task_0")
    probe = CgroupV2Probe(cgroups.JobCgroups(2, {"v2": leaf}))
    try:
        out = probe.read()
        assert out["cpu_user_seconds"] + out["cpu_system_seconds"] == pytest.approx(3.0)
        assert (out["procs"], out["threads"]) == (2, 3)
        for k in ("mem_resident_bytes", "mem_peak_bytes", "read_bytes", "mem_swap_bytes"):
            assert k not in out  # not measured: left out, never guessed
        assert probe.tasks_peak() is None
    finally:
        probe.close()


def test_v2_probe_alive_follows_populated(v2tree):
    done = str(v2tree / "slurm" / SLURM_JOB / "step_batch" / "slurm")
    probe = CgroupV2Probe(cgroups.JobCgroups(2, {"v2": done}))
    try:
        assert not probe.alive()
        assert probe.read()["procs"] == 0
    finally:
        probe.close()
    # without cgroup.events, alive() counts the subtree's processes
    job = v2tree / "slurm" / SLURM_JOB
    (job / "cgroup.events").unlink()
    probe = CgroupV2Probe(cgroups.JobCgroups(2, {"v2": str(job)}))
    try:
        assert probe.alive()
    finally:
        probe.close()


def test_v2_probe_needs_cpu_stat(tmp_path):
    with pytest.raises(OSError):
        CgroupV2Probe(cgroups.JobCgroups(2, {"v2": str(tmp_path)}))


def test_v2_probe_sees_live_changes(v2tree):
    """Files are kept open and re-read: a later read sees new contents of the same file."""
    slot = v2tree / "htcondor" / CONDOR_SLOT
    probe = CgroupV2Probe(cgroups.JobCgroups(2, {"v2": str(slot)}))
    try:
        first = probe.read()
        with open(slot / "cpu.stat", "r+b") as f:   # same inode, as the kernel updates it
            f.write(b"usage_usec 22345678\nuser_usec 20000000\nsystem_usec 2345678\n")
            f.truncate()
        second = probe.read()
        cpu = lambda s: s["cpu_user_seconds"] + s["cpu_system_seconds"]  # noqa: E731
        assert cpu(second) - cpu(first) == pytest.approx(10.0)
    finally:
        probe.close()


# --- the v1 probe on the recorded tree ----------------------------------------------------------

def _v1_copy(tmp_path, pids=(4757,), tasks=(4757,)):
    shutil.copytree(fixture("cgroup_v1", "job"), tmp_path / "v1")
    dirs = {c: str(tmp_path / "v1" / c) for c in ("cpuacct", "memory", "blkio", "pids")}
    for d in dirs.values():
        with open(os.path.join(d, "cgroup.procs"), "w") as f:
            f.write("".join(f"{p}\n" for p in pids))
        with open(os.path.join(d, "tasks"), "w") as f:
            f.write("".join(f"{t}\n" for t in tasks))
    with open(os.path.join(dirs["pids"], "pids.current"), "w") as f:  # the kernel's task count
        f.write(f"{len(tasks)}\n")
    return dirs


def test_v1_probe_recorded_tree(tmp_path):
    dirs = _v1_copy(tmp_path, pids=(4757, 4758), tasks=(4757, 4758, 4759))
    probe = select(cgroups=cgroups.JobCgroups(1, dirs, created=True))
    assert isinstance(probe, CgroupV1Probe) and probe.method == "cgroup-v1"
    try:
        out = probe.read()
        assert out["cpu_user_seconds"] + out["cpu_system_seconds"] == pytest.approx(0.353477555)
        assert out["mem_resident_bytes"] == 38600704
        assert out["mem_cache_bytes"] == 4198400
        assert out["mem_peak_bytes"] == 47624192
        assert (out["read_bytes"], out["write_bytes"]) == (4096, 4210688)
        assert (out["procs"], out["threads"]) == (2, 3)
        assert probe.tasks_peak() == 2
        assert sorted(probe.pids()) == [4757, 4758]
        assert probe.alive()
    finally:
        probe.close()


def test_v1_probe_ignores_blkio_it_did_not_enable(tmp_path):
    """blk-throttle counts only with a rule set: trusted only in cgroups jobmon created."""
    probe = CgroupV1Probe(cgroups.JobCgroups(1, _v1_copy(tmp_path), created=False))
    try:
        out = probe.read()
        assert "read_bytes" not in out and "write_bytes" not in out
    finally:
        probe.close()


def test_v1_probe_needs_cpuacct_usage(tmp_path):
    dirs = _v1_copy(tmp_path)
    os.unlink(os.path.join(dirs["cpuacct"], "cpuacct.usage"))
    with pytest.raises(OSError):
        CgroupV1Probe(cgroups.JobCgroups(1, dirs))


# --- real cgroups of this machine (root) ---------------------------------------------------------

def _own_v1_ok():
    try:
        mounts, paths = cgroups.own()
    except OSError:
        return False
    return all(cgroups.resolve(mounts, paths, c) for c in ("cpuacct", "memory"))


@root
@needs_root
@cgroup_tree
@pytest.mark.parametrize("version", [1, 2])
def test_create_join_remove_real(version):
    if version == 1 and not _own_v1_ok():
        pytest.skip("no cgroup v1 cpuacct+memory here")
    cg = cgroups.create(f"jobmon-pytest-{os.getpid()}-{version}", prefer=version)
    if cg is None:
        pytest.skip(f"cannot create a cgroup v{version} here")
    assert cg.created and cg.version == version
    p = subprocess.Popen(["sleep", "30"], preexec_fn=cg.join)
    try:
        with open(cg.procs_files()[0]) as f:
            assert str(p.pid) in f.read().split()
        with open(f"/proc/{p.pid}/cgroup") as f:
            paths = cgroups.parse_proc_cgroup(f.read())
        key = "v2" if version == 2 else "memory"
        assert paths[key].endswith("/" + os.path.basename(cg.dirs[key]))
        cg.remove()   # the sleep is still in it: moved to the parent, then the dir goes
        for d in cg.dirs.values():
            assert not os.path.exists(d)
        assert p.poll() is None   # the process itself is not harmed
    finally:
        p.kill()
        p.wait()
        cg.remove()


@root
@needs_root
@cgroup_tree
@pytest.mark.parametrize("version", [1, 2])
def test_create_beside_a_leftover_of_the_same_name(version):
    """A jobmon killed before it removed its cgroup leaves jobmon-<pid> behind; a later jobmon
    given that pid again still gets a cgroup of its own, and the leftover is not touched."""
    if version == 1 and not _own_v1_ok():
        pytest.skip("no cgroup v1 cpuacct+memory here")
    name = f"jobmon-pytest-left-{os.getpid()}-{version}"
    first = cgroups.create(name, prefer=version)
    if first is None:
        pytest.skip(f"cannot create a cgroup v{version} here")
    second = None
    try:
        second = cgroups.create(name, prefer=version)
        assert second is not None and second.version == version
        for key, d in second.dirs.items():
            assert d == first.dirs[key] + ".1"
        if first.pressure_dir:
            assert second.pressure_dir == first.pressure_dir + ".1"
        second.remove()
        assert all(os.path.isdir(d) for d in first.dirs.values())
        assert not any(os.path.exists(d) for d in second.dirs.values())
    finally:
        first.remove()
        if second:
            second.remove()


@root
@needs_root
@cgroup_tree
def test_existing_finds_own_created_cgroup():
    """The cgroup a root job gets here (v1 on a hybrid host, v2 on a pure v2 one), found
    again from a process in it as `--cgroup=existing` finds it."""
    cg = job_cgroup(f"jobmon-pytest-ex-{os.getpid()}")
    p = subprocess.Popen(["sleep", "30"], preexec_fn=cg.join)
    try:
        found = cgroups.existing(p.pid)
        assert found is not None and found.version == cg.version and not found.created
        for key in ("memory", "cpuacct") if cg.version == 1 else ("v2",):
            assert found.dirs[key] == cg.dirs[key]
    finally:
        p.kill()
        p.wait()
        time.sleep(0.05)
        cg.remove()


def test_odd_characters_in_cgroup_and_mount_names():
    # only space, tab, newline and backslash are escaped by the kernel; \r, \x0b, \x1c, \x85,
    # \u2028 are not, and must not split a line
    odd = "/job\r1\x0b\x1c\x85\u2028 x"
    assert cgroups.parse_proc_cgroup(f"0::{odd}\n4:memory:{odd}/m\n") == {
        "v2": odd, "memory": odd + "/m"}
    text = f"30 23 0:26 / {esc(odd)} rw,relatime - cgroup2 cgroup2 rw\n"
    assert cgroups.parse_mountinfo(text) == {"v2": (odd, "/")}


@needs_root
def test_existing_finds_a_process_in_a_real_v2_cgroup():
    """`--cgroup existing` on v2: the process's own (non-root) v2 cgroup is found."""
    cg = cgroups.create(f"jobmon-pytest-existing-{os.getpid()}", prefer=2)
    if cg is None:
        pytest.skip("cannot create a cgroup v2 here")
    p = subprocess.Popen(["sleep", "30"])
    try:
        cg.join(p.pid)
        found = cgroups.existing(p.pid, prefer=2)
        assert found is not None and found.version == 2
        assert os.path.samefile(found.dirs["v2"], cg.dirs["v2"])
        assert not found.created  # found, not made: jobmon must not remove it
        assert cgroups.existing(p.pid) is not None  # auto choice works too (v1 or v2)
    finally:
        p.kill()
        p.wait()
        cg.remove()
