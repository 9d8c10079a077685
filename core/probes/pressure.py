"""Why a job waited: the kernel's pressure stall information (PSI) of the job's own cgroup,
and where there is none, the run-queue wait of its threads.

PSI (cgroup v2 `cpu.pressure`, `memory.pressure`, `io.pressure`) counts, in µs of wall
time, how long at least one of the cgroup's tasks was stalled ("some") and how long all of
its non-idle tasks were at once ("full"): exact, cumulative, three preads per sample. It
exists for every cgroup of the v2 hierarchy, controllers or not, so on a hybrid host the
controller-less v2 cgroup jobmon makes beside a job's v1 ones has it too. Where there is
none (a scheduler's cgroup v1, procfs mode, a kernel booted without PSI: RHEL 8 needs
`psi=1`), the closest exact figure for CPU is the run-queue wait the scheduler keeps for
every thread (`/proc/<tid>/schedstat`, second field, ns): summed over the job's threads,
each exited thread's last read kept. Standard library only.
"""
import os
import resource

from .files import ZOMBIE, reader

PSI_FILES = (("cpu", "cpu.pressure"), ("mem", "memory.pressure"), ("io", "io.pressure"))
PSI = "psi"                # pressure_source: the job's cgroup's PSI
RUN_QUEUE = "run-queue"    # pressure_source: its threads' run-queue wait (no PSI for it)


def parse_pressure(data):
    """A PSI file -> (some µs, full µs or None): each line's `total=`."""
    some = full = None
    for line in data.split(b"\n"):
        kind, _, rest = line.partition(b" ")
        i = rest.find(b"total=")
        if i < 0:
            continue
        if kind == b"some":
            some = int(rest[i + 6:])
        elif kind == b"full":
            full = int(rest[i + 6:])
    return some, full


def psi_state(proc="/proc"):
    """"on" when the kernel keeps PSI, else "off": a kernel built without it, or booted
    with it off (CONFIG_PSI_DEFAULT_DISABLED, RHEL 8: boot with psi=1), has no readable
    /proc/pressure."""
    try:
        with open(os.path.join(proc, "pressure", "cpu"), "rb") as f:
            return "on" if parse_pressure(f.read())[0] is not None else "off"
    except OSError:
        return "off"


class Pressure:
    """The PSI files of one cgroup directory, kept open; None from open() where the kernel
    offers none there (no v2 cgroup, PSI off)."""

    def __init__(self, readers):
        self.readers = readers

    @classmethod
    def open(cls, d):
        if not d:
            return None
        readers = [(name, reader(os.path.join(d, f))) for name, f in PSI_FILES]
        if any(r is None for _n, r in readers):
            for _n, r in readers:
                if r is not None:
                    r.close()
            return None
        try:   # a v2 cgroup whose pressure was turned off (cgroup.pressure 0) refuses reads
            readers[0][1].read()
        except OSError:
            cls(readers).close()
            return None
        return cls(readers)

    def read(self):
        out = {}
        for name, r in self.readers:
            some, full = parse_pressure(r.read())
            if some is not None:
                out[f"{name}_pressure_seconds"] = some / 1e6
            if full is not None and name != "cpu":
                out[f"{name}_pressure_full_seconds"] = full / 1e6
        return out

    def close(self):
        for _n, r in self.readers:
            r.close()


def run_delay(data):
    """/proc/<tid>/schedstat -> ns the thread spent runnable, waiting for a CPU."""
    return int(data.split(None, 2)[1])


