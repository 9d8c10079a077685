"""The one fold from samples to a job's totals and peaks.

The sampler feeds it every sample it takes, so the end-of-job summary comes from it; the
report feeds it the stored samples of a job that is still running (or ended without a
summary) and gets the same figures the summary would have (from_samples).
"""
from . import completeness
from .completeness import Coverage
from .idle import IDLE_CORES, Stretches

# the end-of-job figures this fold computes, declared (jobmon.metrics.declared) before the
# imports below: they import jobmon.metrics, which reads them (the stall counters' and node
# counters' totals are declared beside their probes); fold: how the samples make it
FIGURES = (
    {"name": "wall_seconds", "fold": "computed", "combine": "max",
     "unit": "s", "range": "wall", "method": "exact",
     "meaning": "wall-clock time from start to the end of the job's last process"},
    {"name": "cpu_user_seconds", "fold": "last", "combine": "sum",
     "meaning": "total user CPU of every process of the job (end-of-job read)",
     "report": ({"group": "cpu", "label": "CPU user", "unit": "s", "zero": "shown"},)},
    {"name": "cpu_system_seconds", "fold": "last", "combine": "sum",
     "meaning": "total system CPU of every process of the job (end-of-job read)",
     "report": ({"group": "cpu", "label": "CPU system", "unit": "s", "zero": "shown"},)},
    {"name": "cpu_cores_avg", "fold": "computed",
     "unit": "cores", "range": "cores", "method": "derived",
     "meaning": "(user + system CPU) / wall seconds"},
    {"name": "rss_peak_bytes", "fold": "max", "of": "mem_resident_peak_bytes", "combine": "max",
     "unit": "bytes", "range": "memory", "method": "estimated",
     "meaning": "resident peak: the largest sampled resident memory (anonymous + shared) and, "
                "where jobmon reaps the job's processes (jobmon run, a scheduler's job wrapper), "
                "each one's kernel high-water mark (ru_maxrss, VmHWM), so a one-process spike "
                "between samples is not missed; that mark also counts the file-backed pages the "
                "process mapped (program, libraries), so this can exceed mem_peak_bytes where the "
                "kernel charged those pages elsewhere. Sampled only where jobmon watches from "
                "beside the job (a scheduler's sampler: mem_sizing_basis says which)"},
    {"name": "mem_peak_bytes", "fold": "max", "combine": "max",
     "meaning": "kernel high-water mark of the job's charged memory, page cache included (cgroup "
                "only): exact, a spike at any instant is in it"},
    {"name": "swap_peak_bytes", "fold": "max", "of": "mem_swap_bytes", "combine": "max",
     "unit": "bytes", "range": "bytes", "method": "estimated",
     "meaning": "largest sampled swap use"},
    {"name": "read_bytes", "fold": "last", "combine": "sum",
     "meaning": "total bytes read from storage",
     "report": ({"group": "io", "label": "storage read (local disks only)", "unit": "bytes",
                 "zero": "shown"},
                {"group": "io", "label": "storage read rate (local disks only)", "unit": "bytes/s",
                 "how": "rate", "zero": "shown"})},
    {"name": "write_bytes", "fold": "last", "combine": "sum",
     "meaning": "total bytes written to storage",
     "report": ({"group": "io", "label": "storage written (local disks only)", "unit": "bytes",
                 "zero": "shown"},
                {"group": "io", "label": "storage write rate (local disks only)",
                 "unit": "bytes/s", "how": "rate", "zero": "shown"})},
    {"name": "rchar_bytes", "fold": "last", "combine": "sum",
     "meaning": "total bytes through read()-like system calls",
     "report": ({"group": "io", "label": "read() total", "unit": "bytes", "zero": "shown"},)},
    {"name": "wchar_bytes", "fold": "last", "combine": "sum",
     "meaning": "total bytes through write()-like system calls",
     "report": ({"group": "io", "label": "write() total", "unit": "bytes", "zero": "shown"},)},
    {"name": "procs_max", "fold": "max", "of": "procs", "combine": "max",
     "unit": "count", "range": "count", "method": "estimated",
     "meaning": "most processes of the job that existed at once (from fork to reaping: zombies "
                "count). cgroup: the samples and, where no sample saw a multi-threaded process, "
                "the pids controller's high-water mark of tasks; the exec trampoline that starts "
                "the job inside its cgroup raises that mark to 2 for a moment, so a mark of 2 is "
                "not used. procfs: a lower bound, exact for every process a sample found or "
                "jobmon reaped; see \"How exact procs_max is\" below",
     "note": "exact where the pids controller keeps a high-water mark",
     "report": ({"group": "processes", "label": "processes (peak)", "unit": "count",
                 "zero": "shown"},)},
    {"name": "threads_max", "fold": "max", "of": "threads", "combine": "max",
     "unit": "count", "range": "count", "method": "estimated",
     "meaning": "most threads alive at once",
     "report": ({"group": "processes", "label": "threads (peak)", "unit": "count",
                 "zero": "shown"},)},
    {"name": "gpu_count", "fold": "last", "combine": "max",
     "meaning": "GPUs of the job (absent without an NVIDIA driver)",
     "report": ({"group": "gpu", "label": "GPUs", "unit": "count", "zero": "shown"},)},
    {"name": "gpu_util_avg_percent", "fold": "computed",
     "unit": "%", "range": "percent", "scope": "device",
     "method": "derived", "meaning": "mean of the sampled GPU utilization",
     "report": ({"group": "gpu", "label": "GPU utilization (average, of the whole devices)",
                 "unit": "%", "zero": "shown"},)},
    {"name": "gpu_mem_peak_bytes", "fold": "max", "of": "gpu_mem_bytes", "combine": "max",
     "unit": "bytes", "range": "memory", "method": "estimated",
     "meaning": "largest sampled GPU memory of the job's processes",
     "report": ({"group": "gpu", "label": "GPU memory peak", "unit": "bytes", "zero": "shown"},)},
    {"name": "cpu_pressure_percent", "fold": "computed", "combine": "max",
     "unit": "%", "range": "share", "method": "derived",
     "meaning": "cpu_pressure_seconds / wall x 100: share of the run during which a thread of the "
                "job was waiting for a CPU (PSI)",
     "report": ({"group": "cpu", "label": "waiting for a CPU, share of the run (PSI)", "unit": "%",
                 "zero": "shown"},)},
    {"name": "cpu_wait_percent", "fold": "computed", "combine": "max",
     "unit": "%", "range": "percent", "method": "derived",
     "meaning": "cpu_wait_seconds / (cpu_wait_seconds + CPU seconds) x 100: share of the time its "
                "threads wanted a CPU that they spent waiting for one (run queue)",
     "report": ({"group": "cpu",
                 "label": "waiting for a CPU, share of the time its threads were "
                          "ready to run (run queue)", "unit": "%", "zero": "shown"},)},
    {"name": "mem_pressure_percent", "fold": "computed", "combine": "max",
     "unit": "%", "range": "share", "method": "derived",
     "meaning": "mem_pressure_seconds / wall x 100 (PSI)",
     "report": ({"group": "memory", "label": "stalled on memory, share of the run (PSI)",
                 "unit": "%", "zero": "shown"},)},
    {"name": "io_pressure_percent", "fold": "computed", "combine": "max",
     "unit": "%", "range": "share", "method": "derived",
     "meaning": "io_pressure_seconds / wall x 100 (PSI)",
     "report": ({"group": "io", "label": "stalled on storage, share of the run (PSI)", "unit": "%",
                 "zero": "shown"},)},
    {"name": "samples", "fold": "computed", "combine": "sum",
     "unit": "count", "range": "count", "method": "exact",
     "meaning": "samples taken",
     "report": ({"group": "run", "label": "samples", "unit": "count", "zero": "shown"},)},
    {"name": "cpu_idle_samples", "fold": "computed",
     "unit": "count", "range": "count", "method": "exact",
     "meaning": "samples in which the job used under 0.01 cores while it had processes (stall "
                "suspect)"},
    {"name": "gpu_idle_samples", "fold": "computed",
     "unit": "count", "range": "count", "scope": "device",
     "method": "exact", "meaning": "samples in which the job's GPUs were at 0 % utilization"},
    {"name": "mem_growth_bytes_per_hour", "fold": "computed", "unit": "bytes/h", "range": "signed",
     "method": "estimated",
     "meaning": "what resident memory grew by per hour in the run's second half (the start-up "
                "left out), without the samples that fall to its end (the exit's teardown): the "
                "median slope between every two of them (Theil-Sen, at most 64 samples kept "
                "evenly spaced over the run)"},
    {"name": "mem_rising", "fold": "computed",
     "unit": "count", "range": "flag", "method": "estimated",
     "meaning": "1 when resident memory rose steadily (a leak suspect): its peak came in the last "
                "fifth of the samples, and the line up to it fits them with R^2 >= 0.8 and rose "
                "by 25 % of its start over >= 10 samples"},
)

