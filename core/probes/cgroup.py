"""What the cgroup v1 and v2 probes share: counting a job's processes across its cgroups,
and the metrics both read from the job's cgroup files, declared here (METRICS: the keys are
jobmon.metrics.declared's) and read by Declared."""
import os

from .files import keyed, read_all, read_once, reader


def cpu_stat(v2_key, v1_key, per=None):
    """modes and read of a figure of cpu.stat's CPU quota keys (per: the divisors of v2's
    and v1's value, None for a count): there only with the cpu controller, none in procfs
    mode."""
    v2_per, v1_per = per or (None, None)
    return {"modes": {"cgroup-v2": ("exact", f"cpu.stat {v2_key}, with the cpu controller"),
                      "cgroup-v1": ("exact", f"cpu.stat {v1_key} of the job's cpu cgroup"),
                      "procfs": (None, "no CPU quota applies without a cgroup")},
            "read": {"cgroup-v2": ("cpu", "cpu.stat", v2_key, v2_per),
                     "cgroup-v1": ("cpu", "cpu.stat", v1_key, v1_per)}}


def total(name, combine="sum"):
    """A counter's end-of-job figure: its last value, the run's total."""
    return {"name": name, "fold": "last", "combine": combine,
            "meaning": "the run's total (per sample, above)"}


def events(name, v2_key, v1_file=None, v1_none=None):
    """A count of memory.events (v2) and, where v1 keeps one, of its v1 file (one number):
    its modes, reads and end-of-job total; none in procfs mode."""
    out = {"name": name, "unit": "count", "range": "count", "kind": "counter",
           "modes": {"cgroup-v2": ("exact", f"memory.events {v2_key}"),
                     "cgroup-v1": ("exact", v1_file) if v1_file else (None, v1_none),
                     "procfs": (None, "no memory limit applies without a cgroup")},
           "read": {"cgroup-v2": ("memory", "memory.events", v2_key, None)},
           "summary": (total(name),)}
    if v1_file:
        out["read"]["cgroup-v1"] = ("memory", v1_file, None, None)
    return out


# the metrics the cgroup probes read as 'key value' lines of the job's cgroup files
METRICS = (
    {"name": "cpu_throttled_seconds", "unit": "s", "range": "cpu", "kind": "counter",
     "meaning": "time the job's cgroup was held back by its CPU quota (`cpu.stat` "
                "throttled_usec, v1 throttled_time); only where the job has a cgroup of the "
                "cpu controller",
     **cpu_stat("throttled_usec", "throttled_time", per=(1e6, 1e9)),
     "summary": (total("cpu_throttled_seconds"),),
     "report": ({"group": "cpu", "field": "cpu_throttled_seconds",
                 "label": "held back by its CPU quota", "unit": "s"},),
     "panel": ({"title": "Held back by its CPU quota", "how": "rate", "alias": "cpus_held",
                "unit": "none", "description": "cpus_held: the time the job's runnable "
                "threads were held back by its CPU quota per second, summed over the CPUs "
                "they were held on (cpu.stat throttled_usec, v1 throttled_time)."},)},
    # the CPU quota's enforcement periods (cpu.max, cpu.cfs_period_us: 100 ms by default)
    {"name": "cpu_quota_periods", "unit": "count", "range": "count", "kind": "counter",
     "meaning": "CPU quota periods in which the job's cgroup ran (`cpu.stat` nr_periods): "
                "only where the job has a cgroup of the cpu controller with a CPU quota",
     **cpu_stat("nr_periods", "nr_periods"),
     "summary": (total("cpu_quota_periods"),)},
    {"name": "cpu_throttled_periods", "unit": "count", "range": "count", "kind": "counter",
     "meaning": "of those periods, the ones in which the job used up its quota and was "
                "held back until the next (`cpu.stat` nr_throttled)",
     **cpu_stat("nr_throttled", "nr_throttled"),
     "summary": (total("cpu_throttled_periods"),
                 {"name": "cpu_throttled_percent", "fold": "percent", "combine": "max",
                  "of": ("cpu_throttled_periods", "cpu_quota_periods"), "unit": "%",
                  "range": "percent",
                  "meaning": "cpu_throttled_periods / cpu_quota_periods x 100: share of the "
                             "quota periods it ran in that it spent held back by its CPU "
                             "quota (a multi-node run: its worst node's)"}),
     "report": ({"group": "cpu", "field": "cpu_throttled_percent",
                 "label": "held back by its CPU quota, share of its quota periods",
                 "unit": "%"},),
     "panel": ({"title": "Held back by its CPU quota", "how": "rate", "alias": "periods_held",
                "unit": "none", "description": "periods_held: quota periods a second that "
                "ended with the job held back (10 at the default 100 ms period: every "
                "one)."},),
     "advice": ({"rule": "cpu_throttled", "field": "cpu_throttled_percent",
                 "setting": "cpu_throttled_percent", "default": 25.0,
                 "text": "held back by its CPU quota in {value:.0f} % of its quota periods: "
                         "its threads want more CPU than its quota gives: ask for more cores, "
                         "or run fewer threads",
                 "doc": "The job used up its CPU quota in at least [report] "
                        "cpu_throttled_percent (25) of the periods it ran in."},)},
    # what the job's memory limit did to it
    dict(events("mem_limit_hits", "max", v1_file="memory.failcnt"),
         meaning="times the job's memory reached its limit, so the kernel had to reclaim "
                 "from it (`memory.events` max on v2, `memory.failcnt` on v1)",
         report=({"group": "memory", "field": "mem_limit_hits",
                  "label": "memory limit reached (times)", "unit": "count"},)),
    dict(events("mem_high_hits", "high", v1_none="v1 has no memory.high"),
         meaning="times it went over its `memory.high` and was throttled (cgroup v2)"),
    dict(events("oom_events", "oom", v1_none="v1 counts the kills only (oom_kills)"),
         meaning="times the job's cgroup ran out of memory at its limit (`memory.events` "
                 "oom, v2)"),
)


