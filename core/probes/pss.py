"""What the procfs probe knows of one process, and its PSS between two page-table walks.

PSS (proportional set size: each page divided by the number of processes mapping it) is
what keeps the pages forked workers share from counting once per worker, but reading it
(smaps_rollup) walks the process's page tables: 35-100 µs, against ~1 µs for knowing
whether the process ran at all. So the procfs probe re-reads it within a budget, and
`Proc.estimate` carries it forward from what the cheap counters say happened since.

The walk also holds the process's mmap lock: for ~10-25 ms per GB resident the process
cannot map or unmap memory (nor, on kernels without per-VMA locks, take a page fault once
such a writer waits). So besides the CPU budget, one sample walks at most PSS_WALK_BYTES of
resident memory in all, and a process larger than that is never walked: its PSS comes
from its own counters (the pages it faulted in, at most its RSS).
"""
import itertools
import os
import time
from _collections import deque   # the collections package costs each job ~3 ms to import

from .files import ZOMBIE, parse_pss, parse_statm, read_once

PAGE = os.sysconf("SC_PAGE_SIZE")
PSS_SHARE = 0.001     # of a core for PSS page walks: ~25 a second at 40 µs each
PSS_BURST = 5.0       # s of unspent PSS budget that may be spent at once
PSS_MAX_AGE = 60.0    # s after which a PSS is as doubtful as the process's whole size
PSS_WALK_BYTES = 128 << 20   # resident bytes one sample may walk: a stall of ~1.5-3 ms


