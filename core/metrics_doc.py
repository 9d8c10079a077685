"""docs/metrics.md, generated from the metric table (core/metrics/), and the scope and
method of every figure: what a figure covers (the job's own processes, the job's whole
devices, the node) and how it was obtained (exactly, apportioned from a larger scope,
estimated, derived from other figures, or recorded as given). Reports show these beside
the figures whose scope is not the job's own or whose method is not exact, so that nobody
reads a node's or a device's figure as a job's. A test keeps every field in this table.
"""
from .metrics import PROCS_FIELDS, PROCS_TOP_KEYS, SAMPLE_FIELDS, SUMMARY_FIELDS
from .metrics.declared import PROCS
from .metrics.samples import SAMPLE_METRICS
from .metrics.summary import SUMMARY_FIGURES
from .metrics.ranges import DEFAULTS, kinds
from . import schedulers

SCOPES = {
    "job": "the job's own processes or cgroup",
    "device": "the job's GPUs as whole devices: another job on a shared GPU counts too",
    "node": "the node as a whole, or the site's setting for it",
}
METHODS = {
    "exact": "read from a counter or gauge the kernel or driver keeps for exactly this scope",
    "apportioned": "a larger scope's counter (the node's RAPL energy) split by the job's "
                   "share of the node's CPU time in each interval",
    "estimated": "may miss or approximate: a largest or mean sample, a lower bound, a model "
                 "(the carbon intensity)",
    "derived": "computed from other figures of the table",
    "recorded": "as given: the job's identity, its request, the scheduler's record, a "
                "site setting",
}
# name -> (scope, method) and name -> note, from every declaration (jobmon.metrics.declared):
# a sample field's end-of-job figure of the same name has the field's
_DECLARED = PROCS + SUMMARY_FIGURES + SAMPLE_METRICS
FIGURES = {d.name: (d.scope, d.method()) for d in _DECLARED}
NOTES = {d.name: d.note() for d in _DECLARED}


def figure(name):
    """{"scope", "method"[, "note"]} of a field, or None for a field not in the table."""
    sm = FIGURES.get(name)
    if sm is None:
        return None
    out = {"scope": sm[0], "method": sm[1]}
    if NOTES.get(name):
        out["note"] = NOTES[name]
    return out


def _meaning(name, meaning):
    """A summary field's meaning and what each registered scheduler gives it (its object's
    field_notes)."""
    notes = [f"{s.name}: {s.field_notes[name]}" for s in schedulers.all()
             if name in s.field_notes]
    return f"{meaning} ({'; '.join(notes)})" if notes else meaning


def _how(name):
    f = figure(name) or {"scope": "?", "method": "?"}
    return f"{f['scope']} | {f['method']}" + (f"; {f['note']}" if "note" in f else "")


PROCS_MAX_METHOD = """\
A process exists from its fork until its parent reaps it; a zombie still counts, as the
kernel's pids controller counts it. With a job cgroup whose pids controller keeps a
high-water mark (`pids.peak`), that mark is the peak of the job's tasks, exact: `procs_max`
is it where no sample saw a process with more than one thread (else the samples', a lower
bound). A cgroup without that mark gives the samples' largest count, a lower bound.

In procfs mode (no cgroup: an unprivileged `jobmon run`, `--cgroup=none`, a batch job on a
node whose scheduler gives it no cgroup) no interface open to an unprivileged process reports a
fork. jobmon knows of each process it found the clock tick it was born in (its start time)
and moments it still existed, and counts every set of processes that provably existed
together:

- every process a sample found, zombies included;
- every process jobmon reaped itself, sampled or not: the command, and every orphan it
  adopted as the job's subreaper (a double-forked daemon, a chain of daemons, one that
  lived a few milliseconds between two samples), each known to exist until the moment
  before jobmon reaped it;
- every orphan's parent at the orphan's birth, although it was never seen: jobmon adopts
  a process only once its parent died. It is not added where a process already counted
  that died may have been that parent (same session, not known alive then): a chain of
  daemons whose intermediates do not call setsid() while the top process died reads one
  less;
- of two processes born in the same clock tick, the lower pid was forked first.

So `procs_max` is exact in procfs mode for every job whose processes each existed across a
sample or were reaped by jobmon. A process born and reaped by another process of the job
between two samples (a shell's short-lived commands, a fork storm) is not seen, and then
`procs_max` is a lower bound: the largest number of processes that provably existed at once.
Counting those too takes a kernel event stream (the proc connector, which needs
CAP_NET_ADMIN; BPF; or tracing every fork with ptrace, which would change the job's own
behaviour), or a cgroup.
"""


