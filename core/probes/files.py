"""Reading /proc, /sys and cgroup files: the few ways every probe needs.

Paths are bytes or str; the proc root is a parameter of the probes that use it (the
default here), so tests run the real code on a recorded tree.
"""
import os

PROC = b"/proc"


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


def read_once(path):
    """One read: /proc files of one record (stat, io, status, smaps_rollup) fit in it."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def read_all(path):
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