class RunQueue:
    """Run-queue wait summed over a job's threads. A thread's schedstat stays open while it
    lives (one pread a sample; up to `max_open` files, a quarter of the descriptor limit at
    most, the rest opened each time); a thread that is gone leaves its last value. So the
    figure is exact for the job's living threads and a lower bound by what exited threads
    waited after their last read."""

    def __init__(self, proc=b"/proc", max_open=1024):
        self.proc = os.fsencode(proc)
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft != resource.RLIM_INFINITY:   # (the job's threads must leave jobmon files)
            max_open = min(max_open, max(soft // 4 - 64, 0))
        self.max_open = max_open
        self.threads = {}     # tid -> [fd or -1, last wait ns]
        self.gone = 0         # ns waited by threads no longer there
        self.nopen = 0

    def read(self, tids):
        """Seconds waited so far by the threads in `tids` and by those gone before."""
        known, live, pread = self.threads, 0, os.pread
        tids = set(tids)
        for tid in [t for t in known if t not in tids]:
            self._drop(tid)
        for tid in tids:
            t = known.get(tid)
            try:
                if t is None:
                    t = known[tid] = [self._open(tid), 0]
                data = pread(t[0], 64, 0) if t[0] >= 0 else self._read(tid)
                t[1] = max(run_delay(data), t[1])
            except (OSError, ValueError, IndexError):
                if t is not None:
                    self._drop(tid)
                continue
            live += t[1]
        return (self.gone + live) / 1e9

    def _path(self, tid):
        return b"%s/%d/schedstat" % (self.proc, tid)

    def _open(self, tid):
        if self.nopen >= self.max_open:
            return -1
        fd = os.open(self._path(tid), os.O_RDONLY | os.O_CLOEXEC)
        self.nopen += 1
        return fd

    def _read(self, tid):
        with open(self._path(tid), "rb", buffering=0) as f:
            return f.read(64)

    def _drop(self, tid):
        fd, ns = self.threads.pop(tid)
        self.gone += ns
        if fd >= 0:
            os.close(fd)
            self.nopen -= 1

    def close(self):
        for t in self.threads.values():
            if t[0] >= 0:
                os.close(t[0])
                t[0] = -1
        self.nopen = 0


def thread_ids(proc, pid):
    """The thread ids of a process (its task directory)."""
    return [int(t) for t in os.listdir(b"%s/%d/task" % (os.fsencode(proc), pid))]


class TreeWaits:
    """The same for the processes of a procfs walk, kept as the walk re-reads them, so a
    sample costs what changed: a one-thread process's wait from the schedstat the walk reads
    anyway (it changes only when the process ran or waited); the threads of a process that
    has had more than one, each read every sample (a RunQueue). A process or thread that
    is gone keeps its last value."""

    def __init__(self, proc=b"/proc"):
        self.proc = os.fsencode(proc)
        self.threads = RunQueue(proc)
        self.multi = set()      # pids that have had more than one thread
        self.single = {}        # pid -> last wait ns of a one-thread process
        self.total = 0          # ns: over `single`, and the one-thread processes gone

    def saw(self, p):
        """p (the walk's Proc) was just read: its schedstat (p.sched) and threads."""
        if p.threads > 1 and p.pid not in self.multi:   # its RunQueue counts it from now
            self.multi.add(p.pid)
            self.total -= self.single.pop(p.pid, 0)
        if p.pid in self.multi or not p.sched:
            return
        ns, old = run_delay(p.sched), self.single.get(p.pid, 0)
        if ns > old:
            self.total += ns - old
            self.single[p.pid] = ns

    def left(self, pid):
        self.single.pop(pid, None)
        self.multi.discard(pid)

    def seconds(self, procs):
        """Seconds waited so far by the threads of the walk's processes ({pid: Proc})."""
        tids = []
        for pid in self.multi:
            p = procs.get(pid)
            if p is not None and p.state not in ZOMBIE:
                try:
                    tids += thread_ids(self.proc, pid)
                except OSError:
                    pass
        return self.total / 1e9 + self.threads.read(tids)

    def close(self):
        self.threads.close()


# the stall figures this module reads, declared (jobmon.metrics.declared)
METRICS = (
    {"name": "cpu_pressure_seconds", "unit": "s", "range": "wall", "kind": "counter",
     "method": "exact",
     "meaning": "wall time during which at least one runnable thread of the job waited for a CPU: "
                "the kernel's pressure stall information (PSI, `cpu.pressure` some) of the job's "
                "cgroup; where it has none, cpu_wait_seconds instead (pressure_source says "
                "which)",
     "panel": ({"title": "Stalled on CPU, memory, I/O (PSI)", "how": "rate", "alias": "cpu",
                "unit": "percent", "scale": 100,
                "description": "Share of each interval during which a thread of the job waited "
                "for a CPU, stalled on memory (reclaim, refaults) or waited for storage: the "
                "kernel's pressure stall information of the job's cgroup (cgroup v2, or the v2 "
                "cgroup jobmon makes on a hybrid host). Empty where the job has none: see the "
                "run-queue wait beside it."},)},
    {"name": "cpu_wait_seconds", "unit": "s", "range": "task_seconds", "kind": "counter",
     "method": "estimated",
     "meaning": "time the job's threads were runnable but waiting for a CPU, summed over its "
                "threads (run-queue wait, `/proc/<tid>/schedstat`): taken where the job's cgroup "
                "has no PSI (cgroup v1, procfs mode, PSI off); a thread that exited counts up to "
                "the last sample before, so a lower bound (in procfs mode a process's wait is "
                "read at a sample only if it ran since the one before, so a wait that has not "
                "ended by then shows later; a process found having run under 2 ms is read once it "
                "runs again, from its birth, and does not count if it exits before the next "
                "sample)",
     "panel": ({"title": "Waiting for a CPU (run queue)", "how": "rate",
                "alias": "threads_waiting", "unit": "none", "decimals": 2,
                "description": "Where the job's cgroup has no PSI (cgroup v1, procfs mode, PSI "
                "off): how many of its threads waited for a CPU on average (run-queue wait "
                "from schedstat, per second). A busy node, not a job that needs fewer "
                "cores."},)},
    {"name": "mem_pressure_seconds", "unit": "s", "range": "wall", "kind": "counter",
     "method": "exact",
     "meaning": "wall time during which at least one of the job's threads stalled on memory: "
                "reclaim, swap-in, refaulting pages it had to give up (PSI `memory.pressure` "
                "some; cgroup v2, or the v2 cgroup jobmon makes beside v1 ones on a hybrid host)",
     "panel": ({"title": "Stalled on CPU, memory, I/O (PSI)", "how": "rate", "alias": "memory",
                "unit": "percent", "scale": 100},)},
    {"name": "mem_pressure_full_seconds", "unit": "s", "range": "wall", "kind": "counter",
     "method": "exact",
     "meaning": "wall time during which all of the job's non-idle threads stalled on memory at "
                "once: it made no progress (PSI `memory.pressure` full)"},
    {"name": "io_pressure_seconds", "unit": "s", "range": "wall", "kind": "counter",
     "method": "exact",
     "meaning": "wall time during which at least one of the job's threads waited for block I/O "
                "(PSI `io.pressure` some)",
     "panel": ({"title": "Stalled on CPU, memory, I/O (PSI)", "how": "rate", "alias": "io",
                "unit": "percent", "scale": 100},)},
    {"name": "io_pressure_full_seconds", "unit": "s", "range": "wall", "kind": "counter",
     "method": "exact",
     "meaning": "wall time during which all of the job's non-idle threads waited for block I/O at "
                "once (PSI `io.pressure` full)"},
)


# and what the end-of-job record says of them: each one's total (jobmon.summary.fold), where
# they came from
FIGURES = (
    *({"name": m["name"], "fold": "last", "combine": "sum",
       "meaning": "the run's total (per sample, above)"} for m in METRICS),
    {"name": "pressure_source", "unit": "text", "range": None, "method": "recorded",
     "meaning": "where the stall figures come from: psi (the kernel's pressure stall information "
                "of the job's own cgroup: CPU, memory and I/O, exact), run-queue (no PSI for this "
                "job -- a scheduler's cgroup v1, procfs mode, or PSI off: CPU from its threads' "
                "run-queue wait, memory from its limit hits and major faults, no I/O stall "
                "figure)"},
    {"name": "psi", "unit": "text", "range": None, "scope": "node", "method": "recorded",
     "meaning": "on: the node's kernel keeps PSI; off: it was built or booted without it (no "
                "/proc/pressure; RHEL 8 needs the boot option psi=1)"},
)
