"""cgroup v1 probe: cpuacct, memory, pids and blkio controllers of the job's cgroups, and
why it waited: v1 has no pressure (PSI) files, so its threads' run-queue wait, unless
jobmon made the job a v2 cgroup beside them (a hybrid host: probes/pressure.py); the
memory controller's limit hits (failcnt) and OOM kills (memory.oom_control, in every
cgroup below a scheduler's job cgroup); CPU quota throttling where the job has a cgroup
of the cpu controller."""
import os

from .interface import Probe
from .cgroup import Counter, Declared, SteadyCpu, cgroup_limits
from .files import keyed, read_once, reader
from .pressure import PSI, RUN_QUEUE, Pressure, RunQueue

_MEM_KEYS = {b"total_rss", b"total_shmem", b"total_cache", b"total_swap",
             b"total_pgmajfault"}


def parse_memory_stat(data):
    s = keyed(data, _MEM_KEYS)
    out = {}
    if b"total_rss" in s:
        shmem = s.get(b"total_shmem", 0)
        # v1 "rss" is anonymous memory without tmpfs; "cache" includes tmpfs
        out["mem_resident_bytes"] = s[b"total_rss"] + shmem
        out["mem_cache_bytes"] = max(s.get(b"total_cache", 0) - shmem, 0)
    if b"total_swap" in s:
        out["mem_swap_bytes"] = s[b"total_swap"]
    if b"total_pgmajfault" in s:
        out["mem_major_faults"] = s[b"total_pgmajfault"]
    return out


def parse_blkio(data):
    """blkio.throttle.io_service_bytes(_recursive): sum Read/Write over devices."""
    rd = wr = 0
    for line in data.split(b"\n"):
        f = line.split()
        if len(f) == 3:
            if f[1] == b"Read":
                rd += int(f[2])
            elif f[1] == b"Write":
                wr += int(f[2])
    return {"read_bytes": rd, "write_bytes": wr}


def split_cpu(total_ns, user_ns, sys_ns):
    """cpuacct.usage is the exact total; usage_user/usage_sys only give the split."""
    both = user_ns + sys_ns
    user = total_ns * user_ns / both if both else 0
    return {"cpu_user_seconds": user / 1e9, "cpu_system_seconds": (total_ns - user) / 1e9}


class CgroupV1Probe(Probe):
    method = "cgroup-v1"

    def __init__(self, cgroups):
        self.cg = cgroups
        d = cgroups.dirs
        acct, mem = d["cpuacct"], d["memory"]
        self.usage = reader(os.path.join(acct, "cpuacct.usage"))
        self.usage_user = reader(os.path.join(acct, "cpuacct.usage_user"))
        self.usage_sys = reader(os.path.join(acct, "cpuacct.usage_sys"))
        if self.usage is None:
            raise OSError(f"no cpuacct.usage in {acct}")
        self.mem_stat = reader(os.path.join(mem, "memory.stat"))
        self.mem_peak = reader(os.path.join(mem, "memory.max_usage_in_bytes"))
        blk = d.get("blkio")
        self.blkio = blk and (reader(os.path.join(blk, "blkio.throttle.io_service_bytes_recursive"))
                              or reader(os.path.join(blk, "blkio.throttle.io_service_bytes")))
        # blk-throttle only counts with a rule set: trust it where jobmon set the rules
        if self.blkio and not cgroups.created:
            self.blkio = None
        pids = d.get("pids")
        self.pids_peak = pids and reader(os.path.join(pids, "pids.peak"))
        self.counter = Counter(d.get("pids") or acct, "cgroup.procs", "tasks",
                               nested=not cgroups.created)
        self.steady = SteadyCpu()
        self.oom_control = reader(os.path.join(mem, "memory.oom_control"))
        self.declared = Declared(self.method, d)
        self.pressure = Pressure.open(getattr(cgroups, "pressure_dir", None))
        self.runqueue = None if self.pressure else RunQueue()
        self.pressure_source = PSI if self.pressure else RUN_QUEUE

    def read(self, final=False):
        out = self.steady(split_cpu(int(self.usage.read()),
                                    int(self.usage_user.read()) if self.usage_user else 0,
                                    int(self.usage_sys.read()) if self.usage_sys else 0))
        if self.mem_stat:
            out.update(parse_memory_stat(self.mem_stat.read()))
        if self.mem_peak:
            out["mem_peak_bytes"] = int(self.mem_peak.read())
        if self.blkio:
            out.update(parse_blkio(self.blkio.read()))
        if self.oom_control:
            kills = self._oom_kills()
            if kills is not None:
                out["oom_kills"] = kills
        out.update(self.declared.read())
        if self.pressure:
            out.update(self.pressure.read())
        else:
            out["cpu_wait_seconds"] = self.runqueue.read(self.counter.tids())
        out["procs"], out["threads"] = self.counter.count()
        return out

    def _oom_kills(self):
        """OOM kills in the job's memory cgroups (Linux 4.13 and later). v1 counts a kill in
        the victim's own cgroup only, not in those above it: below a scheduler's job cgroup
        (steps, tasks) every one is added up."""
        if self.cg.created:
            data = [self.oom_control.read()]
        else:
            from ..cgroups import walk
            data = []
            for d in walk(self.cg.dirs["memory"]):
                try:
                    data.append(read_once(os.path.join(d, "memory.oom_control")))
                except OSError:
                    pass
        kills = [keyed(x, {b"oom_kill"}).get(b"oom_kill") for x in data]
        return None if None in kills else sum(kills)

    def tasks_peak(self):
        """Kernel high-water mark of the job's tasks (threads), where the pids controller has one."""
        return int(self.pids_peak.read()) if self.pids_peak else None

    def limits(self):
        d = self.cg.dirs
        cpu = d.get("cpu") or d.get("cpuacct")   # mounted as "cpu,cpuacct" almost everywhere
        return cgroup_limits(super().limits(), os.path.join(d["memory"], "memory.limit_in_bytes"),
                             os.path.join(cpu, "cpu.cfs_quota_us"),
                             os.path.join(cpu, "cpu.cfs_period_us"))

    def pids(self):
        return self.counter.pids()

    def alive(self):
        return self.counter.count()[0] > 0

    def close(self):
        self.counter.close()
        self.declared.close()
        for r in (self.usage, self.usage_user, self.usage_sys, self.mem_stat, self.mem_peak,
                  self.blkio, self.pids_peak, self.oom_control,
                  self.pressure, self.runqueue):
            if r:
                r.close()
