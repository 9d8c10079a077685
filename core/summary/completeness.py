"""How much of a run its data covers, and why not all of it: one figure
(`completeness_percent`, the share of the run's wall time its samples cover) and its
reasons (`completeness_reasons`): gaps between samples, a cut-short end, reads that failed,
points the spool lost, samples the store does not hold, and figures that are bounds rather
than exact.

A stretch between two samples (or from the start to the first) longer than GAP_INTERVALS
sampling intervals and GAP_SLACK seconds is a gap: all of it but one interval is missing,
since a live sampler would have sampled by then. The slack keeps a busy node's late tick
at a short interval from reading as lost data. A sample whose probe read failed covers nothing. Counters
(CPU, I/O) are read whole at every sample, so a gap loses the shape of the run, its
sampled peaks and its idle stretches, not its totals; a cut-short end loses totals too.

Advice that rests on what the samples saw is withheld below the site's
`[report] min_completeness_percent`, and `jobmon act` neither warns nor acts below
`[actions] min_completeness_percent`. Standard library only (the per-job path)."""

GAP_INTERVALS, GAP_SLACK = 2.0, 1.0


class Coverage:
    """The gaps of a run's samples, kept as they come."""

    def __init__(self, interval=None):
        self.interval = interval
        self.covered_until = 0.0     # elapsed seconds of the last sample with data
        self.gap_seconds = 0.0
        self.gaps = 0
        self.longest = 0.0
        self.failed_reads = 0

    def add(self, sample):
        at = sample.get("elapsed_seconds")
        if at is None or not self.interval:
            return
        if "cpu_user_seconds" not in sample:   # the probe's read failed: nothing known
            self.failed_reads += 1
            return
        stretch = at - self.covered_until
        if stretch > GAP_INTERVALS * self.interval + GAP_SLACK:
            missing = stretch - self.interval
            self.gaps += 1
            self.gap_seconds += missing
            self.longest = max(self.longest, missing)
        self.covered_until = max(self.covered_until, at)
        if self.gap_seconds:   # the run so far, for `jobmon act` (no field while whole)
            sample["sample_gap_seconds"] = round(self.gap_seconds, 3)

    def totals(self):
        return {"sample_gaps": self.gaps, "sample_gap_seconds": round(self.gap_seconds, 3),
                "sample_gap_longest_seconds": round(self.longest, 3),
                "failed_reads": self.failed_reads}


