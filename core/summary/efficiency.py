"""What a job was given, what it used of it, and the OSG canonical units of the difference.

Written into every job's end-of-job summary (so that reports and Grafana aggregate without
recomputing) and recomputed by the report for jobs whose summary lacks them. Standard
library only, no imports beyond os and signal: it runs inside the job at its end.

Canonical units (OSG, "Accounting of provisioned resources on OSG pool"): 1 CPU core +
2 GB RAM, or 1 GPU. Idle CPU resources count only in whole units: 3 idle cores + 3 GB is
1 unit (memory-limited), 3 cores + 1 GB is 0, 2 cores + 6 GB is 2 (core-limited). "GB" is
read as GiB (the schedulers' MB are MiB; a 2048 MB-per-core slot is 1 unit per core).
"""
import os

GIB = 1 << 30
MIB = 1 << 20
CANONICAL_MEMORY_BYTES = 2 * GIB
_SLACK = 1e-9   # so that 8 - 2.2 - 2.8 idle cores still make 3 whole cores
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": MIB, "mb": MIB,
          "mib": MIB, "g": GIB, "gb": GIB, "gib": GIB, "t": 1 << 40, "tb": 1 << 40,
          "tib": 1 << 40}
# a cgroup memory limit this large is "no limit" (v1 writes PAGE_COUNTER_MAX pages)
_UNLIMITED = 1 << 60


def _whole(x):
    return x if isinstance(x, int) else int(x + _SLACK)


def whole_units(cores, memory_bytes, memory_per_unit=CANONICAL_MEMORY_BYTES):
    """Whole canonical CPU units (int) in `cores` cores with `memory_bytes` bytes: each unit
    takes 1 core and memory_per_unit bytes. memory_bytes None: the cores alone decide."""
    if memory_bytes is None:
        return _whole(cores)
    return min(_whole(cores), _memory_units(memory_bytes, memory_per_unit))


def _memory_units(memory_bytes, memory_per_unit):
    if isinstance(memory_bytes, int) and isinstance(memory_per_unit, int):
        return memory_bytes // memory_per_unit   # exact: one byte short is one unit less
    return _whole(memory_bytes / memory_per_unit)


# a canonical unit of which less than this share was used is idle: 0.01 of a core (the bar
# of an idle sample) and 1 % of its memory -- a job that held 2 cores and used 0.0001 of
# one left 2 units idle, not 1 (1.9999 rounded down)
IDLE_UNIT_SLACK = 0.01


def idle_units(idle_cores, idle_memory, cores, memory, memory_per_unit=CANONICAL_MEMORY_BYTES):
    """(whole idle canonical units, which of cores or memory limits them) of a job that
    held `cores` and `memory` bytes (None: not known) and left `idle_cores` and
    `idle_memory` of them unused: each counted idle within IDLE_UNIT_SLACK of a unit, and
    never more units than it held."""
    c = idle_cores + IDLE_UNIT_SLACK
    m = None if idle_memory is None else idle_memory + IDLE_UNIT_SLACK * memory_per_unit
    held = whole_units(cores, memory, memory_per_unit)
    return min(whole_units(c, m, memory_per_unit), held), limited_by(c, m, memory_per_unit)


def limited_by(cores, memory_bytes, memory_per_unit=CANONICAL_MEMORY_BYTES):
    """Which of the two caps whole_units(): "cores", "memory" or "both" (equal)."""
    if memory_bytes is None:
        return "cores"
    by_cores, by_memory = _whole(cores), _memory_units(memory_bytes, memory_per_unit)
    return "both" if by_cores == by_memory else "cores" if by_cores < by_memory else "memory"


# --- what the job was given ---------------------------------------------------------------

