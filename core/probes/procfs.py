"""procfs probe: the job's process tree in /proc, cheap enough for 1000 processes.

Used where no cgroup of the job can be read. The tree is everything below `root`
(jobmon itself, a child subreaper, so orphaned daemons stay below it). What exited
processes used is not lost: their parents hold it (cutime/cstime in stat, reaped
children's counters in /proc/<pid>/io), and for processes reaped by jobmon itself the
kernel keeps it in jobmon's RUSAGE_CHILDREN and in /proc/self/io.

What a sample costs, and why it stays exact:
- A process that has not run since the last sample cannot have changed its CPU time, I/O,
  threads, children or resident pages. Its CPU clock (the run time in ns of all its
  threads: one clock_gettime, no file, ~1 µs) says whether it ran; only then are stat,
  children, io and schedstat re-read, and the job's totals corrected by what changed. A
  process that was reaped has no clock any more; one whose pid was taken again has another
  clock, and another start time in stat. The clock of a process that is running moves when
  the scheduler updates it (every tick; on a nohz_full CPU at least once a second), so what
  such a process did since may show a sample later.
- PSS (smaps_rollup, a page-table walk of 35-100 µs) keeps the pages forked workers share
  from counting once per worker. It is re-read within a CPU budget (`pss_share` of a core),
  where the estimate may be most wrong first; in between, a process's PSS moves with its
  RSS, faults and fork family (Proc.estimate), and one never read counts as the median of
  its siblings that were. A lone process shares nothing within the job: its RSS counters
  (status) are read instead.
"""
import os
import resource
import time

from .interface import Probe
from ..metrics import COUNTERS
from .files import (PROC, TICK, ZOMBIE, clocks_are_ours, cpu_clock, io_fields,  # noqa: F401
                    parse_io, parse_pss, parse_smaps_rollup, parse_stat, parse_statm,
                    parse_status, read_all, read_once, reaped_io, scan_tree, stat_fields)
from .lifetimes import Census, Life, now
from .pressure import RUN_QUEUE, TreeWaits
from .pss import PAGE, PSS_SHARE, Proc, PssBook

# a process found having run less (one thread; none reaped by it) moved at most a few MB
# and waited little: its I/O counters and schedstat (a file each, ~8 µs of the ~35 a new
# process costs) are read once it runs again (both count from its birth), its I/O comes
# with its parent's if it has exited by then
LAZY = 2_000_000   # ns


def run_ns(sched):
    """Run time in ns from schedstat (none read: as if it ran long)."""
    return int(sched.split(None, 1)[0]) if sched else LAZY


NAMES = ("cpu_user_seconds", "cpu_system_seconds", "rchar_bytes", "wchar_bytes", "read_bytes",
         "write_bytes", "procs", "threads", "mem_resident_bytes", "mem_cache_bytes",
         "mem_swap_bytes")


