"""Reading /proc, /sys and cgroup files: the few ways every probe needs, and what the
/proc files of a process say.

Paths are bytes or str; the proc root is a parameter of the probes that use it (the
default here), so tests run the real code on a recorded tree.
"""
import os
import time

PROC = b"/proc"
TICK = os.sysconf("SC_CLK_TCK")
ZOMBIE = (b"Z", b"X")   # stat states of a process that has exited


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


def cpu_clock(pid):
    """The clock id of a process's CPU time (clock_getcpuclockid's): the run time of all its
    threads, dead ones too, which any process may read."""
    return (~pid << 3) | 2


def clocks_are_ours(proc):
    """Whether the pids under `proc` are this process's, whose CPU clocks it can read."""
    try:
        return proc == PROC and os.readlink(PROC + b"/self") == b"%d" % os.getpid() \
            and time.clock_gettime_ns(cpu_clock(os.getpid())) > 0
    except OSError:
        return False


def read_once(path):
    """One read: /proc files of one record (stat, io, status, smaps_rollup) fit in it."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def read_all(path):
    """A whole list file: they come one seq_file page (~680 pids) per read, so a read that
    is well short of a page (4 KiB) had all of it."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = [os.read(fd, 65536)]
        while len(chunks[-1]) > 2048:
            chunks.append(os.read(fd, 65536))
        return b"".join(chunks)
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


# --- /proc/<pid>/... ----------------------------------------------------------------------------
# The command name in stat may hold spaces and parentheses: split after the last ')'.

def parse_stat(data):
    """/proc/<pid>/stat -> (ppid, state, cpu user s, cpu sys s incl. reaped children, threads)."""
    f = data[data.rindex(b")") + 2:].split()
    return (int(f[1]), f[0],
            (int(f[11]) + int(f[13])) / TICK, (int(f[12]) + int(f[14])) / TICK,
            int(f[17]))


def stat_fields(data):
    """/proc/<pid>/stat -> (state, ppid, minor faults, user ticks, system ticks (both with
    reaped children), threads, start ticks since boot, resident pages, session, its own CPU
    ticks, comm)."""
    end = data.rindex(b")")
    f = data[end + 2:].split(None, 22)
    utime, stime = int(f[11]), int(f[12])
    return (f[0], int(f[1]), int(f[7]), utime + int(f[13]), stime + int(f[14]),
            int(f[17]), int(f[19]), int(f[21]), int(f[3]), utime + stime,
            data[data.index(b"(") + 1:end])


def scan_tree(proc, root, foreign):
    """{pid: children} below root from one listing of `proc` (kernels without
    CONFIG_PROC_CHILDREN); `foreign`, the pids known not to be below it, is kept up to date."""
    listing = {int(n) for n in os.listdir(proc) if n.isdigit()}
    foreign &= listing
    kids = {}
    for pid in listing - foreign:
        try:
            kids.setdefault(stat_fields(read_once(b"%s/%d/stat" % (proc, pid)))[1], []).append(pid)
        except (OSError, ValueError, IndexError):
            continue                 # exited between listing and reading
    ours, todo = {root}, [root]
    while todo:
        for k in kids.get(todo.pop(), ()):
            if k not in ours:
                ours.add(k)
                todo.append(k)
    foreign |= (listing - foreign) - ours
    return {pid: tuple(k) for pid, k in kids.items() if pid in ours}


def parse_io(data):
    """/proc/<pid>/io -> {rchar_bytes, wchar_bytes, read_bytes, write_bytes}."""
    out = {}
    for line in data.split(b"\n"):
        k, _, v = line.partition(b": ")
        if k == b"rchar":
            out["rchar_bytes"] = int(v)
        elif k == b"wchar":
            out["wchar_bytes"] = int(v)
        elif k == b"read_bytes":
            out["read_bytes"] = int(v)
        elif k == b"write_bytes":
            out["write_bytes"] = int(v)
        elif k == b"cancelled_write_bytes":  # truncated before writeback: never written
            out["write_bytes"] = out.get("write_bytes", 0) - int(v)
    return out


_IO_ORDER = [b"read_bytes:", b"write_bytes:", b"cancelled_write_bytes:"]


def io_fields(data):
    """/proc/<pid>/io -> (rchar, wchar, read_bytes, write_bytes): the kernel's fixed order,
    split once (checked, else parsed by name)."""
    t = data.split()
    if t[8:13:2] != _IO_ORDER:
        d = parse_io(data)
        return tuple(d.get(k, 0) for k in ("rchar_bytes", "wchar_bytes", "read_bytes",
                                           "write_bytes"))
    return int(t[1]), int(t[3]), int(t[9]), int(t[11]) - int(t[13])


_PSS_KEYS = {b"Rss", b"Pss", b"Pss_Anon", b"Pss_Shmem", b"Pss_File", b"SwapPss", b"Anonymous",
             b"Private_Clean", b"Private_Dirty"}


def parse_pss(data):
    """/proc/<pid>/smaps_rollup -> (Pss_Anon, Pss_Shmem, Pss_File, SwapPss, anonymous RSS,
    other RSS, private RSS) in bytes. Before Linux 5.9 there is no Pss_Anon: all of Pss
    counts as anonymous."""
    v = {}
    for line in data.split(b"\n"):
        k, _, rest = line.partition(b":")
        if k in _PSS_KEYS:
            v[k] = int(rest.split()[0]) * 1024
    anon_rss = v.get(b"Anonymous", 0)
    other_rss = max(v.get(b"Rss", 0) - anon_rss, 0)
    private = v.get(b"Private_Clean", 0) + v.get(b"Private_Dirty", 0)
    if b"Pss_Anon" in v:
        return (v[b"Pss_Anon"], v.get(b"Pss_Shmem", 0), v.get(b"Pss_File", 0),
                v.get(b"SwapPss", 0), anon_rss, other_rss, private)
    return v.get(b"Pss", 0), 0, 0, v.get(b"SwapPss", 0), anon_rss + other_rss, 0, private


def parse_smaps_rollup(data):
    """/proc/<pid>/smaps_rollup -> (resident, file, swap) in bytes, proportional (PSS)."""
    anon, shmem, file, swap = parse_pss(data)[:4]
    return anon + shmem, file, swap


def parse_status(data):
    """/proc/<pid>/status -> (resident, file, swap) in bytes from the kernel's RSS counters."""
    v = {}
    for line in data.split(b"\n"):
        k, _, rest = line.partition(b":")
        if k in (b"RssAnon", b"RssFile", b"RssShmem", b"VmSwap"):
            v[k] = int(rest.split()[0]) * 1024
    return v.get(b"RssAnon", 0) + v.get(b"RssShmem", 0), v.get(b"RssFile", 0), v.get(b"VmSwap", 0)


def parse_statm(data):
    """/proc/<pid>/statm -> (resident pages, file + shmem pages)."""
    f = data.split(None, 3)
    return int(f[1]), int(f[2])


def reaped_io():
    """Counters of the children this process has reaped: /proc/self/io minus our own thread's."""
    whole = parse_io(read_once(b"/proc/self/io"))
    mine = parse_io(read_once(b"/proc/self/task/%d/io" % os.getpid()))
    return {k: whole.get(k, 0) - mine.get(k, 0) for k in whole}
