"""Which processes of a job use its CPU and memory: the top N by command name (comm).

Taken at a lower rate than samples (config [procs] every_seconds, default 30 s) so that it
stays within the sampler's cost budget: one read of /proc/<pid>/stat and children per live
process of the job that ran since the last take (pids from the probe: cgroup.procs in cgroup
mode; in procfs mode the probe's own walk has just read them all, zombies too, and hands
over what it read),
plus /proc/<pid>/cmdline of each group shown, only where the site allows command lines
([procs] cmdline, default off). What it keeps between takes: one (start, CPU ticks) pair per
live process, to give CPU over the window. Standard library only (inside every job).

A record: {"time", "elapsed_seconds", "window_seconds", "procs", "top": [{"comm", "procs",
"cpu_cores", "rss_bytes", "states"[, "wchan"][, "cmdline"]}]}: the groups among the N
heaviest by CPU or by resident memory, CPU first. Processes that ended during the window
are not in it. states: how many of the group's processes were in each state (R running, S
sleeping, D uninterruptible -- usually I/O --, Z zombie, T stopped ...); wchan: where its
waiting processes wait (/proc/<pid>/wchan: the kernel function; read for a few of each
group shown, where the kernel tells), what an admin asks first of a stalled job.
"""
import os
import time

from .files import PROC, TICK, clocks_are_ours, cpu_clock, read_once

PAGE = os.sysconf("SC_PAGE_SIZE")
MAX_TOP = 20               # groups shown at most, whatever the config says
MAX_CMDLINE = 256          # characters of a command line kept
WCHAN_READS = 4            # waiting processes of a group shown whose wchan is read
FIRST_AFTER = 10.0         # seconds to the first take (short jobs get one too)


def parse_stat(data):
    """(comm, state, cpu ticks, start ticks, rss bytes) from /proc/<pid>/stat."""
    head, _, rest = data.rpartition(b") ")
    f = rest.split()
    return head.partition(b" (")[2], f[0], int(f[11]) + int(f[12]), int(f[19]), int(f[21]) * PAGE


def read_stats(proc, pids, known=None):
    """(pid, comm, state, cpu ticks, start ticks, rss bytes) of each of the live `pids` still
    there, and of their zombie children (a probe lists live processes only).

    known: {pid: (run ns, stat row, children)} of the last call, kept up to date here, where
    the pids' CPU clocks are ours to read: one whose clock has not moved has not run, so has
    neither changed its stat (but for pages the kernel reclaimed) nor forked, and costs one
    clock_gettime (~1 µs) instead of two files (~30 µs the first time)."""
    pids = list(pids)
    listed = set(pids)
    seen = {}
    for pid in pids:
        if pid in listed and known is not None:
            try:
                ns = time.clock_gettime_ns(cpu_clock(pid))
            except OSError:
                continue    # reaped
            last = known.get(pid)
            if last is not None and last[0] == ns:
                seen[pid] = last
                pids += [c for c in last[2] if c not in listed]
                yield (pid,) + last[1]
                continue
        try:
            row = parse_stat(read_once(b"%s/%d/stat" % (proc, pid)))
        except (OSError, ValueError, IndexError):
            continue        # gone meanwhile
        if pid in listed:
            kids = children(proc, pid)
            pids += [c for c in kids if c not in listed]
            if known is not None:
                seen[pid] = (ns, row, kids)
        elif row[1] != b"Z":
            continue        # a child of the job that is not its own (another cgroup)
        yield (pid,) + row
    if known is not None:
        known.clear()
        known.update(seen)


def wchan(proc, pid):
    """The kernel function the process waits in, or None (running, gone, or the kernel
    does not say: "0" to a reader without access)."""
    try:
        name = read_once(b"%s/%d/wchan" % (proc, pid)).strip().decode("ascii", "replace")
    except OSError:
        return None
    return name if name and name != "0" else None


def children(proc, pid):
    """The pids of the process's children (those of its main thread)."""
    try:
        return [int(c) for c in read_once(b"%s/%d/task/%d/children" % (proc, pid, pid)).split()]
    except (OSError, ValueError):
        return []


def cmdline(proc, pid):
    try:
        raw = read_once(b"%s/%d/cmdline" % (proc, pid))[:MAX_CMDLINE * 4]
    except OSError:
        return None
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    return text[:MAX_CMDLINE] or None