def number(v):
    """A float from a tag value; None for absent or unevaluated text (a job ad's expression)."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if x == x and abs(x) != float("inf") and x >= 0 else None


def size_bytes(text):
    """Bytes from "4GiB", "4096MB", "2.5G", "1073741824" (a --tag request_memory=...)."""
    t = str(text or "").strip().lower()
    i = len(t)
    while i and not (t[i - 1].isdigit() or t[i - 1] == "."):
        i -= 1
    x, unit = number(t[:i]), t[i:].strip()
    return int(x * _UNITS[unit]) if x is not None and unit in _UNITS else None


def _first(*values):
    return next((v for v in values if v is not None), None)


def allocation(tags, limits=None, gpu_count=None):
    """Requested and allocated cores, memory (bytes) and GPUs, each None when not known.
    Requested: the job ad's Request* (memory in MiB) or the tags request_cpus, request_memory
    (with a unit), request_gpus. Allocated: what the scheduler says it gave -- the job ad's
    *Provisioned, or the allocation on the node (alloc_cpus, alloc_mem_bytes, alloc_gpus:
    a plugin's tags, or a pilot's) -- else what the kernel enforces (`limits`: the
    cgroup's CPU quota or cpuset, its memory limit), else the request; GPUs: else the GPUs
    the job could see. The scheduler's word comes first: a job given every core of its
    node has a cpuset that says nothing (the whole node)."""
    t, lim = tags or {}, limits or {}
    mib = lambda v: None if number(v) is None else int(number(v) * MIB)   # noqa: E731
    whole = lambda v: None if number(v) is None else int(number(v))   # noqa: E731
    cores_req = _first(number(t.get("RequestCpus")), number(t.get("request_cpus")))
    mem_req = _first(mib(t.get("RequestMemory")), size_bytes(t.get("request_memory")))
    gpus_req = _first(number(t.get("RequestGPUs")), number(t.get("request_gpus")))
    return {
        "cores_requested": cores_req,
        "cores_allocated": _first(number(t.get("CpusProvisioned")), number(t.get("alloc_cpus")),
                                  lim.get("cores"), cores_req),
        "mem_requested_bytes": mem_req,
        "mem_allocated_bytes": _first(mib(t.get("MemoryProvisioned")),
                                      whole(t.get("alloc_mem_bytes")),
                                      lim.get("memory_bytes"), mem_req),
        "gpus_requested": None if gpus_req is None else int(gpus_req),
        "gpus_allocated": _first(*(None if x is None else int(x) for x in (
            number(t.get("GPUsProvisioned")), number(t.get("alloc_gpus")), gpu_count or None,
            gpus_req))),
    }


def cgroup_memory_limit(text):
    """memory.max (v2: "max" or bytes) or memory.limit_in_bytes (v1) -> bytes or None."""
    t = text.strip()
    return int(t) if t.isdigit() and int(t) < _UNLIMITED else None


def cgroup_cpu_quota(quota, period):
    """Cores from a CPU quota: v2 cpu.max "QUOTA PERIOD" ("max" = none), v1 cfs_quota_us
    and cfs_period_us (-1 = none)."""
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return round(q / p, 3) if q > 0 and p > 0 else None


def affinity_cores(pids):
    """How many CPUs the job's processes may run on, when fewer than the node has (a cpuset
    or taskset: its allocation); else None."""
    for pid in pids[:1]:
        try:
            n = len(os.sched_getaffinity(pid))
        except OSError:
            return None
        return float(n) if n < (os.cpu_count() or n + 1) else None
    return None


# --- what it used of it ------------------------------------------------------------------

def signal_name(number):
    """SIGKILL for 9; "signal N" for a number without a name."""
    import signal    # only here: its enum would cost every job's start ~3 ms
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_outcome(exit_code, signal):
    """(outcome, reason) from a run's exit status alone: exit 0 is goodput, anything else
    badput; None outcome without a status (still running, or lost)."""
    if signal:
        return "badput", f"killed by {signal_name(signal)}"
    if exit_code is None:
        return None, "no exit status recorded"
    if exit_code == 0:
        return "goodput", "completed (exit code 0)"
    return "badput", f"failed (exit code {exit_code})"


# where the memory peak that efficiency, advice and right-sizing use comes from
RESIDENT, KERNEL, SAMPLED = "resident", "kernel", "sampled"
# how reports name each
BASIS_TEXT = {RESIDENT: "resident peak", KERNEL: "kernel peak (page cache incl.)",
              SAMPLED: "sampled resident peak (may miss spikes)"}
# the name summaries written before the figure was named for what it is gave RESIDENT
LEGACY_BASIS = {"footprint": RESIDENT}


def sizing_basis(summary, reaped=True):
    """Which peak sizes the job (RESIDENT, KERNEL or SAMPLED): never a figure that can miss
    a spike when the kernel keeps an exact one. reaped: jobmon reaped the job's processes,
    so rss_peak_bytes holds each one's kernel high-water mark beside the samples (jobmon
    run, a scheduler's job wrapper); a sampler beside a job it did not start (attach mode)
    has samples only, and then the cgroup's own high-water mark, mem_peak_bytes, is the
    exact one -- it counts page cache too, which errs on the safe side."""
    if reaped and summary.get("rss_peak_bytes"):
        return RESIDENT
    if summary.get("mem_peak_bytes"):
        return KERNEL
    return SAMPLED if summary.get("rss_peak_bytes") else None


def sizing_peak(summary, tags=None):
    """(bytes, basis) of the memory peak that sizes the job: the summary's own choice
    (mem_sizing_basis), else for a summary written before it made one, the choice it would
    have made: an attach-mode sampler's record (tags `measured` and `job_id`) was sampled only."""
    basis = summary.get("mem_sizing_basis")
    basis = LEGACY_BASIS.get(basis, basis)
    if basis not in BASIS_TEXT:
        t = tags if tags is not None else summary.get("tags") or {}
        basis = sizing_basis(summary, reaped=not (t.get("measured") and t.get("job_id")))
    if basis is None:
        return None, None
    return summary.get("mem_peak_bytes" if basis == KERNEL else "rss_peak_bytes"), basis