class Declared:
    """Reads the METRICS declared for `mode` (cgroup-v2, cgroup-v1) from the job's cgroup:
    `dirs` maps a controller to its directory (v2: every controller to the one). A file
    that is not there, or a key it lacks, gives no figure."""

    def __init__(self, mode, dirs):
        self.files = []        # (Reader, {key: (field, divisor)}); key None: the whole file
        wanted = {}
        for m in METRICS:
            if mode in m.get("read", ()):
                controller, name, key, per = m["read"][mode]
                if dirs.get(controller):
                    path = os.path.join(dirs[controller], name)
                    wanted.setdefault(path, {})[key and key.encode()] = (m["name"], per)
        for path, keys in wanted.items():
            r = reader(path)
            if r:
                self.files.append((r, keys))

    def read(self):
        out = {}
        for r, keys in self.files:
            data = r.read()
            values = {None: int(data)} if None in keys else keyed(data, keys)
            for k, v in values.items():
                field, per = keys[k]
                out[field] = v if per is None else v / per
        return out

    def close(self):
        for r, _keys in self.files:
            r.close()


def cgroup_limits(base, memory_file, quota_file, period_file=None):
    """base limits() plus the cgroup's memory limit and CPU quota, where set (v2: memory.max
    and cpu.max "QUOTA PERIOD"; v1: memory.limit_in_bytes, cpu.cfs_quota_us/_period_us)."""
    from ..summary.efficiency import cgroup_cpu_quota, cgroup_memory_limit
    out = dict(base)
    try:
        mem = cgroup_memory_limit(read_once(memory_file).decode())
        if mem is not None:
            out["memory_bytes"] = mem
    except (OSError, ValueError):
        pass
    try:
        if period_file:
            quota = cgroup_cpu_quota(read_once(quota_file), read_once(period_file))
        else:
            quota = cgroup_cpu_quota(*(read_once(quota_file).split() + [b"0"])[:2])
        if quota is not None:
            out["cores"] = min(quota, out.get("cores", quota))
    except (OSError, ValueError):
        pass
    return out


class SteadyCpu:
    """The kernel's exact CPU total, split into user and system by coarser counters: the
    split drifts from read to read, so neither part is let go back (the total stays)."""

    def __init__(self):
        self.user = self.system = 0.0

    def __call__(self, out):
        total = out["cpu_user_seconds"] + out["cpu_system_seconds"]
        user = max(min(out["cpu_user_seconds"], total - self.system), self.user)
        self.user, self.system = user, max(total - user, self.system)
        out["cpu_user_seconds"], out["cpu_system_seconds"] = self.user, self.system
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
                procs += read_all(os.path.join(d, self.procs_file)).count(b"\n")
                if self.tasks is None:
                    threads += read_all(os.path.join(d, self.threads_file)).count(b"\n")
            except OSError:
                pass
        if self.tasks is not None:
            threads = int(self.tasks.read())
            if threads > procs:   # pids.current counts zombies too, cgroup.procs does not
                try:
                    threads = read_all(os.path.join(self.d, self.threads_file)).count(b"\n")
                except OSError:
                    pass
        return procs, threads

    def tids(self):
        """Thread ids of the job's tasks (for their run-queue wait)."""
        out = []
        for d in self._dirs():
            try:
                out += map(int, read_all(os.path.join(d, self.threads_file)).split())
            except OSError:
                pass
        return out

    def pids(self):
        out = []
        for d in self._dirs():
            try:
                out += [int(p) for p in read_all(os.path.join(d, self.procs_file)).split()]
            except OSError:
                pass
        return out

    def close(self):
        if self.tasks is not None:
            self.tasks.close()