class Breakdown:
    def __init__(self, pids, top=5, every=30.0, with_cmdline=False, proc=PROC,
                 clock=time.monotonic, stats=None):
        """pids(): the job's live pids (a probe's pids); stats(): what read_stats gives,
        from a probe that has just read it (procfs)."""
        self.pids, self.top, self.every = pids, max(min(int(top), MAX_TOP), 1), float(every)
        self.with_cmdline, self.proc, self.clock = with_cmdline, os.fsencode(proc), clock
        if stats is None:
            known = {} if clocks_are_ours(self.proc) else None   # (a recorded tree: read all)

            def stats():
                return read_stats(self.proc, self.pids(), known)
        self.stats = stats
        self.last = {}                  # pid -> (start ticks, cpu ticks) at the last take
        self.last_at = None
        self.due_at = clock() + min(self.every, FIRST_AFTER)

    def due(self, now=None):
        return (self.clock() if now is None else now) >= self.due_at

    def take(self, elapsed=None):
        """One record (see the module doc)."""
        now = self.clock()
        window = now - self.last_at if self.last_at is not None else None
        uptime = float(read_once(b"%s/uptime" % self.proc).split()[0])
        groups, seen, dead = {}, {}, 0
        for pid, comm, state, ticks, start, rss in self.stats():
            state = state.decode("ascii", "replace")
            if state in ("Z", "X"):     # no CPU or memory of its own: counted, not timed
                g = groups.setdefault(comm, [0, 0.0, 0, pid, -1.0, {}, []])
                g[0] += 1
                g[5][state] = g[5].get(state, 0) + 1
                dead += 1
                continue
            seen[pid] = (start, ticks)
            before = self.last.get(pid)
            if before is not None and before[0] == start and window:
                cores = (ticks - before[1]) / TICK / window
            else:               # new since the last take: its average over its life
                cores = ticks / TICK / max(uptime - start / TICK, 1.0 / TICK)
            g = groups.setdefault(comm, [0, 0.0, 0, pid, -1.0, {}, []])
            g[0] += 1
            g[1] += cores
            g[2] += rss
            if cores > g[4]:
                g[3], g[4] = pid, cores
            g[5][state] = g[5].get(state, 0) + 1
            if state in ("S", "D") and len(g[6]) < WCHAN_READS:
                g[6].append(pid)
        self.last, self.last_at = seen, now
        self.due_at = now + self.every
        by_cpu = sorted(groups, key=lambda c: -groups[c][1])[:self.top]
        by_mem = sorted(groups, key=lambda c: -groups[c][2])[:self.top]
        shown = by_cpu + [c for c in by_mem if c not in by_cpu]
        top = []
        for comm in shown:
            n, cores, rss, pid, _, states, waiting = groups[comm]
            entry = {"comm": comm.decode("utf-8", "replace"), "procs": n,
                     "cpu_cores": round(cores, 3), "rss_bytes": rss, "states": states}
            waits = {}
            for w in filter(None, (wchan(self.proc, p) for p in waiting)):
                waits[w] = waits.get(w, 0) + 1
            if waits:
                entry["wchan"] = waits
            if self.with_cmdline:
                entry["cmdline"] = cmdline(self.proc, pid)
            top.append(entry)
        return {"time": time.time_ns(), "elapsed_seconds": elapsed,
                "window_seconds": round(window, 3) if window else None,
                "procs": len(seen) + dead, "top": top}


# the breakdown's fields, one record per job every [procs] every_seconds (docs/live.md);
# its groups travel as one JSON text, procs_top (jobmon.metrics.declared: PROCS_FIELDS)
METRICS = (
    {"name": "procs_top", "unit": "JSON", "range": None, "kind": "gauge", "method": "estimated",
     "meaning": "the job's heaviest processes grouped by command name: the top N by CPU and the "
                "top N by resident memory (a list of the objects below, CPU first)"},
    {"name": "procs", "unit": "count", "range": "count", "kind": "gauge", "method": "exact",
     "meaning": "processes of the job looked at, zombies included"},
    {"name": "window_seconds", "unit": "s", "range": "wall", "kind": "gauge", "method": "derived",
     "meaning": "time since the previous breakdown, over which each group's CPU is averaged "
                "(absent in the first: each process's average over its life)"},
    {"name": "elapsed_seconds", "unit": "s", "range": "wall", "kind": "gauge", "method": "exact",
     "meaning": "seconds since the job started"},
)
# key, unit, meaning: one group of procs_top (jobmon.metrics.PROCS_TOP_KEYS)
TOP_KEYS = (
    ("comm", "", "command name (the kernel's comm, at most 15 bytes)"),
    ("procs", "count", "live processes with that name"),
    ("cpu_cores", "cores", "their CPU over the window, in cores"),
    ("rss_bytes", "bytes", "their resident memory (RSS: pages shared between them count in each)"),
    ("states", "",
     "how many of them were in each state: R running, S sleeping, D waiting uninterruptibly "
     "(usually on I/O), Z zombie (exited, not yet reaped), T stopped"),
    ("wchan", "",
     "where its waiting processes (S, D) wait: kernel function -> how many, read from "
     "/proc/<pid>/wchan for up to 4 of them; absent where the kernel does not say"),
    ("cmdline", "",
     "command line of the group's busiest process, cut to 256 characters; only where the site "
     "allows it ([procs] cmdline), else absent"),
)
