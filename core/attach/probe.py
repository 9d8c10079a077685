"""The attach mode's probe wrappers: Held (the last good reading once the job's cgroup
is gone), and Excluding with OwnLeaves (the scheduler's own processes inside a job's
cgroup, taken out of the job's figures).

A scheduler may put each step's own daemon in a leaf of the step's cgroup, beside the
step's tasks (on cgroup v2; the plugin names those leaves, own_leaves, and says where its
scheduler does so): the job's cgroup then counts the daemon's CPU and processes with the
job's. The figures jobmon reports are the job's own: the CPU of those leaves is
subtracted (read at every sample, kept once a leaf is gone), their processes are not the
job's (they do not keep it "running"), as the scheduler's own accounting leaves them out. Their memory stays
in mem_peak_bytes: the kernel's high-water mark cannot be split after the fact.
Standard library only.
"""
import os
import time

from ..probes.cgroup_v2 import parse_cpu_stat
from ..probes.files import read_all, read_once


class OwnLeaves:
    """The leaves named `names` one level below each of the job's sub-cgroups (its
    steps): their CPU, kept once gone, and their processes."""

    def __init__(self, cg, names):
        self.base = cg.dirs.get("v2")      # v1 hierarchies hold none of them
        self.names = tuple(names)
        self.cpu_seen = {}                 # leaf -> (user s, system s), largest read

    def leaves(self):
        if not self.base or not self.names:
            return []
        out = []
        try:
            with os.scandir(self.base) as it:
                subs = [e.path for e in it if e.is_dir(follow_symlinks=False)]
        except OSError:
            return []
        for s in subs:
            out += [os.path.join(s, n) for n in self.names if os.path.isdir(os.path.join(s, n))]
        return out

    def cpu(self, below=None):
        """(user, system) seconds of every leaf seen so far, or of those below `below`."""
        for leaf in self.leaves():
            try:
                v = parse_cpu_stat(read_once(os.path.join(leaf, "cpu.stat")))
            except OSError:
                continue
            old = self.cpu_seen.get(leaf, (0.0, 0.0))
            self.cpu_seen[leaf] = (max(v["cpu_user_seconds"], old[0]),
                                   max(v["cpu_system_seconds"], old[1]))
        picked = [c for leaf, c in self.cpu_seen.items()
                  if below is None or leaf.startswith(below.rstrip("/") + "/")]
        return sum(c[0] for c in picked), sum(c[1] for c in picked)

    def pids(self):
        out = set()
        for leaf in self.leaves():
            try:
                out.update(int(p) for p in read_all(os.path.join(leaf, "cgroup.procs")).split())
            except OSError:
                pass
        return out

    def counts(self):
        procs = threads = 0
        for leaf in self.leaves():
            try:
                procs += read_all(os.path.join(leaf, "cgroup.procs")).count(b"\n")
                threads += read_all(os.path.join(leaf, "cgroup.threads")).count(b"\n")
            except OSError:
                pass
        return procs, threads


class Excluding:
    """A cgroup probe whose figures leave out the scheduler's own leaves."""

    def __init__(self, probe, own):
        self.probe, self.own, self.method = probe, own, probe.method

    def read(self, final=False):
        v = self.probe.read(final)
        user, system = self.own.cpu()
        if "cpu_user_seconds" in v:
            v["cpu_user_seconds"] = max(v["cpu_user_seconds"] - user, 0.0)
            v["cpu_system_seconds"] = max(v["cpu_system_seconds"] - system, 0.0)
        if "procs" in v:
            procs, threads = self.own.counts()
            v["procs"] = max(v["procs"] - procs, 0)
            v["threads"] = max(v.get("threads", 0) - threads, 0)
        return v

    def pids(self):
        return self._others(self.probe.pids())

    def sampled_pids(self):
        return self._others(self.probe.sampled_pids())

    def _others(self, pids):
        mine = self.own.pids()
        return [p for p in pids if p not in mine]

    def __getattr__(self, name):
        return getattr(self.probe, name)

    def close(self):
        self.probe.close()


class Held:
    """The probe, holding its last good reading once the cgroup has gone (a removed
    cgroup's files answer ENODEV): the totals are then those of the last read."""

    def __init__(self, probe):
        self.probe, self.method = probe, probe.method
        self.last, self.gone, self.frozen = None, False, False
        self.had_procs = False
        self.last_t = None        # when the last good read was (monotonic)
        self.peak_tasks = None    # the pids controller's peak at the last good look

    def read(self, final=False):
        if not (self.gone or self.frozen):
            try:
                self.last = self.probe.read(final)
                self.last_t = time.monotonic()
                self.had_procs = self.had_procs or bool(self.last.get("procs"))
                return dict(self.last)
            except OSError:
                self.gone = True
        return dict(self.last or {})

    def complete(self):
        """True when the last good read came after the job's last process was gone:
        its counters were final."""
        return self.had_procs and self.last is not None and self.last.get("procs") == 0

    def freeze(self):
        """The final read, now (the job has just ended; its cgroup goes soon): later
        reads give it back."""
        self.read(final=True)
        self.tasks_peak()
        self.frozen = True

    def tasks_peak(self):
        """The pids controller's peak (None without one), kept once the cgroup has gone:
        the session asks for it after the end, when the scheduler may have removed the cgroup."""
        peak = getattr(self.probe, "tasks_peak", None)
        if peak is not None and not (self.gone or self.frozen):
            try:
                self.peak_tasks = peak()
            except OSError:
                self.gone = True
        return self.peak_tasks

    def pids(self):
        return [] if self.gone else self.probe.pids()

    def sampled_pids(self):
        return [] if self.gone else self.probe.sampled_pids()

    def __getattr__(self, name):   # tasks_peak, gpu_summary, ...
        return getattr(self.probe, name)

    def close(self):
        self.probe.close()