def markdown():
    """The metric table as docs/metrics.md shows it."""
    out = ["# Metrics", "",
           "Generated from `core/metrics/`, `core/metrics_doc.py` and the metrics declared "
           "beside their probes (`core/metrics/declared.py` lists where; a test keeps this "
           "file equal to them).", "",
           "Every figure has a **scope** -- what it covers -- and a **method** -- how it was "
           "obtained; reports show them beside the figures that are not the job's own, "
           "exact ones.", "", "| scope | means |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in SCOPES.items()]
    out += ["", "| method | means |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in METHODS.items()]
    out += ["", "## Per sample", "",
            "One sample per job per host per interval. Counters are cumulative from the job's "
            "start; gauges are the value at the sample.", "",
            "| field | unit | kind | scope | method | range | meaning |",
            "|---|---|---|---|---|---|---|"]
    out += [f"| `{n}` | {u} | {k} | {_how(n)} | {r} | {m} |" for n, u, r, k, m in SAMPLE_FIELDS]
    out += ["", "Every sample also carries `time` (ns since the epoch), `elapsed_seconds` "
            "(s since the job started) and `method` (the probe that took it).", "",
            "## Per job (summary, written at the end)", "",
            "| field | unit | scope | method | range | meaning |", "|---|---|---|---|---|---|"]
    out += [f"| `{n}` | {u} | {_how(n)} | {r or ''} | {_meaning(n, m)} |"
            for n, u, r, m in SUMMARY_FIELDS]
    out += ["", "## Per-process breakdown (every `[procs] every_seconds`)", "",
            "| field | unit | kind | scope | method | range | meaning |",
            "|---|---|---|---|---|---|---|"]
    out += [f"| `{n}` | {u} | {k} | {_how(n)} | {r or ''} | {m} |"
            for n, u, r, k, m in PROCS_FIELDS]
    out += ["", "Each group in `procs_top`:", "", "| key | unit | meaning |", "|---|---|---|"]
    out += [f"| `{n}` | {u} | {m} |" for n, u, m in PROCS_TOP_KEYS]
    out += ["", "## How exact procs_max is", "", PROCS_MAX_METHOD]
    out += ["", "## Valid ranges", "", RANGES_TEXT, "", "| range | lowest | highest, by default "
            "| reckoned as |", "|---|---|---|---|"]
    out += [f"| {k} | {_num(lo)} | {_num(hi)} | {RANGE_MEANS[k]} |"
            for k, (lo, hi) in kinds(DEFAULTS).items()]
    return "\n".join(out) + "\n"


def _num(x):
    return f"{x:.4g}" if isinstance(x, float) and x != int(x) or abs(x) >= 1e6 else str(int(x))


RANGES_TEXT = """\
Every figure declares its range (the `range` column above): what one run on one node can
physically show, reckoned from the site's largest node (`[limits]` in the site file:
`node_cores`, `node_memory_bytes`, `node_watts`, `node_gpus`) and the longest run it
allows (`shipper.max_job_days`, the *wall* below). Every range is finite (no NaN, no
infinity) and, but for `signed` and `code`, non-negative. A figure outside its range is
never part of a figure, a total or a decision: the shipper sets the spool line that holds
it aside (counted as `out_of_range` against the user who wrote it: docs/security.md), and
every reader -- `jobmon query`, `list`, `report`, `rollup`, `pilot`, `act`, the read
service -- leaves that figure out of the record it read (the rest of the record stays),
from InfluxDB and the embedded store alike. The dashboards' queries leave such points out
where InfluxQL can (docs/grafana.md)."""
RANGE_MEANS = {
    "wall": "max_job_days in seconds",
    "cpu": "node_cores x wall",
    "task_seconds": "4,194,304 threads (the kernel's largest pid_max) x wall",
    "cores": "node_cores",
    "gpus": "node_gpus",
    "memory": "node_memory_bytes",
    "bytes": "2^63 - 1 (InfluxDB's integer)",
    "count": "2^53 (exact as a float)",
    "flag": "0 or 1",
    "percent": "100",
    "share": "100 x node_cores (every core's time)",
    "ratio": "2^53",
    "joules": "node_watts x wall",
    "watts": "node_watts",
    "grams": "node_watts x wall at 2,000 gCO2e/kWh",
    "intensity": "2,000 gCO2e/kWh",
    "core_hours": "node_cores x wall in hours",
    "unit_hours": "the larger of node_cores and node_memory_bytes / 2 GiB, x wall in hours",
    "gpu_hours": "node_gpus x wall in hours",
    "epoch": "2^33 s since the epoch (the year 2242)",
    "status": "255",
    "pid": "4,194,304",
    "code": "an int32 (from -2^31)",
    "signed": "2^63 either way",
}
