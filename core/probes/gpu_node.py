"""GPU metrics from the node reader (`jobmon node-reader`, jobmon.node), without NVML in
the job: the reader, one per node outside the jobs' cgroups, publishes what NVML says into
a file (probes/gpu_published.py); the job's sampler reads it -- one open, fstat and read
per sample, standard library only -- and keeps what is the job's. docs/gpu.md.
"""
import os
import time

from .gpu_published import (MAX_AGE_PERIODS, PidMatcher, Published, Untrusted, job_devices,
                            usable)


# --- energy: the job's share of each GPU's counter ---

def bracket(readings, t):
    """The readings (time, value) just before and just after t (either may be None)."""
    lo = hi = None
    for r in readings:
        if r[0] <= t and (lo is None or r[0] > lo[0]):
            lo = r
        if r[0] >= t and (hi is None or r[0] < hi[0]):
            hi = r
    return lo, hi


def interpolate(readings, t):
    """A counter's value at t from [(time, value)] readings either side of t, else None."""
    lo, hi = bracket(readings, t)
    if lo is None or hi is None:
        return None
    if hi[0] == lo[0]:
        return lo[1]
    return lo[1] + (hi[1] - lo[1]) * (t - lo[0]) / (hi[0] - lo[0])


def misplaced(readings, t):
    """How far the interpolated counter at t can be from the true one: the counter never
    goes back, so at t it lies between the readings either side; the interpolation can
    be off by the larger of its two distances to them (docs/energy.md, "Its bound")."""
    lo, hi = bracket(readings, t)
    v = interpolate(readings, t)
    if v is None:
        return None
    return max(v - lo[1], hi[1] - v)


class Energy:
    """The reader reads each GPU's energy counter (mJ since the driver loaded) at every
    refresh and publishes that reading and the one before, each with its monotonic time.
    The counter's value at the job's start (and at its end) is interpolated between the
    readings either side of that instant; samples in between give it at the latest
    reading. No reading before the start (the reader was down): no energy for this job."""

    def __init__(self, uuids, t0):
        self.t0 = t0
        self.readings = {u: [] for u in uuids}
        self.base = None
        self.base_error = None   # mJ the baseline may be off by (all GPUs)
        self.lost = None      # why the job gets no energy, once it is known

    def feed(self, gpus):
        """gpus: {uuid: published GPU} of a fresh snapshot."""
        if self.lost:
            return
        for u, rs in self.readings.items():
            g = gpus.get(u) or {}
            for r in (g.get("energy_prev"), g.get("energy")):
                if not r or (rs and r[0] <= rs[-1][0]):
                    continue
                if rs and r[1] < rs[-1][1]:
                    self.lost = "a GPU's energy counter went back (driver reloaded)"
                    return
                if self.base is None and r[0] > self.t0 and not any(x[0] <= self.t0 for x in rs):
                    self.lost = "no energy reading from before the job started"
                    return
                rs.append((r[0], r[1]))
            if self.base is not None:
                del rs[:-3]
        if self.base is None:
            base = {u: interpolate(rs, self.t0) for u, rs in self.readings.items()}
            if None not in base.values():
                self.base = base
                self.base_error = sum(misplaced(rs, self.t0) for rs in self.readings.values())

    def started(self, t0):
        """The job started at t0, before this probe was made: count from there where no
        baseline was taken yet and a reading before t0 is still kept."""
        if self.base is None and not self.lost and t0 < self.t0 and all(
                any(r[0] <= t0 for r in rs) for rs in self.readings.values()):
            self.t0 = t0

    def joules(self, t=None):
        """Energy from the start to t (None: to the latest reading), or None."""
        if self.lost or self.base is None:
            return None
        total = 0.0
        for u, rs in self.readings.items():
            v = rs[-1][1] if t is None else interpolate(rs, t)
            if v is None:
                return None
            total += v - self.base[u]
        return round(total / 1000, 3)

    def error(self, t):
        """J the energy from the start to t may be off by: the baseline's and t's
        interpolation, each at most the counter's rise between the readings around it."""
        if self.lost or self.base is None:
            return None
        ends = [misplaced(rs, t) for rs in self.readings.values()]
        if None in ends:
            return None
        return round((self.base_error + sum(ends)) / 1000, 3)

    def covers(self, t):
        """True once every GPU has a reading at or after t."""
        return all(rs and rs[-1][0] >= t for rs in self.readings.values())