def _n(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else 0


def assess(s, stored=None):
    """(completeness_percent or None without a wall time, [reasons]) of a summary; stored:
    how many of its samples the store holds (the read side), else None."""
    wall = _n(s.get("wall_seconds"))
    interval = _n(s.get("interval_seconds"))
    reasons, missing = [], 0.0
    taken = int(_n(s.get("samples")))
    if stored is not None and taken > stored:   # dropped on the way (a spool over its
        missing += (taken - stored) * interval  # limit) or set aside (out of range)
        reasons.append(f"{taken - stored} of its {taken} samples are not in the store")
    if s.get("cut_short"):
        end = _n(s.get("missing_seconds_max"))
        missing += end
        reasons.append(f"cut short: up to {end:g} s of its end missing, and its exit status")
    elif _n(s.get("missing_seconds_max")) > 0:
        end = _n(s.get("missing_seconds_max"))
        missing += end
        reasons.append(f"its cgroup went before the final read: up to {end:g} s of its end "
                       "missing")
    gaps, gap = int(_n(s.get("sample_gaps"))), _n(s.get("sample_gap_seconds"))
    if gaps:
        missing += gap
        reasons.append(f"{gaps} gap{'s' if gaps > 1 else ''} between samples, {gap:.1f} s in "
                       f"all (the longest {_n(s.get('sample_gap_longest_seconds')):.1f} s)")
    failed = int(_n(s.get("failed_reads")))
    if failed:
        missing += failed * interval
        reasons.append(f"{failed} read{'s' if failed > 1 else ''} of its probe failed")
    lost = int(_n(s.get("lost_points")))
    if lost:
        missing += lost * interval
        reasons.append(f"{lost} point{'s' if lost > 1 else ''} the spool could not keep "
                       "(a full disk)")
    errors = int(_n(s.get("monitor_errors"))) - failed
    if errors > 0:
        reasons.append(f"{errors} other monitoring error{'s' if errors > 1 else ''} (the "
                       "job's stderr has the first)")
    if "procfs" in str(s.get("method") or ""):
        reasons.append("procfs mode: process counts and sampled peaks are lower bounds")
    if _n(s.get("energy_missing_seconds")) > 0:
        reasons.append(f"energy: {_n(s['energy_missing_seconds']):g} s of the run not in its "
                       "totals")
    if _n(s.get("gpu_samples_missing")) > 0:
        reasons.append(f"GPU: {int(_n(s['gpu_samples_missing']))} samples without figures")
    if wall <= 0:
        return None, reasons
    return round(100.0 * max(wall - missing, 0.0) / wall, 1), reasons


def fields(s, stored=None):
    """The summary's completeness_percent and completeness_reasons ("; " between them,
    "" when nothing is missing); stored: as for assess."""
    pct, reasons = assess(s, stored)
    return {"completeness_percent": pct, "completeness_reasons": "; ".join(reasons)}


def so_far(sample):
    """The share of a running job's run so far its samples cover (its latest sample), or
    None where that sample does not say."""
    at = sample.get("elapsed_seconds")
    if not isinstance(at, (int, float)) or at <= 0:
        return None
    return round(100.0 * max(at - _n(sample.get("sample_gap_seconds")), 0.0) / at, 1)


def below(s, threshold):
    """Why a run's data is under `threshold` percent, else None (a run of unknown
    completeness is not held back)."""
    pct = s.get("completeness_percent")
    if not isinstance(pct, (int, float)):
        pct = assess(s)[0]
    if pct is None or not threshold or pct >= threshold:
        return None
    return f"its data covers {pct:g} % of the run, under the site's {threshold:g} %"


# the gap each sample gets, declared (jobmon.metrics.declared)
METRICS = (
    {"name": "sample_gap_seconds", "unit": "s", "range": "wall", "kind": "gauge",
     "method": "exact",
     "meaning": "seconds of the run so far that no sample covers (jobmon.summary.completeness: "
                "each stretch between samples longer than two intervals and a second, less one "
                "interval); only once there is a gap"},
)


# and the end-of-job record's (jobmon.metrics.declared)
FIGURES = (
    {"name": "cut_short", "combine": "max", "unit": "count", "range": "flag", "method": "exact",
     "meaning": "1 when the run ended without its end-of-job record (the scheduler SIGKILLed the "
                "sampler with the job after the vacate time, or the node went down): its figures "
                "are its samples' fold, up to the last one; 0 when the end-of-job read was made"},
    {"name": "missing_seconds_max", "combine": "max",
     "unit": "s", "range": "wall", "method": "estimated",
     "meaning": "at most this much of the run's end is not in its figures: one sampling interval "
                "for a cut-short run (a live sampler would have sampled again), the time after "
                "the last read where the job's cgroup went before its final read, else 0",
     "report": ({"group": "run", "label": "end not in the figures (cut short), at most",
                 "unit": "s"},)},
    {"name": "sample_gaps", "unit": "count", "range": "count", "method": "exact",
     "meaning": "stretches between samples (or from the start to the first) longer than two "
                "sampling intervals and a second: the sampler was held up (a busy node, a stalled "
                "file system)"},
    {"name": "sample_gap_seconds",
     "meaning": "seconds of those gaps no sample covers (each gap less one interval)"},
    {"name": "sample_gap_longest_seconds", "unit": "s", "range": "wall", "method": "exact",
     "meaning": "the longest of them"},
    {"name": "failed_reads", "unit": "count", "range": "count", "method": "exact",
     "meaning": "samples whose probe read failed (nothing known then)"},
    {"name": "completeness_percent", "unit": "%", "range": "percent", "method": "derived",
     "meaning": "the share of the run its data covers: wall less the gaps, a cut-short end, and "
                "one interval for each read that failed and each point the spool lost (reports "
                "also count the samples the store does not hold); below the site's [report] "
                "min_completeness_percent the advice that rests on what the samples saw is "
                "withheld, and `jobmon act` does not act below [actions] "
                "min_completeness_percent"},
    {"name": "completeness_reasons", "unit": "text", "range": None, "method": "derived",
     "meaning": "why the data is not whole or exact: gaps, a cut-short end, failed reads, lost "
                "points, monitoring errors, figures that are bounds (procfs mode), energy or GPU "
                "figures missing; \"; \" between them, empty when there is nothing to say"},
)
