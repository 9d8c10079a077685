"""probe -> sample -> sinks: turn probe readings into samples and the end-of-job summary."""
import os
import resource
import sys
import time

from .metrics import COUNTERS


class Sampler:
    def __init__(self, probe, sinks, job, interval, monotonic=time.monotonic):
        self.probe = probe
        self.sinks = list(sinks)
        self.job = job
        self.interval = interval
        self.clock = monotonic
        self.t0 = monotonic()
        self.last = {}            # last sample
        self.last_t = self.t0
        self.samples = 0
        self.peaks = {"mem_resident_peak_bytes": 0, "mem_swap_bytes": 0, "procs": 0,
                      "threads": 0, "mem_peak_bytes": 0}
        self.gpu_util = [0.0, 0]  # sum and count of sampled GPU utilization (for the mean)
        self.gpu_energy = None
        self.errors = 0
        self.base = {}            # counter values at the start, for jobs with a past
        for s in list(self.sinks):
            self._safe(s, "open", job)

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
            sys.stderr.write(f"jobmon: warning: {msg}\n")

    def zero(self):
        """Count from now: for a cgroup or process that existed before the job began."""
        values = self.probe.read()
        self.base = {k: values[k] for k in COUNTERS if k in values}

    def tick(self, extra=None, final=False):
        """Take one sample; the final one comes after the job ended, with `extra` holding
        exact totals the probe cannot see."""
        try:
            values = self.probe.read(final) if self.probe else {}
        except Exception as e:
            self._warn(f"probe {getattr(self.probe, 'method', '?')}: {e}")
            values = {}
        for k, v in self.base.items():
            if k in values:
                values[k] -= v
        if extra:
            values.update(extra)
        now = self.clock()
        for k in COUNTERS:  # a process read just before it was reaped can make a dip
            if k in values and k in self.last:
                values[k] = max(values[k], self.last[k])
        cpu = values.get("cpu_user_seconds", 0) + values.get("cpu_system_seconds", 0)
        last_cpu = self.last.get("cpu_user_seconds", 0) + self.last.get("cpu_system_seconds", 0)
        dt = now - self.last_t
        if dt > 0 and "cpu_user_seconds" in values:
            values["cpu_cores"] = round(max(cpu - last_cpu, 0) / dt, 4)
        # resident peak: sampled values and the kernel's per-process high-water mark of
        # every process reaped so far (ru_maxrss), which catches spikes between samples
        maxrss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        pk = self.peaks
        pk["mem_resident_peak_bytes"] = max(pk["mem_resident_peak_bytes"],
                                            values.get("mem_resident_bytes", 0), maxrss)
        values["mem_resident_peak_bytes"] = pk["mem_resident_peak_bytes"]
        for k in ("mem_swap_bytes", "procs", "threads", "mem_peak_bytes", "gpu_mem_bytes"):
            if values.get(k) is not None:
                pk[k] = max(pk.get(k, 0), values[k])
        if "gpu_util_percent" in values:
            self.gpu_util[0] += values["gpu_util_percent"]
            self.gpu_util[1] += 1
        if "gpu_energy_joules" in values:   # not in every sample: see probes.nvml
            self.gpu_energy = values["gpu_energy_joules"]
        sample = {"time": time.time_ns(), "elapsed_seconds": round(now - self.t0, 3),
                  "method": self.job.get("method")}
        sample.update(values)
        self.last, self.last_t = values, now
        self.samples += 1
        for s in list(self.sinks):
            self._safe(s, "write", sample)
        return sample

    def summary(self, status=None, leftovers=0, tasks_peak=None):
        """The end-of-job record, from the final sample and the peaks."""
        last, pk = self.last, self.peaks
        wall = round(self.last_t - self.t0, 3)
        cpu_u = last.get("cpu_user_seconds", 0.0)
        cpu_s = last.get("cpu_system_seconds", 0.0)
        procs_max = max(pk["procs"], 1)  # the command itself ran
        # the pids controller's task high-water mark is the process peak when no sample
        # ever saw more threads than processes (short-lived processes between samples)
        if tasks_peak and pk["threads"] <= pk["procs"]:
            procs_max = max(procs_max, tasks_peak)
        s = {k: self.job.get(k) for k in ("job", "host", "user", "method", "start_time", "tags")}
        s.update({
            "end_time": round(self.job["start_time"] + wall, 3),
            "exit_code": None, "signal": None,
            "wall_seconds": wall,
            "cpu_user_seconds": round(cpu_u, 6), "cpu_system_seconds": round(cpu_s, 6),
            "cpu_cores_avg": round((cpu_u + cpu_s) / wall, 4) if wall > 0 else None,
            "rss_peak_bytes": pk["mem_resident_peak_bytes"],
            "mem_peak_bytes": pk["mem_peak_bytes"] or None,
            "swap_peak_bytes": pk["mem_swap_bytes"],
            "read_bytes": last.get("read_bytes"), "write_bytes": last.get("write_bytes"),
            "rchar_bytes": last.get("rchar_bytes"), "wchar_bytes": last.get("wchar_bytes"),
            "procs_max": procs_max, "threads_max": max(pk["threads"], tasks_peak or 0),
            "leftover_procs": leftovers,
            "gpu_count": last.get("gpu_count"),
            "gpu_util_avg_percent": round(self.gpu_util[0] / self.gpu_util[1], 1)
            if self.gpu_util[1] else None,
            "gpu_mem_peak_bytes": pk.get("gpu_mem_bytes"),
            "gpu_energy_joules": self.gpu_energy,
            "samples": self.samples, "interval_seconds": self.interval,
        })
        if status is not None:
            if os.WIFSIGNALED(status):
                s["signal"] = os.WTERMSIG(status)
            else:
                s["exit_code"] = os.WEXITSTATUS(status)
        return s

    def close(self, summary):
        for s in self.sinks:
            self._safe(s, "close", summary)
        if self.probe:
            self.probe.close()