class View:
    """What a job needs of one snapshot, worked out once per snapshot: its devices'
    utilization, the GPU processes on them, and whether one of them is gone."""

    __slots__ = ("util", "procs", "by_pid", "gone", "lists")

    def __init__(self, current, same_ns):
        self.gone = None in current
        utils = [d.get("util") for d in current]
        self.util = None if self.gone or not utils or None in utils \
            else round(sum(utils) / len(utils), 1)
        lists = [d.get("procs") for d in current]
        self.procs = None if self.gone or None in lists else [p for ps in lists for p in ps]
        self.lists = None if self.procs is None else lists   # each device's processes
        self.by_pid = None
        if same_ns and self.procs is not None:    # {pid: its GPU memory, None: unknown}
            self.by_pid = {}
            for p in self.procs:
                have = self.by_pid.get(p["pid"], 0)
                self.by_pid[p["pid"]] = None if have is None or p.get("mem") is None \
                    else have + p["mem"]


class NodeGpuProbe:
    """The main probe's readings plus the GPU fields of jobmon.metrics, from the node
    reader's snapshot. A sample for which no fresh snapshot is there (reader down or
    stale) has no GPU readings: one warning, and the summary counts those samples."""

    energy_method = ("NVML energy counter, interpolated at the job's start and end "
                     "between the node reader's readings")

    def __init__(self, main, published, visible, warn, dev_dir="/dev", clock=time.monotonic):
        self.main = main
        self.method = main.method
        self.published = published
        self.visible = visible
        self.dev_dir = dev_dir
        self.warn = warn
        self.clock = clock
        self.devices = [] if visible == "" else None   # [(gpu, MIG instance or None)]
        self.energy = self.matcher = None
        self.snap = self.view = None
        self.missing = 0
        self.shared = 0        # samples with a process not of the job on its GPUs
        self.why = None
        self.warned = False
        self.t0 = clock()
        self.t_end = None
        self.period = 1.0      # the reader's, from its snapshots
        if self.devices is None:
            self._fresh()      # readings from before the start bracket the energy baseline

    def _fresh(self):
        """The job's View of the reader's snapshot if that is fresh, else None (self.why)."""
        try:
            snap = self.published.read()
            age = self.clock() - snap["mono"]
            self.period = snap["period"]
            if not -1.0 <= age <= MAX_AGE_PERIODS * self.period:
                self.why = f"its last refresh is {age:.1f} s old"
                return None
            if snap is not self.snap:
                self.view, self.snap = self._view(snap), snap
            return self.view
        except (OSError, ValueError, KeyError, IndexError, TypeError, Untrusted) as e:
            self.why = str(e) or type(e).__name__
            return None

    def _view(self, snap):
        if self.devices is None:
            self.devices = job_devices(snap, self.visible, lambda g: usable(g, self.dev_dir))
            self.matcher = PidMatcher(snap["pidns"])
            if self.devices and all(i is None and not g["mig"] for g, i in self.devices):
                self.energy = Energy([g["uuid"] for g, _i in self.devices], self.t0)
        current = []
        for g, inst in self.devices:
            now = snap.find(g["index"], g["uuid"])
            if now is not None and inst is not None:
                now = next((m for m in now.get("instances") or ()
                            if m["uuid"] == inst["uuid"]), None)
            current.append(now)
        if self.energy and None not in current:
            self.energy.feed({d["uuid"]: d for d in current})
        return View(current, self.matcher.same)

    def _warn_once(self, message):
        if not self.warned:
            self.warned = True
            self.warn(message)

    def read(self, final=False):
        values = self.main.read(final)
        if self.devices == []:
            values["gpu_count"] = 0
            return values
        if final:
            self.t_end = self.clock()
        view = self._fresh()
        if self.devices is not None:
            values["gpu_count"] = len(self.devices)
        if view is None or view.gone:
            # reader down or stale; or a GPU of the job gone (off the bus, MIG reconfigured)
            self.missing += 1
            why = self.why if view is None else "a GPU of the job is gone from its snapshot"
            self._warn_once(f"no GPU metrics from the node's GPU reader ({why}); samples go "
                            "without them while it is down or stale")
            return values
        if not self.devices:
            return values
        if view.util is not None:
            values["gpu_util_percent"] = view.util
        # the job's pids, asked for only when some process is on its GPUs
        pids = set(self.main.sampled_pids()) if view.procs else set()
        mem = self._memory(view, pids)
        if mem is not None:
            values["gpu_mem_bytes"] = mem
        in_use = self._in_use(view, pids)
        if in_use is not None:
            values["gpus_in_use"] = in_use
        if self.energy:
            joules = self.energy.joules()      # at the latest reading
            if joules is not None:
                values["gpu_energy_joules"] = joules
            elif self.energy.lost:
                self._warn_once(f"no GPU energy for this job: {self.energy.lost}")
        return values

    def _in_use(self, view, pids):
        """How many of the job's GPUs one of its processes is on (holds a context); None
        where the reader could not tell whose a process is."""
        if view.lists is None:
            return None
        if not view.procs:
            return 0
        n = 0
        for procs in view.lists:
            mine = [p["pid"] in pids if view.by_pid is not None else
                    self.matcher.mine(p, pids) for p in procs]
            if True in mine:
                n += 1
            elif None in mine:
                return None
        return n

    def _memory(self, view, pids):
        """GPU memory of the job's processes on its devices; None if NVML or the reader
        could not tell for one of them (pids: the job's). One that is not the job's makes
        the sample shared."""
        if view.procs is None:
            return None
        if not view.procs:
            return 0
        total = 0
        if view.by_pid is not None:
            if view.by_pid.keys() - pids:
                self.shared += 1
            for pid in view.by_pid.keys() & pids:
                if view.by_pid[pid] is None:
                    return None
                total += view.by_pid[pid]
            return total
        mine = [self.matcher.mine(p, pids) for p in view.procs]
        if False in mine:
            self.shared += 1
        for p, m in zip(view.procs, mine):
            if m is None or (m and p.get("mem") is None):
                return None
            if m:
                total += p["mem"]
        return total

    def gpu_summary(self):
        """Summary fields; the energy to the job's very end, interpolated between the
        readings either side of it: that waits for the reader's next reading (about one
        refresh period), after the last sample, so no sample's time is stretched."""
        out = {"gpu_samples_missing": self.missing, "gpu_shared_samples": self.shared}
        e = self.energy
        if e is None or e.base is None or e.lost or self.t_end is None:
            return out
        deadline = self.t_end + 1.5 * self.period + 0.2
        while not e.covers(self.t_end) and self.clock() < deadline:
            time.sleep(min(0.05, self.period / 4))
            if self._fresh() is None:
                break
        joules = e.joules(self.t_end)
        if joules is None:
            self._warn_once("no GPU energy reading after the job ended: the summary's "
                            "energy runs to the last sample")
        else:
            out["gpu_energy_joules"] = joules
            out["gpu_energy_error_joules"] = e.error(self.t_end)
        return out

    def job_started(self, t0):
        """The job's start (monotonic), where it began before this probe was made: its
        GPUs' energy counts from there."""
        if self.energy is not None:
            self.energy.started(t0)

    def __getattr__(self, name):       # alive(), pids(), tasks_peak() ...: the main probe's
        return getattr(self.main, name)

    def close(self):
        self.main.close()
        self.published.close()


