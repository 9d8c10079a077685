"""One job run's efficiency and canonical-unit figures, for reports over many jobs.

The sampler writes these figures into the end-of-job summary (jobmon.summary.efficiency; docs/
metrics.md); summaries written before it did lack them. efficiency_of() takes every figure
the summary holds as it is and computes the missing ones the way the sampler does, from the
summary's totals and the job's tags (the scheduler's requests and allocations). A figure
that cannot be known stays None, never 0: a plain `jobmon run` without request tags has no
allocation, so no efficiency. The suspect counters (cpu_idle_samples, mem_rising,
gpu_idle_samples, mem_growth_bytes_per_hour) need the samples: only a stored summary has
them. The outcome of a summary without one comes from canonical.classify (exit status and
signal: a SIGSEGV is the user's, a SIGKILL from outside of unknown cause).

Read side, standard library only.
"""
from ..summary import efficiency
from . import canonical

ALLOCATION = ("cores_requested", "cores_allocated", "mem_requested_bytes",
              "mem_allocated_bytes", "gpus_requested", "gpus_allocated")
# only the sampler can count these (they need the samples)
SAMPLED = ("cpu_idle_samples", "mem_growth_bytes_per_hour", "mem_rising", "gpu_idle_samples")
# every field efficiency_of gives
STORED = ALLOCATION + (
    "mem_sizing_peak_bytes", "mem_sizing_basis", "cpu_efficiency_percent",
    "mem_efficiency_percent", "canonical_units", "used_core_hours", "provisioned_core_hours",
    "idle_core_hours", "idle_canonical_core_hours", "idle_limited_by", "gpu_hours",
    "idle_gpu_hours", "outcome", "outcome_reason") + SAMPLED
# the figures that come from the memory peak: an attach-mode sampler's summary written
# before it chose the kernel's exact peak took them from its sampled one, so they are
# computed anew
FROM_PEAK = ("mem_sizing_peak_bytes", "mem_sizing_basis", "mem_efficiency_percent",
             "idle_canonical_core_hours", "idle_limited_by")
# the tags jobmon.summary.efficiency.allocation reads
_ALLOCATION_TAGS = ("RequestCpus", "request_cpus", "CpusProvisioned", "alloc_cpus",
                    "RequestMemory", "request_memory", "MemoryProvisioned", "alloc_mem_bytes",
                    "RequestGPUs", "request_gpus", "GPUsProvisioned", "alloc_gpus")
_allocations = {}
# the summary fields efficiency_of, the aggregate and the right-sizing read, and those the
# reconciliation of a run's outcome reads (jobmon.report.reconcile)
INPUTS = ("start_time", "end_time", "exit_code", "signal", "wall_seconds", "cpu_user_seconds",
          "cpu_system_seconds", "rss_peak_bytes", "mem_peak_bytes", "gpu_count",
          "gpu_util_avg_percent", "samples", "reconciled", "scheduler_state", "outcome_cause",
          "cut_short", "energy_joules", "co2e_grams", "energy_error_joules", "co2e_error_grams",
          "ownership", "scheduler_user") + STORED


def figures_of(record):
    """efficiency_of a store's record (its summary and tags), computed once and kept in
    the record ("figures") for the aggregate and the right-sizing both."""
    f = record.get("figures")
    if f is None:
        s = record.get("summary")
        f = record["figures"] = efficiency_of(s, record.get("tags") or (s or {}).get("tags"))
    return f


def allocation(summary, tags):
    """What the job asked for and was given: the stored figures, else from its tags
    (the job ad's Request* and *Provisioned, `--tag request_cpus=N request_memory=4GiB
    request_gpus=N`); GPUs, else the GPUs it could see (gpu_count)."""
    s = summary or {}
    if all(s.get(k) is not None for k in ALLOCATION):
        return {k: s[k] for k in ALLOCATION}
    t = tags or {}
    key = (s.get("gpu_count"),) + tuple(t.get(n) for n in _ALLOCATION_TAGS)
    computed = _allocations.get(key)
    if computed is None:   # the tasks of an array share their requests: computed once
        if len(_allocations) > 4096:
            _allocations.clear()
        computed = _allocations[key] = efficiency.allocation(t, gpu_count=s.get("gpu_count"))
    return {k: s[k] if s.get(k) is not None else computed[k] for k in ALLOCATION}


def efficiency_of(summary, tags=None, memory_per_unit=canonical.CANONICAL_MEMORY_BYTES):
    """The summary's efficiency, canonical-unit, outcome and suspect fields (docs/
    metrics.md): the stored ones where the summary has them, else computed. {} for a job
    still running (no summary)."""
    s = summary or {}
    if not s:
        return {}
    tags = tags if tags is not None else s.get("tags")
    peak_from_before = False
    basis = s.get("mem_sizing_basis")
    if basis in efficiency.LEGACY_BASIS:   # the same figure, under its earlier name
        s = dict(s, mem_sizing_basis=efficiency.LEGACY_BASIS[basis])
    elif basis is None:   # written before the summary said
        basis = efficiency.sizing_peak(s, tags or {})[1]
        s = dict(s, mem_sizing_basis=basis)
        peak_from_before = basis not in (efficiency.RESIDENT, None)
    alloc = allocation(s, tags)
    # what the sampler wrote, unless it wrote that it did not know the job's cores and its
    # tags or the scheduler's record (filled in by the caller) do: a job given its node
    unknown = alloc.get("cores_allocated") and "provisioned_core_hours" in s \
        and s["provisioned_core_hours"] is None
    if s.get("outcome") is not None and not peak_from_before and not unknown:
        return {k: s.get(k) for k in STORED}   # written by the sampler: absent is unknown
    out = efficiency.figures(s, alloc, memory_per_unit)
    for name, value in s.items():
        if name in out and value is not None and not (peak_from_before and name in FROM_PEAK):
            out[name] = value   # what the sampler wrote wins
    if s.get("outcome") is None:
        c = canonical.classify(canonical.run_end(s))
        out["outcome"], out["outcome_reason"] = c.outcome, c.reason
    for name in SAMPLED:
        out[name] = s.get(name)
    return out
