"""probe -> sample -> sinks: turn probe readings into samples, fold them as they come.

Counter rules live here: counters start from zero for a job with a past (zero()), never
go back (a process read just before it was reaped can make a dip), and give CPU cores
over each interval. The sampler's own cost is kept for the summary (self-metrics).
"""
import resource
import sys
import time

from ..metrics import COUNTERS
from ..probes import breakdown
from ..probes.netfs import NetFs
from ..summary import Fold


def reaped_peak():
    """The kernel's resident high-water mark over every process this one has reaped."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def take_off(values, seconds):
    """Take `seconds` of CPU that is not the job's (the exec trampoline's, in the job's
    cgroup for its last moments) off a cgroup's CPU counters. The cgroup counts those
    seconds exactly, but splits them its own way: the trampoline's exec, clone and exit
    are system time there, while its rusage calls a run that no clock tick hit all user
    time. Taken off user time, they made a short job's user time negative; so they come
    off system time first, then user time, and neither goes below zero."""
    system = values.get("cpu_system_seconds", 0.0)
    from_system = min(seconds, max(system, 0.0))
    values["cpu_system_seconds"] = system - from_system
    values["cpu_user_seconds"] = max(values["cpu_user_seconds"] - (seconds - from_system), 0.0)


def site_breakdown(probe, warn=None, clock=time.monotonic):
    """The site's breakdown of a probe's job ([procs] in the config; JOBMON_PROCS_TOP=0
    turns it off), or None: off, or the probe cannot list its pids."""
    if probe is None or not callable(getattr(probe, "pids", None)):
        return None
    try:
        # read here, not in the probe: jobmon.config reads the probes' declarations
        from .. import config
        cfg = config.load()["procs"]
    except Exception as e:   # a broken config must not stop the job: defaults
        if warn:
            warn(f"per-process breakdown: config unusable ({e}); using defaults")
        from ..config import SCHEMA
        cfg = {k: d for k, (_t, d) in SCHEMA["procs"].items()}
    if cfg["top"] <= 0:
        return None
    return breakdown.Breakdown(probe.pids, cfg["top"], cfg["every_seconds"], cfg["cmdline"],
                               clock=clock, stats=getattr(probe, "stats", None))


class Sampler:
    def __init__(self, probe, sinks, job, interval, monotonic=time.monotonic,
                 kernel_peak=reaped_peak, own_process=True):
        self.probe = probe
        self.sinks = list(sinks)
        self.job = job
        self.interval = interval
        self.clock = monotonic
        self.kernel_peak = kernel_peak
        self.t0 = monotonic()
        self.last = {}            # last sample's values
        self.last_t = self.t0
        self.fold = Fold(interval)
        self.resident_peak = 0
        self.errors = 0
        self.read_seconds = 0.0   # time spent in probe reads (self-metric)
        self.tick_cpu = 0.0       # CPU spent in tick(), for a sampler sharing its process
        self.own_process = own_process
        self.base = {}            # counter values at the start, for jobs with a past
        self.cpu_overhead = 0.0   # s of jobmon's own CPU in a cgroup's counters (take_off)
        self.fixed = {}           # figures every sample carries once known (its limit)
        for s in list(self.sinks):
            self._safe(s, "open", job)
        # the per-process breakdown, at its own lower rate (probes/breakdown.py)
        self.breakdown = site_breakdown(probe, self._warn, monotonic)
        # where the job's files are: a network file system's I/O is in no storage counter
        self.netfs = NetFs() if probe is not None else None

    def _safe(self, sink, what, arg):
        try:
            getattr(sink, what)(arg)
        except Exception as e:  # a broken sink must never stop the job or the other sinks
            self._warn(f"{type(sink).__name__}.{what}: {e}")
            if what == "open":
                self.sinks.remove(sink)

    def _warn(self, msg):
        self.errors += 1
        if self.errors <= 3:
            try:
                sys.stderr.write(f"jobmon: warning: {msg}\n")
            except (OSError, ValueError):   # stderr a closed pipe: the job goes on
                pass

    def zero(self):
        """Count from now: for a cgroup or process that existed before the job began."""
        values = self.probe.read()
        self.base = {k: values[k] for k in COUNTERS if k in values}

    def tick(self, extra=None, final=False):
        """Take one sample; the final one comes after the job ended, with `extra` holding
        exact totals the probe cannot see."""
        t, c = time.perf_counter(), time.thread_time()
        try:
            values = self.probe.read(final) if self.probe else {}
        except Exception as e:
            self._warn(f"probe {getattr(self.probe, 'method', '?')}: {e}")
            values = {}
        self.read_seconds += time.perf_counter() - t
        for k, v in self.base.items():
            if k in values:
                values[k] -= v
        if self.cpu_overhead and "cpu_user_seconds" in values:
            take_off(values, self.cpu_overhead)
        values.update(self.fixed)
        if extra:
            values.update(extra)
        now = self.clock()
        for k in COUNTERS:
            if k in values and k in self.last:
                values[k] = max(values[k], self.last[k])
        cpu = values.get("cpu_user_seconds", 0) + values.get("cpu_system_seconds", 0)
        last_cpu = self.last.get("cpu_user_seconds", 0) + self.last.get("cpu_system_seconds", 0)
        dt = now - self.last_t
        if dt > 0 and "cpu_user_seconds" in values:
            values["cpu_cores"] = round(max(cpu - last_cpu, 0) / dt, 4)
        # resident peak: sampled values and the kernel's high-water marks, which catch
        # spikes between samples
        self.resident_peak = max(self.resident_peak, values.get("mem_resident_bytes", 0),
                                 self.kernel_peak() if self.kernel_peak else 0)
        values["mem_resident_peak_bytes"] = self.resident_peak
        sample = {"time": time.time_ns(), "elapsed_seconds": round(now - self.t0, 3),
                  "method": self.job.get("method")}
        sample.update(values)
        self.last, self.last_t = values, now
        self.fold.add(sample)
        for s in list(self.sinks):
            self._safe(s, "write", sample)
        if self.netfs is not None and not final and self.netfs.due(now):
            try:
                self.netfs.look(self.probe.sampled_pids(), now)
            except Exception as e:   # off for the rest of the job; the samples go on
                self._warn(f"network file systems: {e}")
                self.netfs = None
        if self.breakdown is not None and not final and self.breakdown.due(now):
            self._procs(sample["elapsed_seconds"])
        self.tick_cpu += time.thread_time() - c
        return sample

    def _procs(self, elapsed):
        try:
            record = self.breakdown.take(elapsed)
        except Exception as e:   # off for the rest of the job; the samples go on
            if not isinstance(e, NotImplementedError):
                self._warn(f"per-process breakdown: {e}")
            self.breakdown = None
            return
        for s in list(self.sinks):
            if hasattr(s, "procs"):
                self._safe(s, "procs", record)

    def self_metrics(self):
        """What monitoring cost: the sampler's CPU (its whole process when it has one of
        its own), the time its probe reads took, and its errors."""
        cpu = self.tick_cpu
        if self.own_process:
            ru = resource.getrusage(resource.RUSAGE_SELF)
            cpu = ru.ru_utime + ru.ru_stime
        return {"monitor_cpu_seconds": round(cpu, 4),
                "monitor_read_seconds": round(self.read_seconds, 4),
                "monitor_errors": self.errors}

    def close(self, summary):
        for s in self.sinks:
            self._safe(s, "close", summary)
        if self.probe:
            self.probe.close()