def node_probe(main, directory, warn, environ=os.environ):
    """main wrapped in a NodeGpuProbe reading the reader's files in directory."""
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    published = _Nothing() if visible == "" else Published(directory)
    return NodeGpuProbe(main, published, visible, warn, environ.get("JOBMON_GPU_DEV", "/dev"))


class _Nothing:
    """A job given no GPU reads no file."""

    def close(self):
        pass


# the GPU figures of a sample (this module, or nvml.py where JOBMON_GPU=nvml), declared
# (jobmon.metrics.declared)
METRICS = (
    {"name": "gpu_count", "unit": "count", "range": "gpus", "kind": "gauge", "method": "exact",
     "meaning": "GPUs (or MIG slices) of the job: those in CUDA_VISIBLE_DEVICES, else every GPU "
                "the job may open (absent where no GPU source runs: docs/gpu.md)"},
    {"name": "gpu_util_percent", "unit": "%", "range": "percent", "kind": "gauge",
     "scope": "device", "method": "exact",
     "meaning": "share of time a kernel ran on the job's GPUs (NVML utilization, device-wide, "
                "averaged over the job's GPUs; other users of a shared GPU count too)",
     "note": "the job's own where no other process used its GPUs"},
    {"name": "gpu_mem_bytes", "unit": "bytes", "range": "memory", "kind": "gauge",
     "method": "exact",
     "meaning": "GPU memory held by the job's processes, summed over its GPUs (NVML per-process "
                "use)",
     "panel": ({"title": "GPU memory and energy", "how": "max", "alias": "gpu_mem",
                "unit": "bytes"},)},
    {"name": "gpus_in_use", "unit": "count", "range": "gpus", "kind": "gauge", "method": "exact",
     "meaning": "of the job's GPUs, those one of its processes is on (holds a context: NVML's "
                "process list, through the node reader)"},
    {"name": "gpu_energy_joules", "unit": "J", "range": "joules", "kind": "counter",
     "scope": "device", "method": "exact",
     "meaning": "energy the job's GPUs used since the job started (NVML, whole GPUs, none for MIG "
                "slices; Volta and later). Node reader: every sample, start and end interpolated "
                "between its readings; JOBMON_GPU=nvml: every 10 s and at the end (one read costs "
                "~4 ms). A GPU shared with another job gives both its whole energy "
                "(gpu_shared_samples)",
     "note": "the job's own where no other process used its GPUs (gpu_shared_samples 0); none for "
             "MIG slices",
     "panel": ({"title": "GPU memory and energy", "how": "rate", "alias": "gpu_watts",
                "unit": "watt"},)},
)


# and the end-of-job record's (jobmon.metrics.declared)
FIGURES = (
    {"name": "gpu_energy_joules", "fold": "seen", "combine": "sum",
     "meaning": "energy the job's GPUs used from start to end"},
    {"name": "gpu_energy_error_joules", "combine": "sum",
     "unit": "J", "range": "joules", "scope": "device",
     "method": "derived",
     "meaning": "how far gpu_energy_joules may be off (±): at the start and at the end, the "
                "larger of the interpolated counter's distances to the readings either side (the "
                "counter never goes back, so the true one lies between them); JOBMON_GPU=nvml: "
                "the GPUs' power limit x the time from the job's start to the sampler's first "
                "read"},
    {"name": "gpu_samples_missing", "unit": "count", "range": "count", "method": "exact",
     "meaning": "samples taken without GPU figures because the node reader was down or its data "
                "older than two refresh periods (never filled in with guesses); null without GPU "
                "metrics (docs/gpu.md)"},
    {"name": "gpu_shared_samples", "combine": "sum",
     "unit": "count", "range": "count", "method": "exact",
     "meaning": "samples in which a process not of the job was on its GPUs: their utilization and "
                "energy were then the devices', the other job's use included"},
)