from ..config.report import REPORT  # noqa: E402
from ..metrics import declared  # noqa: E402

# summary field <- sample field of its last value; sample field -> summary field of its
# largest value; the node reader's counters, whose last value seen is kept (a sample may
# lack them while the reader is down): the declared folds, this module's own first, then
# the probes' (jobmon.metrics.declared)
LAST, PEAKS, SEEN = declared.folds(FIGURES)
LAST.update(declared.LAST)
PEAKS.update(declared.PEAKS)
SEEN += declared.SEEN
# suspects, kept as the samples come: a sample is idle below this many cores busy, and the
# footprint "rose steadily" when a line fits its samples this well (R^2) and rose by this
# share of its start over at least this many samples
IDLE_ALLOCATION = REPORT["idle_allocation_seconds"][1]   # the site's default
RISING_FIT, RISING_SHARE, RISING_SAMPLES = 0.8, 0.25, 10
# the growth rate is the median slope between every two resident memory samples of the
# run's second half (Theil-Sen), of at most this many kept evenly spaced over the run: the
# start-up (a job loading its data) is left out and a drop at the end moves it little, so
# a job flat once started reads ~0 however fast it got there, and a leak its rate; the
# sampler keeps these few points only
TREND_POINTS = 64


class Fold:
    def __init__(self, interval=None):
        self.last = {}
        self.samples = 0
        self.peaks = {}
        self.gpu_util = [0.0, 0]     # sum and count, for the mean
        self.seen = {}               # node reader counters: not in every sample, the last seen
        self.cpu_idle = self.gpu_idle = 0
        self.mem_fit = None          # [x0, y0, n, sx, sy, sxx, syy, sxy, x] from (x0, y0)
        self.fit_at_peak = None      # that fit when resident memory was at its peak
        self.trend = []              # (hours, bytes): every `trend_every`-th sample
        self.trend_every, self.trend_seen = 1, 0
        self.idle = Stretches()      # cores and GPUs held unused, stretch by stretch
        self.coverage = Coverage(interval)   # gaps between the samples

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
            if sample["gpu_util_percent"] == 0 and sample.get("gpu_count"):
                self.gpu_idle += 1
        for k in SEEN:
            if sample.get(k) is not None:
                self.seen[k] = sample[k]
        self.idle.add(sample)
        self.coverage.add(sample)
        if not sample.get("procs", 1):
            return   # the job's last read, after its processes are gone
        cores = sample.get("cpu_cores")
        if cores is not None and cores < IDLE_CORES:
            self.cpu_idle += 1
        if rss is not None and sample.get("elapsed_seconds") is not None:
            self._fit(sample["elapsed_seconds"] / 3600.0, rss)
            self._thin(sample["elapsed_seconds"] / 3600.0, rss)

    def _thin(self, x, y):
        """Keep every trend_every-th point; past TREND_POINTS, every other one of those."""
        if self.trend_seen % self.trend_every == 0:
            self.trend.append((x, y))
            if len(self.trend) > TREND_POINTS:
                self.trend = self.trend[::2]
                self.trend_every *= 2
        self.trend_seen += 1

    def _fit(self, x, y):
        f = self.mem_fit
        if f is None:
            f = self.mem_fit = [x, y, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        x, y = x - f[0], y - f[1]   # from the first point: no cancellation in the sums
        f[2] += 1
        f[3] += x
        f[4] += y
        f[5] += x * x
        f[6] += y * y
        f[7] += x * y
        f[8] = x
        if self.fit_at_peak is None or y >= self.fit_at_peak[9]:
            self.fit_at_peak = f + [y]   # the exit's teardown after the peak is left out

    def growth(self):
        """Bytes per hour that resident memory grew by in the run's second half: the median
        of the slopes between every two kept points there (Theil-Sen); None with fewer
        than 3. The exit's teardown is left out: the points at the end that only fall, below
        where that fall began, up to a quarter of them (a busy machine lets the sampler look
        seldom, and a few falling points turned a flat job's median into GiB/h lost)."""
        pts, start = self.trend, len(self.trend) - 1
        while start > 0 and pts[start - 1][1] >= pts[start][1]:
            start -= 1
        end = len(pts)
        while end > start + 1 and pts[end - 1][1] < pts[start][1]:
            end -= 1
        pts = pts[:max(end, len(pts) - len(pts) // 4)]
        pts = pts[len(pts) // 2:]
        slopes = sorted((b[1] - a[1]) / (b[0] - a[0]) for i, a in enumerate(pts)
                        for b in pts[i + 1:] if b[0] > a[0])
        if len(pts) < 3 or not slopes:
            return None
        mid = len(slopes) // 2
        return round(slopes[mid] if len(slopes) % 2 else (slopes[mid - 1] + slopes[mid]) / 2, 1)

    def mem_trend(self):
        """(growth in bytes per hour, 1 if resident memory rose steadily else 0)."""
        return self.growth(), int(self.rising())

    def rising(self):
        """A leak suspect: the least-squares line through the samples up to the peak (the
        exit's teardown left out) fits them, rose enough, and the peak came late."""
        f, p = self.mem_fit, self.fit_at_peak
        if f is None or p[2] < RISING_SAMPLES:
            return False
        # a leak still rises at the end: the peak came in the last fifth of the samples
        late = p[2] >= 0.8 * f[2]
        _x0, y0, n, sx, sy, sxx, syy, sxy, last, _peak = p
        vx, vy, cov = n * sxx - sx * sx, n * syy - sy * sy, n * sxy - sx * sy
        if vx <= 0 or vy <= 0:
            return False
        slope = cov / vx
        start = y0 + (sy - slope * sx) / n     # the line at the first sample
        span = slope * last                   # what the line rose over the run
        return (late and slope > 0 and cov * cov / (vx * vy) >= RISING_FIT
                and span >= RISING_SHARE * max(start, 1 << 20))

    def totals(self, tasks_peak=None, procs_peak=None, idle_threshold=IDLE_ALLOCATION):
        """Summary fields that come from the samples. tasks_peak: the pids controller's
        high-water mark of the job's tasks, where there is one; procs_peak: the most
        processes known to have existed at once (procfs mode); idle_threshold: the
        site's [report] idle_allocation_seconds."""
        last, pk = self.last, self.peaks
        out = {k: last.get(field) for k, field in LAST.items()}
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
        out["procs_max"] = max(procs, procs_peak or 0)
        # every process has a thread: a job over before its first sample still had one
        out["threads_max"] = max(threads, tasks_peak or 0, procs_peak or 0, out["procs_max"])
        out["gpu_util_avg_percent"] = round(self.gpu_util[0] / self.gpu_util[1], 1) \
            if self.gpu_util[1] else None
        out.update(dict.fromkeys(SEEN), **self.seen)
        out["samples"] = self.samples
        out["cpu_idle_samples"], out["gpu_idle_samples"] = self.cpu_idle, self.gpu_idle
        out["mem_growth_bytes_per_hour"], out["mem_rising"] = self.mem_trend()
        out.update(self.idle.totals(idle_threshold))
        out.update(self.coverage.totals())
        out.update(stall_shares(out, wall, cpu))
        out.update(declared_shares(out))
        return out


def declared_shares(out):
    """The declared percent figures: 100 x part / whole of the summary's figures."""
    res = {}
    for name, (part, whole) in declared.PERCENTS.items():
        p, w = out.get(part), out.get(whole)
        res[name] = round(100.0 * p / w, 2) if p is not None and w else None
    return res


def stall_shares(out, wall, cpu):
    """The stall totals as shares of the run (summary fields *_pressure_percent, and
    cpu_wait_percent of the time its threads wanted a CPU)."""
    def share(part, whole):
        return round(100.0 * part / whole, 2) if part is not None and whole > 0 else None
    wait = out.get("cpu_wait_seconds")
    return {"cpu_pressure_percent": share(out.get("cpu_pressure_seconds"), wall),
            "cpu_wait_percent": share(wait, (wait or 0) + cpu),
            "mem_pressure_percent": share(out.get("mem_pressure_seconds"), wall),
            "io_pressure_percent": share(out.get("io_pressure_seconds"), wall)}


def from_samples(info, samples, cut_short=False):
    """A run's figures from its stored samples alone (`info`: its record): the totals and
    peaks up to its last sample, the same fold the sampler makes. cut_short: the run is
    over, but its end-of-job record never came (the scheduler killed its sampler with it,
    or its node went down): then also its end, no exit status, what it was given and used
    (efficiency figures), `cut_short` 1 and `missing_seconds_max` -- at most one interval
    of the run's end is missing, since a live sampler would have sampled again by then."""
    fold = Fold(info.get("interval"))
    for x in samples:
        fold.add(x)
    out = fold.totals() if samples else {}
    out["method"] = info.get("method")
    if not cut_short:
        return out
    from .efficiency import allocation, figures
    out.update(start_time=info.get("start_time"), exit_code=None, signal=None,
               interval_seconds=info.get("interval"), cut_short=1,
               missing_seconds_max=info.get("interval"))
    out.setdefault("wall_seconds", 0.0)
    out["end_time"] = round((info.get("start_time") or 0) + out["wall_seconds"], 3)
    out.update(figures(out, allocation(info.get("tags"), gpu_count=out.get("gpu_count"))))
    out.update(completeness.fields(out))
    return out


