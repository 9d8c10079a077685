"""Idle allocations: how long a job has held cores it does not use (under IDLE_CORES busy
over a sampling interval while it had processes) or GPUs that none of its processes is on
-- the most wasteful pattern on a GPU cluster. Kept as the samples come: each sample gets
the current stretch of each (cpu_idle_seconds, gpu_unused_seconds: 0 while in use), so
the live views and Grafana see it now; the summary keeps the longest, and which allocation
was idle longer than the site's [report] idle_allocation_seconds. Standard library only.
"""
IDLE_CORES = 0.01


class Stretches:
    def __init__(self):
        self.since = {"cpu": None, "gpu": None}   # elapsed s the current stretch began
        self.longest = {"cpu": 0.0, "gpu": 0.0}
        self.prev = None                          # elapsed s of the sample before

    def add(self, sample):
        """Mark `sample` with the current stretches (where it says enough to tell)."""
        t, prev = sample.get("elapsed_seconds"), self.prev
        if t is None or not sample.get("procs", 1):   # the read after the job's end
            return
        self.prev = t
        cores = sample.get("cpu_cores")
        if cores is not None:
            sample["cpu_idle_seconds"] = self._stretch("cpu", cores < IDLE_CORES, t, prev)
        gpus, used = sample.get("gpu_count"), sample.get("gpus_in_use")
        if gpus and used is not None:
            sample["gpu_unused_seconds"] = self._stretch("gpu", used < gpus, t, prev)

    def _stretch(self, kind, idle, t, prev):
        if not idle:
            self.since[kind] = None
            return 0.0
        if self.since[kind] is None:   # idle over the interval this sample closes
            self.since[kind] = prev if prev is not None else t
        now = round(t - self.since[kind], 3)
        self.longest[kind] = max(self.longest[kind], now)
        return now

    def totals(self, threshold):
        """Summary fields: the longest stretches, and which allocation was idle at least
        `threshold` seconds at a stretch ("cores", "gpus", "cores,gpus" or "")."""
        cpu, gpu = self.longest["cpu"], self.longest["gpu"]
        flagged = [name for name, s in (("cores", cpu), ("gpus", gpu)) if s and s >= threshold]
        return {"cpu_idle_longest_seconds": cpu, "gpu_unused_longest_seconds": gpu,
                "idle_allocation": ",".join(flagged)}


# the stretches each sample gets, declared (jobmon.metrics.declared)
METRICS = (
    {"name": "cpu_idle_seconds", "unit": "s", "range": "wall", "kind": "gauge",
     "method": "derived",
     "meaning": "how long the job has used under 0.01 cores while it had processes, this stretch "
                "(0 while it uses CPU): cores allocated and idle"},
    {"name": "gpu_unused_seconds", "unit": "s", "range": "wall", "kind": "gauge",
     "method": "derived",
     "meaning": "how long at least one of the job's GPUs has had none of its processes on it, "
                "this stretch (0 while every one has): GPUs allocated and idle"},
)


# and the end-of-job record's (jobmon.metrics.declared)
FIGURES = (
    {"name": "cpu_idle_longest_seconds", "unit": "s", "range": "wall", "method": "derived",
     "meaning": "the longest stretch of cpu_idle_seconds"},
    {"name": "gpu_unused_longest_seconds", "unit": "s", "range": "wall", "method": "derived",
     "meaning": "the longest stretch of gpu_unused_seconds"},
    {"name": "idle_allocation", "unit": "text", "range": None, "method": "derived",
     "meaning": "which allocation the job held idle at a stretch for at least the site's [report] "
                "idle_allocation_seconds (600): cores, gpus, cores,gpus, or empty"},
)