def _round(x, n=4):
    return None if x is None else round(x, n)


def figures(summary, alloc, memory_per_unit=CANONICAL_MEMORY_BYTES):
    """The allocation, efficiency, canonical-unit and outcome fields of a job's summary
    (docs/metrics.md), from its totals and allocation(); a figure that needs something not
    known is None. Idle = allocated - used, never below 0, over the whole run."""
    out = dict(alloc)
    wall = summary.get("wall_seconds") or 0.0
    hours = wall / 3600.0
    cpu = (summary.get("cpu_user_seconds") or 0) + (summary.get("cpu_system_seconds") or 0)
    cores, mem = alloc.get("cores_allocated"), alloc.get("mem_allocated_bytes")
    peak, basis = sizing_peak(summary)
    out["mem_sizing_peak_bytes"], out["mem_sizing_basis"] = peak, basis
    used_cores = cpu / wall if wall > 0 else 0.0
    out["cpu_efficiency_percent"] = _round(100.0 * used_cores / cores, 2) \
        if cores and wall > 0 else None
    out["mem_efficiency_percent"] = _round(100.0 * peak / mem, 2) if mem and peak else None
    out["canonical_units"] = _round(max(cores or 0, (mem or 0) / memory_per_unit)) \
        if cores or mem else None
    out["used_core_hours"] = _round(cpu / 3600.0, 6)
    if cores:
        idle_cores = max(cores - used_cores, 0.0)
        idle_mem = None if mem is None or peak is None else max(mem - peak, 0)
        out["provisioned_core_hours"] = _round(cores * hours, 6)
        out["idle_core_hours"] = _round(idle_cores * hours, 6)
        units, out["idle_limited_by"] = idle_units(idle_cores, idle_mem, cores, mem,
                                                   memory_per_unit)
        out["idle_canonical_core_hours"] = _round(units * hours, 6)
    else:
        out.update(provisioned_core_hours=None, idle_core_hours=None,
                   idle_canonical_core_hours=None, idle_limited_by=None)
    gpus, util = alloc.get("gpus_allocated"), summary.get("gpu_util_avg_percent")
    out["gpu_hours"] = _round(gpus * hours, 6) if gpus else None
    out["idle_gpu_hours"] = _round(gpus * hours * (1 - min(util, 100.0) / 100.0), 6) \
        if gpus and util is not None else None
    out["outcome"], out["outcome_reason"] = exit_outcome(summary.get("exit_code"),
                                                          summary.get("signal"))
    return out


