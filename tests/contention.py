"""Real workloads that wait for something, for the pressure and advice tests: CPU hogs
beside a job, a job spinning on more processes than it gets CPUs for."""
import contextlib
import os
import subprocess

# N processes of the job spin for S seconds each (the job's first is one of them)
SPIN = r"""
import os, sys, time
n, secs = int(sys.argv[1]), float(sys.argv[2])
kids = []
for _ in range(n - 1):
    pid = os.fork()
    if pid == 0:
        t = time.time()
        while time.time() - t < secs:
            pass
        os._exit(0)
    kids.append(pid)
t = time.time()
while time.time() - t < secs:
    pass
for k in kids:
    os.waitpid(k, 0)
"""


@contextlib.contextmanager
def cpu_hogs(n=None):
    """n processes spinning outside the job (default: two per CPU of this machine), so the
    job's processes wait for a CPU most of the time however busy the machine already is."""
    n = n or 2 * (os.cpu_count() or 1)
    hogs = [subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"],
                             stdin=subprocess.DEVNULL) for _ in range(n)]
    try:
        yield hogs
    finally:
        for h in hogs:
            h.kill()
        for h in hogs:
            h.wait()


# reads a file with O_DIRECT (every read goes to the device), once the gate file exists
DIRECT_READ = r"""
import mmap, os, sys, time
path, gate = sys.argv[1], sys.argv[2]
while not os.path.exists(gate):
    time.sleep(0.01)
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 1 << 16)
while os.readv(fd, [buf]) > 0:
    pass
"""

# reads a file larger than the job's memory limit, then maps it and reads its pages in
# random order for `seconds`: every page is read again and again, so the kernel holds them as the job's
# working set, which does not fit -- each one it had to give up is read back from disk
# (refaults: thrashing, in PSI's memory stalls)
THRASH = r"""
import mmap, os, random, sys, time
path, seconds = sys.argv[1], float(sys.argv[2])
with open(path, "rb") as f:
    while f.read(1 << 20):           # once through the page cache: as much as fits stays
        pass
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
m.madvise(mmap.MADV_RANDOM)          # one page a fault: no readahead hides the misses
pages, pick, total = len(m) // 4096, random.randrange, 0
end = time.time() + seconds
while time.time() < end:
    for _ in range(1000):
        total += m[pick(pages) * 4096]
"""


def data_file(directory, size):
    """A file of `size` random bytes, on disk (fsynced), outside any page cache it may have
    been read into (written by this process, charged to its cgroup, dropped after)."""
    path = os.path.join(directory, "data.bin")
    with open(path, "wb") as f:
        for _ in range(size >> 20):
            f.write(os.urandom(1 << 20))
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    os.chmod(path, 0o644)
    return path


def disk_of(path):
    """major:minor of the whole disk that holds `path` (throttle rules name whole disks)."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    sys_dev = os.path.realpath(f"/sys/dev/block/{dev}")
    if os.path.exists(os.path.join(sys_dev, "partition")):
        with open(os.path.join(os.path.dirname(sys_dev), "dev")) as f:
            return f.read().strip()
    return dev


@contextlib.contextmanager
def cpu_quota_cgroup(quota_us, period_us=100000):
    """A job cgroup as a root job gets one on this host whose CPU quota is quota_us per
    period_us and whose CPU weight is the most there is: however busy the machine, a job in
    it gets what it wants up to its quota, so the quota alone holds it back. v1: cpu,
    cpuacct and memory cgroups below this process's (HTCondor's and systemd's shape: cpu
    and cpuacct at one path), cpu.cfs_quota_us and cpu.shares; v2: cpu.max and cpu.weight.
    Yields the jobmon.cgroups.JobCgroups (its join() as a preexec_fn puts a process in);
    removed afterwards. Skips where no such cgroup can be made."""
    import time
    import pytest
    from helpers import job_cgroup, job_cgroup_method
    from jobmon import cgroups
    name = f"jobmon-pytest-quota-{os.getpid()}"
    if job_cgroup_method() == "cgroup-v2":
        cg = job_cgroup(name)
        files = (("cpu.max", f"{quota_us} {period_us}"), ("cpu.weight", 10000))
    else:
        mounts, own = cgroups.own()
        dirs = {}
        for c in ("cpu", "cpuacct", "memory"):
            base = cgroups.resolve(mounts, own, c)
            if not base or own.get("cpu") != own.get("cpuacct"):
                cgroups.JobCgroups(1, dirs, created=True).remove()
                pytest.skip("no cgroup v1 cpu and cpuacct at one path here")
            dirs[c] = os.path.join(base, name)
            os.mkdir(dirs[c])
        cg = cgroups.JobCgroups(1, dirs, created=True)
        files = (("cpu.cfs_period_us", period_us), ("cpu.cfs_quota_us", quota_us),
                 ("cpu.shares", 262144))
    try:
        for f, v in files:
            path = os.path.join(quota_dir(cg), f)
            if not os.path.exists(path):
                pytest.skip(f"no {f} for a job cgroup here")
            with open(path, "w") as fh:
                fh.write(str(v))
        yield cg
    finally:
        time.sleep(0.05)
        cg.remove()


def quota_dir(cg):
    """The directory of a JobCgroups' CPU quota and its cpu.stat."""
    return cg.dirs["cpu"] if cg.version == 1 else cg.dirs["v2"]
