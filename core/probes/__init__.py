"""Probes measure a job; the sampler picks the best one that works at start.

Every probe has the same small interface. `read()` returns the sample fields it can
measure now (a subset of jobmon.metrics.SAMPLE_NAMES, counters cumulative since the
job began); fields it cannot measure are left out, never guessed.
"""
import os


class Probe:
    method = "none"

    def read(self):
        """Current values: {field: number}."""
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
    """Parse 'key value' lines (memory.stat, cpu.stat) for the keys in `wanted`."""
    out = {}
    for line in data.split(b"\n"):
        k, _, v = line.partition(b" ")
        if k in wanted:
            out[k] = int(v)
    return out


def read_int(path):
    with open(path, "rb") as f:
        return int(f.read().split()[0])


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