# what the job was given and what it used of it (docs/reports.md), and its outcome, declared
# (jobmon.metrics.declared)
FIGURES = (
    {"name": "mem_sizing_peak_bytes", "unit": "bytes", "range": "memory", "method": "derived",
     "meaning": "the memory peak that memory efficiency, advice and right-sizing use: "
                "rss_peak_bytes where it catches spikes, else mem_peak_bytes (never a figure that "
                "can miss a spike where the kernel keeps an exact one), else the sampled "
                "rss_peak_bytes"},
    {"name": "mem_sizing_basis", "unit": "text", "range": None, "method": "derived",
     "meaning": "which: resident (rss_peak_bytes, jobmon reaped the job; written \"footprint\" "
                "before), kernel (mem_peak_bytes: exact, page cache included, so it errs on the "
                "safe side; where jobmon watches from beside the job), or sampled (rss_peak_bytes "
                "from samples only: nothing exact was there, a spike between samples may be "
                "missed)"},
    {"name": "cores_requested", "unit": "cores", "range": "ratio", "method": "recorded",
     "meaning": "cores the job asked for (the scheduler's request; `--tag request_cpus=N`)"},
    {"name": "cores_allocated", "unit": "cores", "range": "cores", "method": "recorded",
     "meaning": "cores the job was given: the scheduler's allocation on the node, else its "
                "cgroup's CPU quota or cpuset, else the request"},
    {"name": "mem_requested_bytes", "unit": "bytes", "range": "bytes", "method": "recorded",
     "meaning": "memory the job asked for (the scheduler's request; `--tag request_memory=4GiB`)"},
    {"name": "mem_allocated_bytes", "unit": "bytes", "range": "bytes", "method": "recorded",
     "meaning": "memory the job was given: the scheduler's allocation, else its cgroup's memory "
                "limit, else the request"},
    {"name": "gpus_requested", "unit": "count", "range": "count", "method": "recorded",
     "meaning": "GPUs the job asked for (the scheduler's request; `--tag request_gpus=N`)"},
    {"name": "gpus_allocated", "unit": "count", "range": "gpus", "method": "recorded",
     "meaning": "GPUs the job was given: the scheduler's allocation, else the GPUs it could see, "
                "else the request"},
    {"name": "cpu_efficiency_percent", "unit": "%", "range": "ratio", "method": "derived",
     "meaning": "(user + system CPU) / (cores_allocated x wall) x 100"},
    {"name": "mem_efficiency_percent", "unit": "%", "range": "ratio", "method": "derived",
     "meaning": "mem_sizing_peak_bytes / mem_allocated_bytes x 100"},
    {"name": "canonical_units", "unit": "units", "range": "ratio", "method": "derived",
     "meaning": "canonical CPU units the job held: the larger of cores_allocated and "
                "mem_allocated_bytes / 2 GiB (OSG: 1 core + 2 GB)"},
    {"name": "provisioned_core_hours", "unit": "core-h", "range": "core_hours",
     "method": "derived", "meaning": "cores_allocated x wall hours"},
    {"name": "used_core_hours", "unit": "core-h", "range": "core_hours", "method": "derived",
     "meaning": "(user + system CPU) / 3600"},
    {"name": "idle_core_hours", "unit": "core-h", "range": "core_hours", "method": "derived",
     "meaning": "(cores_allocated - cores used on average) x wall hours"},
    {"name": "idle_canonical_core_hours", "unit": "core-h", "range": "unit_hours",
     "method": "derived",
     "meaning": "idle cores and idle memory (allocation - mem_sizing_peak_bytes) in whole "
                "canonical units x wall hours (OSG: 3 cores + 3 GB idle = 1, 3 cores + 1 GB = 0, "
                "2 cores + 6 GB = 2)"},
    {"name": "idle_limited_by", "unit": "text", "range": None, "method": "derived",
     "meaning": "which of cores or memory limited the idle canonical units (cores, memory or "
                "both)"},
    {"name": "gpu_hours", "unit": "GPU-h", "range": "gpu_hours", "method": "recorded",
     "meaning": "gpus_allocated x wall hours"},
    {"name": "idle_gpu_hours", "unit": "GPU-h", "range": "gpu_hours", "scope": "device",
     "method": "derived", "meaning": "gpu_hours x (1 - gpu_util_avg_percent / 100)"},
    {"name": "outcome", "unit": "text", "range": None, "method": "derived",
     "meaning": "goodput (exit code 0) or badput (another exit code, a signal, or the scheduler "
                "ended it); at the job's end from its exit status, then the scheduler's once "
                "reconciled (cancelled, time limit, out of memory, held, removed, evicted, "
                "preempted, node failure: docs/accounting.md)"},
    {"name": "outcome_reason", "unit": "text", "range": None, "method": "derived",
     "meaning": "why: completed (exit code 0), failed (exit code N), killed by SIGNAL; "
                "reconciled: the scheduler's end, e.g. cancelled: by alice"},
    {"name": "outcome_cause", "unit": "text", "range": None, "method": "derived",
     "meaning": "whose doing a badput run was (reconciled): user (its own failure, a limit it "
                "hit, its owner's removal), site (the node, the pilot, a configuration), "
                "preemption, or unknown; none for goodput"},
)
