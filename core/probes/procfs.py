"""procfs probe: walk the job's process tree in /proc.

Used where no cgroup of the job can be read. The tree is everything below `root`
(jobmon itself, a child subreaper, so orphaned daemons stay below it). What exited
processes used is not lost: their parents hold it (cutime/cstime in stat, reaped
children's counters in /proc/<pid>/io), and for processes reaped by jobmon itself the
kernel keeps it in jobmon's RUSAGE_CHILDREN and in /proc/self/io.
"""
import os
import resource

from . import Probe
from .files import PROC, read_all, read_once

TICK = os.sysconf("SC_CLK_TCK")


def parse_stat(data):
    """/proc/<pid>/stat -> (ppid, state, cpu user s, cpu sys s incl. reaped children, threads).

    The command name may hold spaces and parentheses: split after the last ')'.
    """
    f = data[data.rindex(b")") + 2:].split()
    return (int(f[1]), f[0],
            (int(f[11]) + int(f[13])) / TICK, (int(f[12]) + int(f[14])) / TICK,
            int(f[17]))


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


def parse_smaps_rollup(data):
    """/proc/<pid>/smaps_rollup -> (resident, file, swap) in bytes, proportional (PSS).

    Pss_Anon/Pss_Shmem/Pss_File exist since Linux 5.9; before that all of Pss is resident.
    """
    v = {}
    for line in data.split(b"\n"):
        k, _, rest = line.partition(b":")
        if k in (b"Pss", b"Pss_Anon", b"Pss_Shmem", b"Pss_File", b"SwapPss"):
            v[k] = int(rest.split()[0]) * 1024
    if b"Pss_Anon" in v:
        resident = v[b"Pss_Anon"] + v.get(b"Pss_Shmem", 0)
        return resident, v.get(b"Pss_File", 0), v.get(b"SwapPss", 0)
    return v.get(b"Pss", 0), 0, v.get(b"SwapPss", 0)


def parse_status(data):
    """/proc/<pid>/status -> (resident, file, swap) in bytes from the kernel's RSS counters."""
    v = {}
    for line in data.split(b"\n"):
        k, _, rest = line.partition(b":")
        if k in (b"RssAnon", b"RssFile", b"RssShmem", b"VmSwap"):
            v[k] = int(rest.split()[0]) * 1024
    return v.get(b"RssAnon", 0) + v.get(b"RssShmem", 0), v.get(b"RssFile", 0), v.get(b"VmSwap", 0)


def reaped_io():
    """Counters of the children this process has reaped: /proc/self/io minus our own thread's."""
    whole = parse_io(read_once(b"/proc/self/io"))
    mine = parse_io(read_once(b"/proc/self/task/%d/io" % os.getpid()))
    return {k: whole.get(k, 0) - mine.get(k, 0) for k in whole}


class ProcfsProbe(Probe):
    method = "procfs"

    def __init__(self, root, include_root=False):
        self.root = root
        # without the root, the root must be jobmon itself: it reaps the orphans
        self.include_root = include_root or root != os.getpid()
        self.tree = set()      # live descendants of root
        self.foreign = set()   # pids seen in /proc that are not ours (skipped next time)
        if not os.path.isdir(f"/proc/{root}"):
            raise OSError(f"/proc/{root} not readable")
        # CONFIG_PROC_CHILDREN: walk down from the root instead of listing all of /proc
        self.has_children = os.path.exists(f"/proc/{root}/task/{root}/children")

    def _walk(self):
        """{pid: stat} of the tree, following each thread's children list."""
        stats, frontier = {}, [self.root]
        while frontier:
            pid = frontier.pop()
            try:
                tids = os.listdir(b"/proc/%d/task" % pid)
            except OSError:
                continue
            for tid in tids:
                try:
                    kids = read_all(b"/proc/%d/task/%s/children" % (pid, tid)).split()
                except OSError:
                    continue
                for k in kids:
                    k = int(k)
                    try:
                        stats[k] = parse_stat(read_once(b"/proc/%d/stat" % k))
                    except (OSError, ValueError, IndexError):
                        continue
                    frontier.append(k)
        self.tree = set(stats)
        return stats

    def _scan(self):
        """Update self.tree from one listing of /proc; returns {pid: stat fields}."""
        if self.has_children:
            return self._walk()
        listing = {int(n) for n in os.listdir(b"/proc") if n.isdigit()}
        self.foreign &= listing
        stats, parent = {}, {}
        for pid in listing - self.foreign:
            if pid == self.root:
                continue
            try:
                st = parse_stat(read_once(b"/proc/%d/stat" % pid))
            except (OSError, ValueError, IndexError):
                continue  # exited between listing and reading
            stats[pid] = st
            parent[pid] = st[0]
        ours = {}

        def is_ours(pid, depth=0):
            if pid in ours:
                return ours[pid]
            pp = parent.get(pid)
            res = pp == self.root or (pp is not None and depth < 64 and is_ours(pp, depth + 1))
            ours[pid] = res
            return res

        for pid in parent:
            is_ours(pid)
        self.tree = {p for p, mine in ours.items() if mine}
        self.foreign |= {p for p, mine in ours.items() if not mine}
        return {p: stats[p] for p in self.tree}

    def read(self, final=False):
        stats = self._scan()
        if self.include_root:
            try:
                stats[self.root] = parse_stat(read_once(b"/proc/%d/stat" % self.root))
            except (OSError, ValueError, IndexError):
                pass
        out = dict.fromkeys(("cpu_user_seconds", "cpu_system_seconds", "procs", "threads",
                             "mem_resident_bytes", "mem_cache_bytes", "mem_swap_bytes",
                             "rchar_bytes", "wchar_bytes", "read_bytes", "write_bytes"), 0)
        live = sum(1 for st in stats.values() if st[1] not in (b"Z", b"X"))
        # PSS keeps pages shared by forked workers from counting twice; a lone process
        # shares with no one, and its RSS counters cost a tenth of the PSS page walk
        mem_file, mem_parse = (b"/proc/%d/status", parse_status) if live == 1 else \
            (b"/proc/%d/smaps_rollup", parse_smaps_rollup)
        for pid, (_, state, user, system, nthr) in stats.items():
            out["cpu_user_seconds"] += user
            out["cpu_system_seconds"] += system
            if state in (b"Z", b"X"):
                continue  # exited, not yet reaped: CPU counted above, nothing else left
            try:
                r, f, w = mem_parse(read_once(mem_file % pid))
                io = parse_io(read_once(b"/proc/%d/io" % pid))
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile, or not ours to read (setuid)
            out["procs"] += 1
            out["threads"] += nthr
            out["mem_resident_bytes"] += r
            out["mem_cache_bytes"] += f
            out["mem_swap_bytes"] += w
            for k, v in io.items():
                out[k] += v
        if not self.include_root:
            # what jobmon (the root) reaped: exact CPU from the kernel, I/O from /proc/self/io
            ru = resource.getrusage(resource.RUSAGE_CHILDREN)
            out["cpu_user_seconds"] += ru.ru_utime
            out["cpu_system_seconds"] += ru.ru_stime
            try:
                for k, v in reaped_io().items():
                    out[k] += v
            except (OSError, ValueError):
                pass
        return out

    def pids(self):
        self._scan()
        return sorted(self.tree)

    def alive(self):
        self._scan()
        return bool(self.tree)
