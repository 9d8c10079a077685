"""The one fold from samples to a job's totals and peaks.

The sampler feeds it every sample it takes, so the end-of-job summary comes from it; the
report feeds it the stored samples of a job that is still running (or ended without a
summary) and gets the same figures the summary would have.
"""
import os

# sample field -> summary field holding its largest value
PEAKS = {"mem_resident_peak_bytes": "rss_peak_bytes", "mem_peak_bytes": "mem_peak_bytes",
         "mem_swap_bytes": "swap_peak_bytes", "procs": "procs_max", "threads": "threads_max",
         "gpu_mem_bytes": "gpu_mem_peak_bytes"}
# counters: the summary holds the last value
LAST = ("cpu_user_seconds", "cpu_system_seconds", "read_bytes", "write_bytes", "rchar_bytes",
        "wchar_bytes", "gpu_count")


class Fold:
    def __init__(self):
        self.last = {}
        self.samples = 0
        self.peaks = {}
        self.gpu_util = [0.0, 0]     # sum and count, for the mean
        self.gpu_energy = None       # not in every sample: the last one seen

    def add(self, sample):
        self.samples += 1
        self.last = sample
        pk = self.peaks
        for field in PEAKS:
            v = sample.get(field)
            if v is not None and v > pk.get(field, -1):
                pk[field] = v
        rss = sample.get("mem_resident_bytes")   # stored samples of old jobs lack the peak
        if rss is not None and rss > pk.get("mem_resident_peak_bytes", -1):
            pk["mem_resident_peak_bytes"] = rss
        if sample.get("gpu_util_percent") is not None:
            self.gpu_util[0] += sample["gpu_util_percent"]
            self.gpu_util[1] += 1
        if sample.get("gpu_energy_joules") is not None:
            self.gpu_energy = sample["gpu_energy_joules"]

    def totals(self, tasks_peak=None):
        """Summary fields that come from the samples. tasks_peak: the pids controller's
        high-water mark of the job's tasks, where there is one."""
        last, pk = self.last, self.peaks
        out = {k: last.get(k) for k in LAST}
        for field, name in PEAKS.items():
            out[name] = pk.get(field)
        wall = last.get("elapsed_seconds") or 0.0
        cpu = (last.get("cpu_user_seconds") or 0) + (last.get("cpu_system_seconds") or 0)
        out["wall_seconds"] = wall
        out["cpu_cores_avg"] = round(cpu / wall, 4) if wall > 0 else None
        out["rss_peak_bytes"] = out["rss_peak_bytes"] or 0
        out["mem_peak_bytes"] = out["mem_peak_bytes"] or None   # absent in procfs mode
        out["swap_peak_bytes"] = out["swap_peak_bytes"] or 0
        threads = pk.get("threads", 0)
        procs = max(pk.get("procs", 0), 1)   # the command itself ran
        # the pids controller's task high-water mark is the process peak when no sample
        # ever saw more threads than processes (short-lived processes between samples)
        if tasks_peak and threads <= pk.get("procs", 0):
            procs = max(procs, tasks_peak)
        out["procs_max"] = procs
        out["threads_max"] = max(threads, tasks_peak or 0)
        out["gpu_util_avg_percent"] = round(self.gpu_util[0] / self.gpu_util[1], 1) \
            if self.gpu_util[1] else None
        out["gpu_energy_joules"] = self.gpu_energy
        out["samples"] = self.samples
        return out


def exit_fields(status):
    """exit_code / signal from a wait status (None: unknown)."""
    if status is None:
        return {"exit_code": None, "signal": None}
    if os.WIFSIGNALED(status):
        return {"exit_code": None, "signal": os.WTERMSIG(status)}
    return {"exit_code": os.WEXITSTATUS(status), "signal": None}
