"""cgroup v2 probe: cpu.stat, memory.stat, memory.peak, io.stat, pids of the job's cgroup,
and why it waited: its pressure (PSI) and memory events.

cpu.stat and cgroup.procs exist in every v2 cgroup; memory, io and pids files only where
those controllers are enabled, so each is optional. The pressure files exist wherever the
kernel keeps PSI; where it does not, the run-queue wait of the job's threads stands in
for CPU (probes/pressure.py).
"""
import os

from .interface import Probe
from .cgroup import Counter, Declared, SteadyCpu, cgroup_limits
from .files import keyed, reader
from .pressure import PSI, RUN_QUEUE, Pressure, RunQueue

_CPU_KEYS = {b"usage_usec", b"user_usec", b"system_usec"}
_MEM_KEYS = {b"anon", b"file", b"shmem", b"pgmajfault"}
# memory.events key -> sample field (its other counts are declared: probes/cgroup.py)
_EVENTS = {b"oom_kill": "oom_kills"}


def parse_cpu_stat(data):
    s = keyed(data, _CPU_KEYS)
    total, user, system = s.get(b"usage_usec", 0), s.get(b"user_usec", 0), s.get(b"system_usec", 0)
    # usage_usec is the exact total; user/system give the split (as for v1)
    u = total * user / (user + system) if user + system else 0
    return {"cpu_user_seconds": u / 1e6, "cpu_system_seconds": (total - u) / 1e6}


def parse_memory_stat(data):
    s = keyed(data, _MEM_KEYS)
    if b"anon" not in s:
        return {}
    shmem = s.get(b"shmem", 0)
    # v2 "file" includes tmpfs/shm ("shmem"), which is not reclaimable cache
    out = {"mem_resident_bytes": s[b"anon"] + shmem,
           "mem_cache_bytes": max(s.get(b"file", 0) - shmem, 0)}
    if b"pgmajfault" in s:
        out["mem_major_faults"] = s[b"pgmajfault"]
    return out


def parse_memory_events(data):
    """memory.events -> {oom_kills}."""
    s = keyed(data, set(_EVENTS))
    return {_EVENTS[k]: v for k, v in s.items()}


def parse_io_stat(data):
    rd = wr = 0
    for line in data.split(b"\n"):
        for kv in line.split()[1:]:
            k, _, v = kv.partition(b"=")
            if k == b"rbytes":
                rd += int(v)
            elif k == b"wbytes":
                wr += int(v)
    return {"read_bytes": rd, "write_bytes": wr}


class CgroupV2Probe(Probe):
    method = "cgroup-v2"

    def __init__(self, cgroups):
        self.cg = cgroups
        d = self.dir = cgroups.dirs["v2"]
        self.cpu = reader(os.path.join(d, "cpu.stat"))
        if self.cpu is None:
            raise OSError(f"no cpu.stat in {d}")
        self.mem_stat = reader(os.path.join(d, "memory.stat"))
        self.mem_peak = reader(os.path.join(d, "memory.peak"))
        self.swap = reader(os.path.join(d, "memory.swap.current"))
        self.io = reader(os.path.join(d, "io.stat"))
        self.pids_peak = reader(os.path.join(d, "pids.peak"))
        self.events = reader(os.path.join(d, "cgroup.events"))
        self.mem_events = reader(os.path.join(d, "memory.events"))
        self.counter = Counter(d, "cgroup.procs", "cgroup.threads", nested=not cgroups.created)
        self.declared = Declared(self.method, {"cpu": d, "memory": d})
        self.steady = SteadyCpu()
        self.pressure = Pressure.open(d)
        self.runqueue = None if self.pressure else RunQueue()
        self.pressure_source = PSI if self.pressure else RUN_QUEUE

    def read(self, final=False):
        out = self.steady(parse_cpu_stat(self.cpu.read()))
        out.update(self.declared.read())
        if self.mem_stat:
            out.update(parse_memory_stat(self.mem_stat.read()))
        if self.mem_peak:
            out["mem_peak_bytes"] = int(self.mem_peak.read())
        if self.swap:
            out["mem_swap_bytes"] = int(self.swap.read())
        if self.io:
            out.update(parse_io_stat(self.io.read()))
        if self.mem_events:
            out.update(parse_memory_events(self.mem_events.read()))
        if self.pressure:
            out.update(self.pressure.read())
        else:
            out["cpu_wait_seconds"] = self.runqueue.read(self.counter.tids())
        out["procs"], out["threads"] = self.counter.count()
        return out

    def tasks_peak(self):
        return int(self.pids_peak.read()) if self.pids_peak else None

    def limits(self):
        return cgroup_limits(super().limits(), os.path.join(self.dir, "memory.max"),
                             os.path.join(self.dir, "cpu.max"))

    def pids(self):
        return self.counter.pids()

    def alive(self):
        if self.events:  # "populated" counts the whole subtree, in one read
            return b"populated 1" in self.events.read()
        return self.counter.count()[0] > 0

    def close(self):
        self.counter.close()
        self.declared.close()
        for r in (self.cpu, self.mem_stat, self.mem_peak, self.swap, self.io, self.pids_peak,
                  self.events, self.mem_events, self.pressure, self.runqueue):
            if r:
                r.close()