class Proc:
    """One process of the job, as of the last time it ran."""

    __slots__ = ("pid", "dir", "ran", "sched", "state", "ppid", "minflt", "user", "system",
                 "threads", "start", "rss", "kids", "io", "statm", "pss", "pss_at",
                 "pss_minflt", "pss_group", "forked", "mem", "counted", "sid", "seen", "died",
                 "orphan", "not_parent", "ticks", "comm")

    def __init__(self, pid, path):
        self.pid, self.dir = pid, path
        self.ran = None          # its CPU clock (ns) as last read
        self.sched = None        # its schedstat as last read: run time (ns), wait, time slices
        self.start = self.state = None   # start: clock ticks after boot, tells a reused pid
        self.kids = ()
        self.io = self.statm = self.pss = self.pss_at = None
        self.pss_group = 1       # its fork family when the PSS was read
        self.forked = False      # it forked since then
        self.mem = None          # estimate(), until something changes
        self.counted = False     # in the probe's totals
        self.seen = 0            # ns: a moment it existed at (lifetimes.now)
        self.died = None         # ns: a moment it was known to have exited at
        self.orphan = False      # adopted by jobmon (its parent died)
        self.not_parent = None   # (lifetimes.Life)

    def doubt(self, now):
        """Bytes by which the PSS estimate may be off: never read; faults since (new pages,
        pages copied on write); age (others' faults and exits move its share too)."""
        if self.pss is None:
            return self.rss * PAGE
        return (self.minflt - self.pss_minflt) * PAGE \
            + sum(self.pss[:4]) * (now - self.pss_at) / PSS_MAX_AGE

    def estimate(self, group):
        """(resident, cache, swap) bytes: the last PSS, moved by what happened since.
        - Its shared pages were mapped by RSS/PSS processes on average: as many more (or
          fewer) as its fork family (its parent and the parent's children, or itself and
          its own children) has gained since, to `group` now, share them now.
        - A new anonymous page is private: +1 page. A fault that added no page copied a
          shared one on write: +1 page, its own share and the share the others of its
          family gain by it, as they may not run to tell (the job's total is what counts).
          (Not for a process that forked since: it copies the same pages again after every
          fork; its next read tells.)
        - File and shmem pages move with their RSS, at the share they had.
        Its PSS never read (not ours, or too large to walk): the pages it faulted in, as
        its own."""
        if self.pss is None:
            return min(self.minflt, self.rss) * PAGE, 0, 0
        anon, shmem, file, swap, anon_rss, other_rss, private = self.pss
        if group != self.pss_group:
            own = min(private, anon)         # private pages are anonymous, mostly
            anon = self._share(anon, anon_rss, own, group)
            both = self._share(shmem + file, other_rss, min(private - own, shmem + file), group)
            shmem, file = (shmem * both // (shmem + file), file * both // (shmem + file)) \
                if shmem + file else (0, 0)
        if self.statm is not None:
            res, in_files = self.statm
            anon_now, files_now = (res - in_files) * PAGE, in_files * PAGE
            grown = anon_now - anon_rss
            copied = (self.minflt - self.pss_minflt) * PAGE - max(grown, 0) \
                - max(files_now - other_rss, 0)
            if copied > 0 and not self.forked and anon_rss > anon:
                grown += copied
            anon = min(max(anon + grown, 0), anon_now)
            if other_rss:
                shmem, file = shmem * files_now // other_rss, file * files_now // other_rss
        return anon + shmem, file, swap

    def _share(self, pss, rss, own, group):
        """PSS of pages of which `own` are its own and the rest were shared by rss/pss
        processes on average, when its family went from pss_group to group."""
        if rss - own > pss - own > 0:
            sharers = (rss - own) / (pss - own) + group - self.pss_group
            return own + int((rss - own) / max(sharers, 1))
        return pss


def middle(triples):
    """The median of each member of a list of triples."""
    n = len(triples) // 2
    return tuple(sorted(t[i] for t in triples)[n] for i in range(3))


class PssBook:
    """Whose PSS to re-read within the budget, and the estimates of the job's processes.

    The probe tells it what came and went, and puts what ran in `stale` (and in `faulted`
    if it faulted since its read); update() then re-reads what it can afford and redoes the
    estimates that changed, correcting the probe's memory totals (sums[8:11], over its
    live processes) by what they moved."""

    def __init__(self, share):
        self.share = share       # of a core (None: every process at every sample)
        self.allow, self.clock = 0.0, time.monotonic()
        self.cost = 50e-6        # s of CPU per PSS read, running mean
        self.stale = set()       # live pids whose estimate must be redone
        self.unread = deque()    # pids never read, in the order they came
        self.fresh = []          # processes new since the last update
        self.faulted = set()     # pids that faulted since they were read, or read long ago
        self.read_order = deque()   # (time, pid) of reads, oldest first
        self.families = set()    # parents one of whose children was read after it ran
        self.touched = set()     # parents whose children's estimates moved in this update
        self.medians = {}        # parent -> median of its children read, as last given out
        self.tree, self.top, self.sizes, self.sums = {}, (), {}, []
        self.walk = PSS_WALK_BYTES   # resident bytes this sample may still walk

    def came(self, p):
        self.unread.append(p.pid)
        self.fresh.append(p)

    def went(self, p):
        self.stale.discard(p.pid)
        self.faulted.discard(p.pid)

    def kin(self, ppid):
        """The children of ppid in the tree (top: those of its root)."""
        tree = self.tree
        return [tree[k] for k in (tree[ppid].kids if ppid in tree else self.top) if k in tree]

    def group(self, p):
        """Size of p's fork family now: its parent and the parent's children that still
        have memory (not one that is exiting), or itself and its own, whichever is larger."""
        sizes = self.sizes
        for ppid in (p.ppid, p.pid):
            if ppid not in sizes:
                sizes[ppid] = 1 + sum(1 for k in self.kin(ppid) if k.rss and k.state not in ZOMBIE)
        return max(sizes[p.ppid], sizes[p.pid])

    def _set(self, p, m):
        old, p.mem, s = p.mem or (0, 0, 0), m, self.sums
        s[8] += m[0] - old[0]
        s[9] += m[1] - old[1]
        s[10] += m[2] - old[2]

    def update(self, tree, top, regrouped, sums):
        self.tree, self.top, self.sizes, self.sums = tree, top, {}, sums
        self._refresh()
        stale = self.stale
        for pid in regrouped:    # the fork family of its children changed: the shares of
            # those read change (the others follow their median below)
            stale.update(p.pid for p in self.kin(pid) if p.pss_at is not None)
            stale.add(pid)
        unread = []
        for pid in stale:
            p = tree.get(pid)
            if p is None or p.state in ZOMBIE:
                continue
            if p.pss_at is None:
                unread.append(p)
                continue
            self._set(p, p.estimate(self.group(p)))
            self.touched.add(p.ppid)
        # never read: the median of its siblings that were (forked siblings run the same
        # code), given out again when it moved by 5 % (a family of 1000 growing would
        # otherwise redo 1000 estimates a sample)
        for ppid in self.touched | regrouped:
            kin = self.kin(ppid)
            read = [p for p in kin if p.pss is not None and p.mem and p.state not in ZOMBIE]
            read = [p for p in read if p.pss_minflt] or read   # (read after they ran)
            last = self.medians.get(ppid)
            if not read:
                continue
            m = middle([p.mem for p in read])
            if last is None or abs(sum(m) - sum(last[0])) > sum(last[0]) / 20:
                self.medians[ppid] = m, middle([(p.minflt, p.pss[6], 0) for p in read])[:2]
                unread += [p for p in kin if p.pss_at is None and p.state not in ZOMBIE]
        for p in unread:
            self._set(p, self._like_siblings(p))
        self.stale, self.touched = set(), set()
        if len(self.medians) + len(self.families) > 4 * len(tree) + 64:   # parents gone
            self.medians = {k: v for k, v in self.medians.items() if k in tree}
            self.families &= tree.keys()

    def _like_siblings(self, p):
        """A never-read process as the median of its read siblings, less the private pages
        they had made (copied on write, or new) where it faulted fewer pages than they did
        (just forked: it has not run yet). One exiting has let its memory go."""
        if not p.rss:
            return 0, 0, 0
        if p.ppid not in self.medians:
            return p.estimate(1)
        like, (minflt, own) = self.medians[p.ppid]
        if p.minflt < minflt:
            return max(like[0] - own * (minflt - p.minflt) // minflt, 0), like[1], like[2]
        return like                  # (one tuple shared by the siblings: 60 B each saved)

    def _refresh(self):
        """First one child of each parent none of whose children was read after it ran
        (the others are estimated from it; this may run into debt, up to one burst), then
        the most doubtful, as many as the budget allows at the cost of the last reads."""
        now, tree = time.monotonic(), self.tree
        if self.share is None:
            for p in list(tree.values()):
                if p.state not in ZOMBIE:
                    self._read(p, now)
            return
        self.walk = PSS_WALK_BYTES
        self.allow = min(self.allow + self.share * (now - self.clock), self.share * PSS_BURST)
        self.clock = now
        unread = self.unread
        while unread and (unread[0] not in tree or tree[unread[0]].pss_at is not None):
            unread.popleft()
        fresh, self.fresh = self.fresh, []
        for p in fresh:
            if p.ppid not in self.families and p.state not in ZOMBIE and p.pid in tree \
                    and self.allow > -self.share * PSS_BURST and p.pss_at != now \
                    and self._walks(p):
                self._read(p, now)
        order = self.read_order
        while order and order[0][0] < now - PSS_MAX_AGE:
            pid = order.popleft()[1]
            if pid in tree and tree[pid].pss_at < now - PSS_MAX_AGE:
                self.faulted.add(pid)
        if self.allow <= 0:
            return
        n = int(self.allow / self.cost) + 1
        todo = [(p.doubt(now), p) for p in map(tree.get, self.faulted) if p is not None]
        todo += [(self._doubt(p), p) for p in map(tree.get, itertools.islice(unread, n))
                 if p is not None and p.pss_at is None]
        unread.rotate(-min(n, len(unread)))   # (the next ones next time)
        todo.sort(key=lambda x: x[0], reverse=True)
        for doubt, p in todo[:n]:
            if self.allow <= 0 or doubt < PAGE:
                break
            if p.pss_at != now and p.state not in ZOMBIE and self._walks(p):
                self._read(p, now)

    def _doubt(self, p):
        """A never-read process's doubt: its size, or, where read siblings give it their
        median, how far its own faults are from theirs (idle forked workers: nothing)."""
        like = self.medians.get(p.ppid)
        return p.rss * PAGE if like is None else abs(p.minflt - like[1][0]) * PAGE

    def _walks(self, p):
        """Whether p's page tables fit in what this sample may still walk (and count it)."""
        size = p.rss * PAGE
        if size > self.walk:
            return False
        self.walk -= size
        return True

    def _read(self, p, now):
        t = time.thread_time()
        try:
            p.pss = parse_pss(read_once(p.dir + b"smaps_rollup"))
            p.statm = parse_statm(read_once(p.dir + b"statm"))
        except (OSError, ValueError, IndexError):
            pass                         # gone, or not ours to read: estimated
        p.pss_at, p.pss_minflt, p.forked = now, p.minflt, False
        p.pss_group = self.group(p)
        self.stale.add(p.pid)
        self.faulted.discard(p.pid)
        if p.minflt:                 # it has run: what its siblings will look like
            self.families.add(p.ppid)
        else:                        # just forked: read again as its family's first
            self.fresh.append(p)
        self.read_order.append((now, p.pid))
        if self.share is not None:
            t = time.thread_time() - t
            self.allow -= t
            self.cost = (3 * self.cost + t) / 4
