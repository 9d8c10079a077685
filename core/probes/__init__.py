"""Probes measure a job; the sampler picks the best one that works at start.

Every probe has the same small interface. `read()` returns the sample fields it can
measure now (a subset of jobmon.metrics.SAMPLE_NAMES, counters cumulative since the
job began); fields it cannot measure are left out, never guessed.
"""
import os


class Probe:
    method = "none"

    def read(self, final=False):
        """Current values: {field: number}. final: the job is over, the last read (a probe
        reads then what costs too much to read every sample)."""
        raise NotImplementedError

    def alive(self):
        """True while any process of the job is left (for jobs jobmon did not start)."""
        raise NotImplementedError

    def pids(self):
        """Pids of the job's live processes."""
        raise NotImplementedError

    def close(self):
        pass


class Reader:
    """A file kept open and re-read with pread: no open/close syscalls per sample."""

    __slots__ = ("path", "fd")

    def __init__(self, path):
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def read(self, size=65536):
        """One pread: enough for single-value and small key-value files."""
        return os.pread(self.fd, size, 0)

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def reader(path):
    """A Reader, or None if the file is not there (controller absent, old kernel)."""
    try:
        return Reader(path)
    except OSError:
        return None


def keyed(data, wanted):
    """Values of the `wanted` keys of 'key value' lines (memory.stat, cpu.stat)."""
    out = {}
    data = b"\n" + data  # a few finds beat splitting all ~40 lines of memory.stat
    for k in wanted:
        i = data.find(b"\n" + k + b" ")
        if i >= 0:
            i += len(k) + 2
            j = data.find(b"\n", i)
            out[k] = int(data[i:j] if j >= 0 else data[i:])
    return out


class Counter:
    """Counts a job's processes and threads across its cgroup and any nested ones.

    A cgroup jobmon created has no children: one directory. Scheduler job cgroups nest
    steps and tasks below the job, with processes only in the leaves: walk them. The list
    files are opened anew each time: cgroup v1 caches a pid list per open file and keeps
    serving it while it is re-read within a second, so a kept-open cgroup.procs goes stale.
    """

    def __init__(self, d, procs_file, threads_file, nested):
        self.d, self.procs_file, self.threads_file, self.nested = d, procs_file, threads_file, nested
        # the pids controller's O(1) task count beats listing every thread
        self.tasks = None if nested else reader(os.path.join(d, "pids.current"))

    def _dirs(self):
        if not self.nested:
            return (self.d,)
        from ..cgroups import walk
        return walk(self.d)

    def count(self):
        procs = threads = 0
        for d in self._dirs():
            try:
                procs += _read_all(os.path.join(d, self.procs_file)).count(b"\n")
                if self.tasks is None:
                    threads += _read_all(os.path.join(d, self.threads_file)).count(b"\n")
            except OSError:
                pass
        if self.tasks is not None:
            threads = int(self.tasks.read())
        return procs, threads

    def pids(self):
        out = []
        for d in self._dirs():
            try:
                out += [int(p) for p in _read_all(os.path.join(d, self.procs_file)).split()]
            except OSError:
                pass
        return out

    def close(self):
        if self.tasks is not None:
            self.tasks.close()


def _read_all(path):
    """A whole list file: they come one seq_file page (~680 pids) per read."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while True:
            b = os.read(fd, 65536)
            if not b:
                return b"".join(chunks)
            chunks.append(b)
    finally:
        os.close(fd)


def select(pid=None, cgroups=None, root=None, include_root=False):
    """The probe for a job: its cgroups if given, else a procfs walk from `root`."""
    if cgroups is not None:
        if cgroups.version == 2:
            from .cgroup_v2 import CgroupV2Probe
            return CgroupV2Probe(cgroups)
        from .cgroup_v1 import CgroupV1Probe
        return CgroupV1Probe(cgroups)
    from .procfs import ProcfsProbe
    return ProcfsProbe(root or pid or os.getpid(), include_root=include_root)


def with_gpus(probe, warn):
    """probe plus the GPU fields when this node has an NVIDIA driver (and JOBMON_GPU is not
    "off"). Without its device node nothing is loaded: ctypes and libnvidia-ml cost memory
    in every job. If NVML fails, warn(message) and the job is measured without GPUs."""
    if os.environ.get("JOBMON_GPU") == "off" or not os.path.exists("/dev/nvidiactl"):
        return probe
    try:
        from .nvml import gpu_probe
        return gpu_probe(probe)
    except Exception as e:
        warn(f"no GPU metrics: {e}")
        return probe