class ProcfsProbe(Probe):
    method = "procfs"
    pressure_source = RUN_QUEUE   # no cgroup, no PSI of the job's own

    def __init__(self, root, include_root=False, proc=PROC, command=None, pss_share=PSS_SHARE):
        """root: top of the tree; include_root: measure root too (always when root is not
        this process); proc: where procfs is (a recorded tree in tests); command: the pid
        jobmon forked, so any other child of root is an orphan it adopted; pss_share: the
        share of a core PSS walks may take (None: every process at every sample)."""
        self.root = root
        # without the root, the root must be jobmon itself: it reaps the orphans
        self.include_root = include_root or root != os.getpid()
        self.proc = os.fsencode(proc)
        self.command = command
        self.pss = PssBook(pss_share)
        self.procs = {}          # pid -> Proc: the tree as of the last walk
        self.top = ()            # root's children
        self.sums = [0] * 11     # the tree's totals, in NAMES order (CPU in ticks)
        self.floor = {}          # the counters as last read: they never go back
        self.regrouped = set()   # pids whose children changed since the last read
        self.moved = False       # a process's children changed in this walk
        self.orphans = []        # children of processes that died: where did they go?
        self.foreign = set()     # pids in /proc that are not ours (scan mode)
        self.census = Census()   # the most processes known to have existed at once
        self.born = []           # processes found in this walk
        try:   # run times in schedstat (we are running: ours is not 0)
            self.has_schedstat = not read_once(b"/proc/thread-self/schedstat").startswith(b"0 ")
        except OSError:
            self.has_schedstat = False
        self.clocks = clocks_are_ours(self.proc)   # else (a recorded tree): schedstat
        self.waits = TreeWaits(proc)   # run-queue wait of its threads
        self.comms = {}          # one bytes object per command name
        if not os.path.isdir(self._dir(root)):
            raise OSError(f"{self._dir(root).decode()} not readable")
        # CONFIG_PROC_CHILDREN: walk down from the root instead of listing all of /proc
        self.has_children = os.path.exists(self._dir(root) + b"task/%d/children" % root)

    def _dir(self, pid):
        return b"%s/%d/" % (self.proc, pid)

    # --- one process -----------------------------------------------------------------------

    def _count(self, p, sign):
        """Add (1) or take away (-1) what p contributes to the totals."""
        s = self.sums
        s[0] += sign * p.user
        s[1] += sign * p.system
        if p.io is not None:
            s[2] += sign * p.io[0]
            s[3] += sign * p.io[1]
            s[4] += sign * p.io[2]
            s[5] += sign * p.io[3]
        if p.state not in ZOMBIE:
            s[6] += sign
            s[7] += sign * p.threads
            if p.mem is not None:
                s[8] += sign * p.mem[0]
                s[9] += sign * p.mem[1]
                s[10] += sign * p.mem[2]

    def _kids(self, pid, threads, scan):
        """Children of every thread of `pid` (threads 1: only the main one can have any)."""
        if scan is not None:
            return scan.get(pid, ())
        d = self._dir(pid)
        if threads == 1:
            return tuple(map(int, read_all(b"%stask/%d/children" % (d, pid)).split()))
        kids = []
        for tid in os.listdir(d + b"task"):
            try:
                kids += read_all(d + b"task/" + tid + b"/children").split()
            except OSError:
                pass
        return tuple(map(int, kids))

    def _full(self, p, scan):
        """Re-read a process that ran (or is new); False if it is gone."""
        try:
            f = stat_fields(read_once(p.dir + b"stat"))
        except (OSError, ValueError, IndexError):
            return False
        if p.start is not None and f[6] != p.start or f[0] == b"X":
            return False   # the pid belongs to another process now; or its parent is reaping
            #                it, and may hold its CPU and I/O already
        if p.counted:
            self._count(p, -1)
        was_live, new = p.state not in ZOMBIE, p.start is None
        (p.state, p.ppid, p.minflt, p.user, p.system, p.threads, p.start, p.rss, p.sid,
         p.ticks, comm) = f
        p.comm = self.comms.setdefault(comm, comm)
        p.mem = None
        live = p.state not in ZOMBIE
        if not live and p.died is None:
            p.died = now()
        if was_live and not live:
            self.regrouped.add(p.ppid)   # (its siblings share their pages with one less)
            self.orphans += p.kids       # re-parented when it died: maybe inside the tree
        kids = ()
        if live:   # a zombie's children went to a subreaper when it died
            try:
                kids = self._kids(p.pid, p.threads, scan)
            except (OSError, ValueError):
                pass
        if kids != p.kids:
            self.regrouped.add(p.pid)    # (its children's fork family changed)
            self.moved = True
            p.forked = p.forked or not set(kids) <= set(p.kids)
            p.kids = kids
        eager = not new or p.threads > 1 or p.user + p.system > p.ticks or p.ran >= LAZY
        if eager:
            try:
                p.io = io_fields(read_once(p.dir + b"io"))
            except (OSError, ValueError, IndexError):
                pass                     # not ours to read (setuid): counted without its I/O
        if live and p.pss is not None:
            try:
                p.statm = parse_statm(read_once(p.dir + b"statm"))
            except (OSError, ValueError, IndexError):
                pass
        if eager and self.clocks and p.threads == 1 and scan is None and self.has_schedstat:
            try:   # its run-queue wait (a recorded tree's was read to tell whether it ran)
                p.sched = read_once(p.dir + b"schedstat")
            except OSError:
                pass
        if p.counted:
            self._count(p, 1)
        self.waits.saw(p)
        if live:   # its estimate is to be redone, and its PSS may be off (see PssBook)
            self.pss.stale.add(p.pid)
            if p.pss_at is not None and p.minflt != p.pss_minflt:
                self.pss.faulted.add(p.pid)
        return True

    def _new(self, pid, scan):
        """A process first seen; None if it is gone already."""
        p = Proc(pid, self._dir(pid))
        p.seen = now()   # listed as a child before, read after: it existed then
        if self.clocks:
            try:
                p.ran = time.clock_gettime_ns(cpu_clock(pid))
            except OSError:
                return None              # reaped already
        else:
            if scan is None and self.has_schedstat:
                try:
                    p.sched = read_once(p.dir + b"schedstat")
                except OSError:
                    pass
            p.ran = run_ns(p.sched)
        if not self._full(p, scan):
            self._forget(p)
            return None
        self.pss.came(p)
        # jobmon started only the command: any other child of it is an orphan it adopted
        p.orphan = p.ppid == self.root and self.command not in (None, pid) \
            and not self.include_root
        self.born.append(p)
        return p

    def _left(self, p):
        """p is no longer in the tree: the census keeps when it last existed."""
        self.census.ended.append(Life(p.pid, p.start, max(p.seen, self.census.last), p.sid,
                                      p.died, p.orphan))
        self._forget(p)

    def _forget(self, p):
        self.waits.left(p.pid)
        if p.counted:
            self._count(p, -1)
            p.counted = False
        self.pss.went(p)

    def _changed(self, scan):
        """The known processes that may have changed since the last walk, and those gone.

        One whose CPU clock has not moved has not run, so cannot have changed; one that was
        reaped has no clock. In a recorded tree, schedstat says the same of a one-thread
        process (for more, the leader's run time misses the other threads')."""
        if scan is not None or not (self.clocks or self.has_schedstat):
            return list(self.procs.values()), []
        ran, gone, gettime = [], [], time.clock_gettime_ns
        if self.clocks:
            for p in self.procs.values():
                try:
                    ns = gettime((~p.pid << 3) | 2)   # (cpu_clock inlined: 1000s a sample)
                except OSError:
                    gone.append(p)
                    continue
                if ns != p.ran:
                    p.ran = ns
                    ran.append(p)
            return ran, gone
        for p in self.procs.values():
            if p.threads == 1:
                try:
                    sched = read_once(p.dir + b"schedstat")
                except OSError:
                    gone.append(p)
                    continue
                if sched == p.sched:
                    continue
                p.sched = sched
            ran.append(p)
        return ran, gone

    # --- the tree --------------------------------------------------------------------------

    def _walk(self):
        """Bring the tree below root up to date: {pid: Proc}."""
        moment = now()
        scan = None if self.has_children else scan_tree(self.proc, self.root, self.foreign)
        old, self.moved = self.procs, False
        top = () if self.include_root else self._kids(self.root, 0, scan)
        if top != self.top:
            self.regrouped.add(self.root)
            self.moved, self.top = True, top
        ran, gone = self._changed(scan)
        for p in ran:
            if not self._full(p, scan):
                gone.append(p)
        # who reaped one that went holds its CPU and I/O now, but may have been read before
        for pid in {p.ppid for p in gone} - {p.pid for p in gone}:
            p = old.get(pid)
            if p is not None and not self._full(p, scan):
                gone.append(p)
        if gone or self.moved or self.orphans or not old:
            self._rebuild(old, gone, scan)
        self.census.count(moment, self.procs, self.born)
        self.born = []
        return self.procs

    def _rebuild(self, old, gone, scan):
        """The tree again from root, after processes came, went or moved."""
        for p in gone:
            self._left(p)
        dead = {p.pid for p in gone}
        tree = {}
        todo = [self.root] if self.include_root else list(self.top)
        adopted = [k for p in gone for k in p.kids] + self.orphans   # re-parented: maybe
        self.orphans = []                                               # inside the tree
        while todo or adopted:
            if not todo:                 # (a subreaper of the job, or a sibling thread)
                p = old.get(adopted.pop())
                if p is not None and p.pid not in dead and p.pid not in tree \
                        and self._full(p, scan) and p.ppid in tree:
                    tree[p.ppid].kids += (p.pid,)
                    self.regrouped.add(p.ppid)
                    todo.append(p.pid)
                continue
            pid = todo.pop()
            if pid in tree:
                continue
            p = old.get(pid)
            if p is None or pid in dead:  # new (or a new process that got a dead one's pid)
                p = self._new(pid, scan)
                if p is None:
                    continue
                p.counted = True
                self._count(p, 1)
            tree[pid] = p
            todo += p.kids
        for pid, p in old.items():
            if pid not in tree and pid not in dead:   # left the tree (adopted outside)
                self._left(p)
        self.procs = tree

    def reaping(self, pid):
        """jobmon is about to reap its child `pid`, a zombie: it existed until now. One no
        walk found (it lived between two samples) joins the census here."""
        p = self.procs.get(pid)
        if p is not None:
            p.seen = now()
        else:
            self.census.reaping(self.proc, pid, self.command)

    def procs_peak(self):
        """The most processes known to have existed at once (zombies too: see lifetimes)."""
        return self.census.peak or None

    # --- one sample ------------------------------------------------------------------------

    def read(self, final=False):
        self._walk()
        s = self.sums
        out = dict(zip(NAMES, s))
        out["cpu_user_seconds"], out["cpu_system_seconds"] = s[0] / TICK, s[1] / TICK
        mem = self._memory()
        self.regrouped = set()   # (walks for pids() or alive() add to it till then)
        if mem is not None:
            out["mem_resident_bytes"], out["mem_cache_bytes"], out["mem_swap_bytes"] = mem
        if self.has_schedstat:
            out["cpu_wait_seconds"] = self.waits.seconds(self.procs)
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
        # a write cancelled after it was counted (a file truncated before writeback) or a
        # process gone out of the tree takes nothing back from what the job did
        for k in COUNTERS:
            if k in out:
                out[k] = self.floor[k] = max(out[k], self.floor.get(k, out[k]))
        return out

    def _memory(self):
        """(resident, cache, swap) of the live processes."""
        if self.sums[6] < 2:   # one process shares nothing within the job: its RSS, ~4 µs
            for p in self.procs.values():
                if p.state not in ZOMBIE:
                    try:
                        return parse_status(read_once(p.dir + b"status"))
                    except (OSError, ValueError, IndexError):
                        return None
            return 0, 0, 0
        self.pss.update(self.procs, self.top, self.regrouped, self.sums)
        return self.sums[8:11]

    def pids(self):
        return sorted(p.pid for p in self._walk().values() if p.state not in ZOMBIE)

    def sampled_pids(self):
        return [p.pid for p in self.procs.values() if p.state not in ZOMBIE]

    def stats(self):
        """(pid, comm, state, own CPU ticks, start ticks, resident bytes) of each process as
        the last walk read it: the per-process breakdown without reading /proc again (one
        that did not run since cannot have changed but for pages the kernel reclaimed)."""
        return [(p.pid, p.comm, p.state, p.ticks, p.start, p.rss * PAGE)
                for p in self.procs.values()]

    def alive(self):
        self._walk()
        return self.sums[6] > 0

    def close(self):
        for p in self.procs.values():
            self._forget(p)
        self.procs = {}
        self.waits.close()
