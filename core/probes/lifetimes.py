"""How many of a job's processes lived at once, from what an unprivileged parent can know.

A process of the job exists from its fork until it is reaped (a zombie still counts, as the
pids controller counts it). No unprivileged interface reports a fork, so the procfs probe
knows of each process it found:
- its birth: the clock tick of CLOCK_BOOTTIME it was forked in (stat's start time);
- moments it still existed: the sample that found it, every later sample, and, for jobmon's
  own children (the command and every orphan it adopted), the moment before jobmon reaped it;
- for an orphan jobmon adopted, its parent: jobmon adopts a process only once its parent
  died, so at the orphan's birth its parent lived too, found or not.
A set of processes lived at once if each was born before the moment some of them was last
known to exist. The peak is the largest set that can be proven so: every process a sample
or jobmon's reaping saw and every orphan's parent count; a process born and reaped by a
parent of the job between two samples is not seen, so then the peak is a lower bound.
"""
import time
from bisect import bisect_left, bisect_right

from .files import TICK, ZOMBIE, read_once, stat_fields

NS = 10 ** 9 // TICK     # ns per tick of stat's start time


def now():
    """The clock of stat's start times (a time namespace shifts both alike)."""
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME)


class Life:
    """What the census keeps of a process no longer in the tree, or reaped unseen."""

    __slots__ = ("pid", "start", "seen", "sid", "died", "orphan", "not_parent")

    def __init__(self, pid, start, seen, sid, died=None, orphan=False, not_parent=None):
        self.pid, self.start, self.seen, self.sid = pid, start, seen, sid
        self.died, self.orphan = died, orphan   # died: a moment it was known dead at
        self.not_parent = not_parent            # a pid alive once it was an orphan


def proven_from(life):
    """The first moment it is known to exist at: the end of its birth tick, or the moment
    it was seen if that came first (born in the same tick)."""
    return min((life.start + 1) * NS, life.seen)


def order(life):
    """Birth order: the tick, then the pid (pids are handed out in turn: of two processes
    born in one tick, the lower pid was forked first, unless the pid counter wrapped in
    between)."""
    return life.start, life.pid


def may_be_parent(q, orphan):
    """Whether q, dead now, may be the dead parent of `orphan`: it died after the orphan's
    birth tick began, it was not alive once the orphan was adopted, and the orphan's session
    is q's (fork keeps the session; only setsid changes it, to the caller's own pid)."""
    return (q.died is None or q.died > orphan.start * NS) and q.pid != orphan.not_parent \
        and orphan.sid in (q.sid, orphan.pid)


class Census:
    """The most processes of a job known to have existed at once."""

    def __init__(self):
        self.peak = 0
        self.last = 0          # ns: the moment the last walk began
        self.ended = []        # Life of each process that left the tree since then
        self.reaped = []       # Life of jobmon's children reaped before a walk found them
        self.before = [], []   # the last walk's births and gone processes: counted again

    def reaping(self, proc, pid, command):
        """jobmon, under `proc`, is about to reap `pid`, a zombie child no walk found (it
        lived between two samples): it existed until now. If it is an orphan (not the
        `command` jobmon started) and the command is alive, the command was not its parent."""
        seen = now()
        try:
            f = stat_fields(read_once(b"%s/%d/stat" % (proc, pid)))
        except (OSError, ValueError, IndexError):
            return
        orphan = command not in (None, pid)
        self.reaped.append(Life(pid, f[6], seen, f[8], seen, orphan,
                                command if orphan and alive(proc, command) else None))

    def count(self, moment, tree, born):
        """After a walk that began at `moment`: `tree`, the job's processes now (Proc), each
        found by an earlier walk and so existing at `moment`, but those in `born`, found by
        this one (`seen`: when; `orphan` set on those jobmon adopted). A birth is counted
        again at the next walk: what existed then is known better after it (one that was
        born during a walk is younger than that walk's moment)."""
        gone = self.ended + self.reaped
        births = list(born) + self.reaped
        old_births, old_gone = self.before
        self.ended, self.reaped, self.before, self.last = [], [], (births, gone), moment
        best = max(self.peak, len(tree) - sum(1 for p in born if proven_from(p) > moment))
        # a birth saw more than the walks only if a process gone since existed then, or
        # an orphan's unseen parent did
        horizon = max([q.seen for q in gone + old_gone] or [0])
        todo = [n for n in births + old_births
                if n.orphan or horizon and proven_from(n) <= horizon]
        if todo:
            new = {id(p) for p in born}
            lives = [(proven_from(p), p.seen if id(p) in new else moment, p)
                     for p in tree.values()]
            lives += [(proven_from(q), q.seen, q) for q in gone + old_gone]
            lives.sort(key=lambda x: x[1])
            starts = sorted(b for b, _, _ in lives)
            ends = [e for _, e, _ in lives]
            keys = sorted(order(q) for _, _, q in lives)
            for n in todo:
                t = proven_from(n)
                best = max(best, bisect_right(starts, t) - bisect_left(ends, t),
                           at_birth(n, t, lives, bisect_left(keys, order(n))))
        self.peak = best
        return best


def alive(proc, pid):
    try:
        return stat_fields(read_once(b"%s/%d/stat" % (proc, pid)))[0] not in ZOMBIE
    except (OSError, ValueError, IndexError):
        return False


def at_birth(n, t, lives, older):
    """Processes that existed when n was forked: n itself, each of the `older` ones (born
    before it) still known to exist at t (once n is known to be born), and, for an orphan,
    its parent, unless one of those that died may be it (else it was never seen)."""
    key, parent = order(n), not n.orphan
    for _, e, q in lives:    # by when they were last known to exist
        if e >= t:
            if parent:
                break
            if order(q) < key and getattr(q, "state", b"Z") in ZOMBIE and may_be_parent(q, n):
                parent = True
        elif order(q) < key:
            older -= 1           # born before it, but not known to exist at its birth
    return older + 1 + (0 if parent else 1)
