"""docs/metrics.md, generated from the metric table (core/metrics/), and the scope and
method of every figure: what a figure covers (the job's own processes, the job's whole
devices, the node) and how it was obtained (exactly, apportioned from a larger scope,
estimated, derived from other figures, or recorded as given). Reports show these beside
the figures whose scope is not the job's own or whose method is not exact, so that nobody
reads a node's or a device's figure as a job's. A test keeps every field in this table.
"""
from .metrics import PROCS_FIELDS, PROCS_TOP_KEYS, SAMPLE_FIELDS, SUMMARY_FIELDS
from .metrics.declared import FIGURES as DECLARED_FIGURES, SAMPLE_ROWS, scope_method
from .metrics.ranges import DEFAULTS, kinds

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
# (scope, method): fields; a note where a mode changes the method (a declared metric's are
# its declaration's: jobmon.metrics.declared)
_TABLE = {
    ("job", "exact"): """cpu_user_seconds cpu_system_seconds mem_resident_bytes mem_cache_bytes
        mem_swap_bytes mem_peak_bytes read_bytes write_bytes rchar_bytes wchar_bytes
        cpu_pressure_seconds mem_pressure_seconds
        mem_pressure_full_seconds io_pressure_seconds io_pressure_full_seconds
        mem_major_faults oom_kills procs threads
        oom_time oom_time_within_seconds oom_pid oom_command oom_victim_rss_bytes
        oom_charge_bytes oom_limit_bytes oom_limit_hits oom_anon_bytes oom_cache_bytes gpus_in_use
        gpu_count gpu_mem_bytes net_rx_bytes net_tx_bytes net_rx_packets net_tx_packets
        start_time end_time exit_code signal wall_seconds leftover_procs procs_killed_at_end
        gpu_samples_missing gpu_shared_samples energy_missing_seconds samples
        monitor_cpu_seconds monitor_read_seconds monitor_errors cut_short reconciled
        cpu_idle_samples elapsed_seconds lost_points sample_gaps sample_gap_seconds
        sample_gap_longest_seconds failed_reads""",
    ("job", "apportioned"): """cpu_energy_joules dram_energy_joules energy_joules
        power_watts""",
    ("job", "estimated"): """network_fs mem_resident_peak_bytes cpu_wait_seconds rss_peak_bytes
        swap_peak_bytes procs_max threads_max gpu_mem_peak_bytes co2e_grams
        missing_seconds_max mem_growth_bytes_per_hour mem_rising procs_top
        cpu_energy_error_joules dram_energy_error_joules energy_error_joules
        co2e_error_grams""",
    ("job", "derived"): """cpu_cores cpu_cores_avg mem_sizing_peak_bytes mem_sizing_basis
        cpu_pressure_percent cpu_wait_percent mem_pressure_percent io_pressure_percent
        cpu_idle_seconds gpu_unused_seconds cpu_idle_longest_seconds
        gpu_unused_longest_seconds idle_allocation
        cpu_efficiency_percent mem_efficiency_percent canonical_units provisioned_core_hours
        used_core_hours idle_core_hours idle_canonical_core_hours idle_limited_by outcome
        outcome_reason outcome_cause window_seconds advice completeness_percent
        completeness_reasons""",
    ("job", "recorded"): """job user method cores_requested cores_allocated
        mem_requested_bytes mem_allocated_bytes gpus_requested gpus_allocated gpu_hours
        interval_seconds scheduler_state scheduler_code scheduler_subcode cancelled_by
        scheduler_user ownership pressure_source oom_source energy_parts energy_method net_source
        mem_limit_bytes scheduler_memory_bytes scheduler_cpu_seconds batch""",
    ("device", "exact"): "gpu_util_percent gpu_energy_joules gpu_idle_samples",
    ("device", "derived"): "gpu_util_avg_percent idle_gpu_hours gpu_energy_error_joules",
    ("node", "recorded"): "host psi energy_share carbon_intensity",
}
NOTES = {
    "mem_resident_bytes": "procfs mode: estimated (PSS within a CPU budget, carried forward)",
    "mem_cache_bytes": "procfs mode: the file pages the job maps",
    "read_bytes": "local block devices only: network file systems are not in it "
                  "(network_fs names those the job used)",
    "write_bytes": "local block devices only: network file systems are not in it "
                   "(network_fs names those the job used); procfs mode: written less "
                   "cancelled, never going back (a write cancelled after a sample counted "
                   "it stays counted)",
    "network_fs": "looked for every 60 s, in up to 64 processes' working directories and "
                  "open files, 256 links in all",
    "procs_max": "exact where the pids controller keeps a high-water mark",
    "gpu_energy_joules": "the job's own where no other process used its GPUs "
                         "(gpu_shared_samples 0); none for MIG slices",
    "gpu_util_percent": "the job's own where no other process used its GPUs",
    "energy_joules": "its GPU part is the devices' counter (exact where not shared)",
    "power_watts": "the rate of energy_joules",
    "co2e_grams": "energy_joules x the site's carbon intensity",
    "cpu_energy_joules": "energy_share says how: busy or capacity",
    "dram_energy_joules": "by CPU time, not by memory traffic",
    **{f"oom_{k}": "from the kernel's log; oom_source samples: " + how for k, how in (
        ("time", "the sample that counted the kill"),
        ("time_within_seconds", "the time since the sample before"),
        ("pid", "none (jobmon run: its command, where SIGKILL ended it)"),
        ("command", "none (jobmon run: its command, where SIGKILL ended it)"),
        ("victim_rss_bytes", "none"),
        ("charge_bytes", "the cgroup's high-water mark at the sample that counted the kill"),
        ("limit_bytes", "the limit the probe read"),
        ("limit_hits", "the cgroup's count at the sample that counted the kill"),
        ("anon_bytes", "none, but the sample before where the cgroup keeps no high-water "
                       "mark"),
        ("cache_bytes", "as oom_anon_bytes"))},
}
FIGURES = {n: sm for sm, names in _TABLE.items() for n in names.split()}
FIGURES.update({n: scope_method(n)[:2] for n in list(SAMPLE_ROWS) + list(DECLARED_FIGURES)})
NOTES.update({n: scope_method(n)[2] for n in SAMPLE_ROWS})


def figure(name):
    """{"scope", "method"[, "note"]} of a field, or None for a field not in the table."""
    sm = FIGURES.get(name)
    if sm is None:
        return None
    out = {"scope": sm[0], "method": sm[1]}
    if NOTES.get(name):
        out["note"] = NOTES[name]
    return out


def _how(name):
    f = figure(name) or {"scope": "?", "method": "?"}
    return f"{f['scope']} | {f['method']}" + (f"; {f['note']}" if "note" in f else "")


PROCS_MAX_METHOD = """\
A process exists from its fork until its parent reaps it; a zombie still counts, as the
kernel's pids controller counts it. With a job cgroup whose pids controller keeps a
high-water mark (`pids.peak`), that mark is the peak of the job's tasks, exact: `procs_max`
is it where no sample saw a process with more than one thread (else the samples', a lower
bound). A cgroup without that mark gives the samples' largest count, a lower bound.

In procfs mode (no cgroup: an unprivileged `jobmon run`, `--cgroup=none`, an HTCondor job on a
node whose starter has no cgroup) no interface open to an unprivileged process reports a
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
    out += [f"| `{n}` | {u} | {_how(n)} | {r or ''} | {m} |" for n, u, r, m in SUMMARY_FIELDS]
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
