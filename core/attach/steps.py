"""Per-step figures of an attached job: the sub-cgroups a scheduler makes for the job's
steps (named by the plugin's step_name: a batch script's, each launch's ...), read beside the job's own cgroup.

Each step's CPU and memory peak are read at every sample and whenever one of the job's
processes exits, and kept once its directory is gone. A step counts as complete when a
read found it with no process left (its final figures); otherwise its figures are from
the last read before it was removed. The job's own cgroup holds them all summed (and
what ran in none of them). Standard library only.
"""
import os
import time

from ..probes.cgroup_v1 import split_cpu
from ..probes.cgroup_v2 import parse_cpu_stat
from ..probes.files import read_all, read_once


def _int(path):
    try:
        return int(read_once(path))
    except (OSError, ValueError):
        return None


def _procs(d):
    """Pids of the processes in d and below (steps nest task cgroups)."""
    pids = []
    for top, _dirs, _files in os.walk(d):
        try:
            pids += [int(p) for p in read_all(os.path.join(top, "cgroup.procs")).split()]
        except OSError:
            pass
    return pids


def process_start(pid, boot_time=None, tick=os.sysconf("SC_CLK_TCK")):
    """When a process started, seconds since the epoch (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        if boot_time is None:
            boot_time = _boot_time()
    except OSError:
        return None
    return boot_time + int(data[data.rindex(b")") + 2:].split()[19]) / tick


def _boot_time():
    """The epoch time of boot, to the microsecond (/proc/stat's btime is whole seconds):
    process start times count clock ticks from it."""
    return time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)


def started(pids, default):
    """The earliest start of these processes (default when none can be read)."""
    return min([s for s in (process_start(p) for p in pids) if s is not None] + [default])


def read_step_v1(cpuacct, memory):
    """{cpu_user_seconds, cpu_system_seconds, mem_peak_bytes, procs} of a v1 step, or None
    once it is gone."""
    total = _int(os.path.join(cpuacct, "cpuacct.usage"))
    if total is None:
        return None
    out = split_cpu(total, _int(os.path.join(cpuacct, "cpuacct.usage_user")) or 0,
                    _int(os.path.join(cpuacct, "cpuacct.usage_sys")) or 0)
    if memory:
        peak = _int(os.path.join(memory, "memory.max_usage_in_bytes"))
        if peak is not None:
            out["mem_peak_bytes"] = peak
    out["procs"] = _procs(cpuacct)
    return out


def read_step_v2(d):
    try:
        out = parse_cpu_stat(read_once(os.path.join(d, "cpu.stat")))
    except OSError:
        return None
    peak = _int(os.path.join(d, "memory.peak"))
    if peak is not None:
        out["mem_peak_bytes"] = peak
    out["procs"] = _procs(d)
    return out


class Steps:
    def __init__(self, cg, step_name, own=None, ends=None):
        """own: probe.OwnLeaves, the scheduler's processes below the steps; ends:
        ends.EndKills, told each step's processes at each read."""
        self.cg, self.step_name, self.own, self.ends = cg, step_name, own, ends
        self.base = cg.dirs.get("v2") or cg.dirs["cpuacct"]
        self.seen = {}     # step -> its record
        self.names = set()  # the job directory's sub-cgroups at the last look

    def appeared(self):
        """True when a step directory is there that was not at the last read."""
        known = self.names
        self.names = set(self._children())
        return bool(self.names - known)

    def _children(self):
        try:
            with os.scandir(self.base) as it:
                return [e.name for e in it if e.is_dir(follow_symlinks=False)]
        except OSError:
            return []

    def _own_pids(self, before=()):
        """The scheduler's own processes in their leaves now, and those of `before`: a
        step's daemon moves into its leaf when the step starts and out of the step
        (to the cgroup root) once its tasks have ended, so a listing of the step between
        two looks at the leaf may hold it where neither look alone does."""
        if self.own is None or self.cg.version != 2:
            return set()
        return set(before) | self.own.pids()

    def _read(self, name):
        if self.cg.version == 2:
            d = os.path.join(self.base, name)
            before = self._own_pids()
            out = read_step_v2(d)
            if out and self.own is not None:    # the step's daemon is not the step
                user, system = self.own.cpu(below=d)
                out["cpu_user_seconds"] = max(out["cpu_user_seconds"] - user, 0.0)
                out["cpu_system_seconds"] = max(out["cpu_system_seconds"] - system, 0.0)
                mine = self._own_pids(before)
                out["procs"] = [p for p in out["procs"] if p not in mine]
            return out
        mem = self.cg.dirs.get("memory")
        return read_step_v1(os.path.join(self.base, name),
                            mem and os.path.join(mem, name))

    def look_procs(self):
        """Only each step's processes, for `ends`: the quickest look there is."""
        for name in self._children():
            step = self.step_name(name)
            if step is not None:
                before = self._own_pids()
                pids = _procs(os.path.join(self.base, name))
                mine = self._own_pids(before)
                self.ends.look(step, [p for p in pids if p not in mine])

    def update(self, final=False):
        """One read of every step there is. final: the job is over; steps still there
        end now."""
        now = time.time()
        present = set()
        for name in self._children():
            step = self.step_name(name)
            if step is None:
                continue
            values = self._read(name)
            if values is None:
                continue
            present.add(step)
            pids = values.pop("procs")
            procs = len(pids)
            if self.ends is not None:
                self.ends.look(step, pids)
            if step not in self.seen:   # seen late: it began with its first process
                self.seen[step] = {"step": step, "start_time": started(pids, now),
                                   "end_time": None, "complete": False, "procs_max": 0}
            rec = self.seen[step]
            rec["procs_max"] = max(rec["procs_max"], procs)
            for k, v in values.items():   # counters and peaks never go back
                rec[k] = max(v, rec.get(k, v))
            rec["last_read"] = now
            if procs == 0 and rec["procs_max"] > 0:
                rec["complete"] = True
                rec["end_time"] = rec["end_time"] or now
            elif procs:
                rec["complete"], rec["end_time"] = False, None
        for step, rec in self.seen.items():
            if (step not in present or final) and rec["end_time"] is None:
                rec["end_time"] = rec["last_read"] if step not in present else now

    def complete(self):
        """True when every step had a read with no process left: their figures are final."""
        return bool(self.seen) and all(r["complete"] for r in self.seen.values())

    def reconcile(self, job_values):
        """The job's totals from its steps where those are larger: a step's last read
        can come after the job's (its processes exit first), and the job's cgroup holds
        nothing but its steps. job_values is updated in place."""
        if not job_values or not self.seen:
            return
        recs = self.seen.values()
        user = sum(r.get("cpu_user_seconds", 0) for r in recs)
        system = sum(r.get("cpu_system_seconds", 0) for r in recs)
        if "cpu_user_seconds" in job_values:
            extra = user + system - job_values["cpu_user_seconds"] - job_values["cpu_system_seconds"]
            if extra > 0:     # added in the steps' split: no part goes back
                job_values["cpu_user_seconds"] += extra * user / (user + system)
                job_values["cpu_system_seconds"] += extra * system / (user + system)
        peak = max((r.get("mem_peak_bytes", 0) for r in recs), default=0)
        if peak > job_values.get("mem_peak_bytes", 0):
            job_values["mem_peak_bytes"] = peak

    def records(self, job):
        """Per-step summaries, in the order the steps appeared."""
        out = []
        for rec in self.seen.values():
            r = {k: v for k, v in rec.items() if k != "last_read"}
            r["job"] = f"{job['job']}.{rec['step']}"
            if self.ends is not None:
                r["leftover_procs"], r["procs_killed_at_end"] = self.ends.counts(rec["step"])
            r["wall_seconds"] = round((rec["end_time"] or rec["last_read"]) - rec["start_time"], 3)
            r["start_time"] = round(rec["start_time"], 3)
            r["end_time"] = round(rec["end_time"], 3) if rec["end_time"] else None
            for k in ("cpu_user_seconds", "cpu_system_seconds"):
                if k in r:
                    r[k] = round(r[k], 6)
            out.append(r)
        return out
