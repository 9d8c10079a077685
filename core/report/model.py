"""What a job report says: totals, peaks, the job's runs and hosts, from stored records.

Renderers (jobmon.render.*) only lay this out; they compute nothing.
"""
import time

from .. import schedulers
from ..stores import fingerprint
from ..summary import completeness, from_samples
from ..summary.advice import advise
from ..metrics.summary import SAMPLE_METRICS, SUMMARY_FIGURES
from ..metrics.declared import REPORT_GROUPS
from ..summary.oom import story
from ..config.report import defaults
from ..summary.efficiency import BASIS_TEXT, RESIDENT
from . import canonical, node_figures, nodes, verdict
from .job_efficiency import efficiency_of
from .scheduler import ending

# a multi-node run: counters add up, peaks and shares of a node's run are the largest node's
# (each figure's declared combine: jobmon.metrics.declared)
ADDITIVE = tuple(f.name for f in SUMMARY_FIGURES if f.combine == "sum")
LARGEST = tuple(f.name for f in SUMMARY_FIGURES if f.combine == "max")


def _wall(s, wall, cpu):   # 0 where the run has no figure yet
    return ("wall time", wall, "s")


def _cores_used(s, wall, cpu):
    return ("CPU cores used (average)", round(cpu / wall, 3) if wall else None, "cores")


def _psi_off(s, wall, cpu):
    return ("PSI", "off on this node (boot option psi=1): no memory or storage stall figures"
            if s.get("psi") == "off" else None, "")


# the order of the totals: a summary field's declared row (jobmon.metrics.declared; its
# rate: (field, "rate")), a row made here, or a group (declared.REPORT_GROUPS), where the
# group's declared rows not named here go
TOTALS = (_wall, "cpu_user_seconds", "cpu_system_seconds", _cores_used,
          "cpu_pressure_percent", "cpu_wait_percent", "cpu",
          "mem_pressure_percent", "io_pressure_percent", _psi_off, "mem_major_faults", "memory",
          "read_bytes", "write_bytes", ("read_bytes", "rate"), ("write_bytes", "rate"),
          "network_fs", "rchar_bytes", "wchar_bytes", "io",
          "procs_max", "threads_max", "leftover_procs", "procs_killed_at_end", "processes",
          "gpu_count", "gpu_util_avg_percent", "gpu_mem_peak_bytes", "gpu",
          "samples", "missing_seconds_max", "lost_points", "run")
# the declared rows: the metrics' then the figures' own
REPORT_ROWS = tuple(r for m in SAMPLE_METRICS for r in m.report) + \
    tuple(r for f in SUMMARY_FIGURES for r in f.report)
ROWS = {(r["field"], r.get("how", "total")): r for r in REPORT_ROWS}
NAMED = {e if isinstance(e, tuple) else (e, "total") for e in TOTALS
         if not callable(e) and e not in REPORT_GROUPS}


def totals_rows(s, wall, cpu):
    """The report's totals, (label, value or None, unit), in the order of TOTALS."""
    out = []
    for e in TOTALS:
        if callable(e):
            out.append(e(s, wall, cpu))
        elif e in REPORT_GROUPS:
            out += [_row(r, s, wall) for r in REPORT_ROWS if r["group"] == e
                    and (r["field"], r.get("how", "total")) not in NAMED]
        else:
            out.append(_row(ROWS[e if isinstance(e, tuple) else (e, "total")], s, wall))
    return out


def _row(r, s, wall):
    """A declared row's (label, value, unit): the field, or its rate over the wall time; a
    row of 0 is left out unless it says zero is shown."""
    v = s.get(r["field"])
    if r.get("how") == "rate":
        v = v / wall if wall and v is not None else None
    return (r["label"], v if r.get("zero") == "shown" else v or None, r["unit"])


OUTCOME = ("outcome", "outcome_reason", "outcome_cause")
# how the run ended, as reconciled: a multi-node run's from the node that says most
ENDING = ("reconciled", "scheduler_state", "outcome", "outcome_reason", "outcome_cause",
          "scheduler_code", "scheduler_subcode", "cancelled_by", "scheduler_user")


def record_summary(info, samples, over=False):
    """(summary, state) of one record: "ended" (its end-of-job record, as reconciled);
    "cut short" (over -- the shipper marked it ended, or `over` says so -- but its
    end-of-job record never came: its samples' fold, marked so); "running" (what its
    samples say so far)."""
    s = info.get("summary") or {}
    lost = bool(s) and s.get("end_time") is None   # the shipper's mark: ended, no record
    if s and not lost:
        return s, "ended"
    if lost or over:
        return from_samples(info, samples, cut_short=True), "cut short"
    return from_samples(info, samples), "running"


# a run without an end-of-job record whose last sample is older than this many intervals
# (and than STALE_SECONDS) is over: its sampler would have written one
STALE_INTERVALS, STALE_SECONDS = 5, 120.0


def run_over(run, runs=(), samples_by_record=(), end=None, now=None):
    """Is this run over, whatever its records say? Yes when a later run of its job began,
    when the scheduler's record of it (`end`: Record.as_dict()) says it ended, or when its
    samples stopped coming."""
    if runs and run is not runs[-1] and any(r is run for r in runs):
        return True
    if end and canonical.classify(canonical.run_end(None, end)).outcome != canonical.UNKNOWN:
        return True
    now = time.time() if now is None else now
    for info, smp in zip(run.records, samples_by_record):
        interval = info.get("interval") or 10.0
        last = smp[-1]["time"] / 1e9 if smp else info.get("start_time") or now
        if now - last > max(STALE_INTERVALS * interval, STALE_SECONDS):
            return True
    return False


def status_text(s, state):
    if state == "running":
        return "running: figures up to its latest sample"
    if s.get("signal"):
        text = f"killed by signal {s['signal']}"
    elif s.get("exit_code") is not None:
        text = f"exit code {s['exit_code']}"
    else:
        text = "no exit status"
    if s.get("reconciled") and s.get("outcome") == canonical.BADPUT \
            and s.get("scheduler_state") not in (None, "", "none"):
        text = f"{s['outcome_reason']} ({text})"   # the scheduler's end of the run
    if s.get("cut_short"):
        most = s.get("missing_seconds_max")
        text += "; cut short: figures up to its last sample" + (
            f", at most {most:g} s missing" if most is not None else "")
    return text


def combine(summaries):
    """One job's totals over its nodes: counters add up, peaks are the largest node's."""
    if len(summaries) == 1:
        return dict(summaries[0])
    out = {}
    for k in ADDITIVE:
        vals = [s[k] for s in summaries if s.get(k) is not None]
        out[k] = sum(vals) if vals else None
    for k in LARGEST:
        vals = [s[k] for s in summaries if s.get(k) is not None]
        out[k] = max(vals) if vals else None
    if any(s.get("energy_joules") is not None and s.get("energy_error_joules") is None
           for s in summaries):       # a node's energy without a bound: the run has none
        out["energy_error_joules"] = out["co2e_error_grams"] = None
    for k in node_figures.TEXTS:
        out[k] = next((s[k] for s in summaries if s.get(k)), None)
    codes = [s for s in summaries if s.get("signal") or s.get("exit_code")]
    first = (codes or summaries)[0]
    out["exit_code"], out["signal"] = first.get("exit_code"), first.get("signal")
    decisive = next((s for s in summaries if s.get("outcome") == canonical.BADPUT), first)
    out.update({k: decisive.get(k) for k in ENDING if decisive.get(k) is not None})
    out["method"] = ",".join(sorted({s.get("method") or "?" for s in summaries}))
    bases = {s.get("mem_sizing_basis") for s in summaries}   # how the nodes were measured
    out["mem_sizing_basis"] = bases.pop() if len(bases) == 1 else None
    for k, least in (("pressure_source", "run-queue"), ("psi", "off")):   # on any node
        out[k] = least if least in {s.get(k) for s in summaries} else first.get(k)
    return out


def run_line(run, position, samples_by_record=None, over=False, end=None):
    """One row of a job's list of runs (earlier runs show what was lost to restarts).
    samples_by_record: the run's samples, for a run whose end-of-job record never came;
    end: the scheduler's record of the run."""
    samples_by_record = samples_by_record or [[] for _ in run.records]
    summaries, states = zip(*(record_summary(info, smp, over) for info, smp
                              in zip(run.records, samples_by_record)))
    s = combine(list(summaries))
    s.update(ending(s, end) or {})
    state = "ended" if all(x == "ended" for x in states) else \
        "running" if "running" in states else "cut short"
    return {"run": run.label or str(position), "start_time": run.start_time,
            "end_time": s.get("end_time"), "hosts": run.hosts, "status": status_text(s, state),
            "wall_seconds": s.get("wall_seconds"),
            "cpu_seconds": (s.get("cpu_user_seconds") or 0) + (s.get("cpu_system_seconds") or 0)
            if s else None}


def build(run, samples_by_record, runs=(), cfg=None, scheduler=None, others=None, now=None):
    """The report of one run of a job. samples_by_record: [samples] in the order of
    run.records (one record per node); runs: every run of the job, oldest first; cfg: the
    config's [report] section (advice thresholds); scheduler: what the scheduler recorded
    (report.scheduler.record_of), or None; others: {run label or position: samples by
    record} of the job's other runs that lack an end-of-job record."""
    over = run_over(run, runs, samples_by_record, (scheduler or {}).get("end"), now)
    per_host = [record_summary(info, smp, over) for info, smp
                in zip(run.records, samples_by_record)]
    s = combine([x[0] for x in per_host])
    states = {x[1] for x in per_host}
    state = "running" if "running" in states else "cut short" if "cut short" in states \
        else "ended"
    cpu = (s.get("cpu_user_seconds") or 0) + (s.get("cpu_system_seconds") or 0)
    wall = s.get("wall_seconds") or 0
    many = len(run.records) > 1
    first = run.records[0]
    labels = nodes.names(run.records)
    samples = [dict(x, host=label) if many else x
               for label, smp in zip(labels, samples_by_record) for x in smp]
    balance = nodes.balance([x[0] for x in per_host], labels) if many else {}
    s.update(balance)   # for the advice
    if many:
        samples.sort(key=lambda x: x["time"])
    eff = _efficiency(s, first.get("tags") or {}, scheduler, len(run.records))
    settled = ending(s, (scheduler or {}).get("end"))
    if settled:   # the scheduler's end of the run says more than the exit status jobmon saw
        s = dict(s, **settled)
        eff = dict(eff, **{k: settled[k] for k in OUTCOME}) if eff else eff
    totals = totals_rows(s, wall, cpu)
    header = {
        "job": run.job, "run": run.label, "host": ", ".join(run.hosts),
        "user": ", ".join(run.users), "scheduler": first.get("scheduler"),
        "method": s.get("method") or first.get("method"), "status": status_text(s, state),
        "start_time": run.start_time, "end_time": s.get("end_time"),
        "command": first.get("command"), **_tags(run.records),
    }
    s.update(completeness.fields(s, stored=len(samples)))
    advice = advise(dict(s, scheduler=first.get("scheduler"), **eff),
                    cfg or DEFAULT_CFG) if state != "running" else []
    return {"header": header, "verdict": verdict.build(s, eff, advice, header, state,
                                                      len(run.records)),
            "totals": [t for t in totals if t[1] is not None],
            "efficiency": [r for r in efficiency_rows(eff) if r[1] is not None],
            "memory": memory_rows(s, samples, eff, scheduler, many),
            "oom": story(s),
            "node": node_figures.rows(s, ended=state == "ended"),
            "advice": advice,
            "scheduler": scheduler,
            "summary": s if many or state != "ended" else first.get("summary"),
            "hosts": nodes.rows([x[0] for x in per_host], labels) if many else [],
            "balance": nodes.balance_rows(balance) if many else [],
            "runs": [run_line(r, i, samples_by_record if r is run else
                              (others or {}).get(r.label or str(i)),
                              over if r is run else r is not runs[-1],
                              ((scheduler or {}).get("runs") or {}).get(r.label or str(i)))
                     for i, r in enumerate(runs, 1)],
            "samples": samples, "running": state == "running"}


DEFAULT_CFG = defaults()


def _tags(records):
    """{"tags": the job's tags, "ran": the hashes of what it ran (jobmon.stores.fingerprint:
    no tag anyone gave)}; a tag its nodes' records give different values (node) lists them
    all, sorted, joined by ","."""
    out = {}
    for r in records:
        for k, v in (r.get("tags") or {}).items():
            out.setdefault(k, set()).add(str(v))
    tags = {k: ",".join(sorted(v)) for k, v in out.items()}
    return {"tags": {k: v for k, v in tags.items() if k not in fingerprint.KEYS},
            "ran": {k: v for k, v in tags.items() if k in fingerprint.KEYS}}


def _efficiency(s, tags, scheduler, nodes):
    """The run's efficiency figures; what the scheduler says it was given fills in what
    jobmon's summary does not know (a request only the scheduler's record has, a multi-node
    job's total)."""
    alloc = dict((scheduler or {}).get("allocation") or {})
    if nodes > 1 and s.get("wall_seconds") and alloc.get("cores_allocated"):
        # the job's total cores and GPUs against its nodes' summed CPU; not its memory,
        # which no one figure of the nodes' (each its own peak) is measured against
        from ..summary.efficiency import figures
        return figures(s, {k: v for k, v in alloc.items() if not k.startswith("mem_")})
    if nodes > 1 or not alloc:
        return efficiency_of(s, tags) if s.get("wall_seconds") else {}
    filled = dict(s)
    for k, v in alloc.items():
        if filled.get(k) is None:
            filled[k] = v
    return efficiency_of(filled, tags)


def efficiency_rows(e):
    return [
        ("cores requested", e.get("cores_requested"), "cores"),
        ("cores allocated", e.get("cores_allocated"), "cores"),
        ("CPU efficiency (CPU time / (cores x wall))", e.get("cpu_efficiency_percent"), "%"),
        (f"memory efficiency ({BASIS_TEXT.get(e.get('mem_sizing_basis'), 'peak')} / allocated)",
         e.get("mem_efficiency_percent"), "%"),
        ("GPUs allocated", e.get("gpus_allocated"), "count"),
        ("canonical units held (1 core + 2 GiB)", e.get("canonical_units"), "units"),
        ("core-hours allocated", e.get("provisioned_core_hours"), "core-h"),
        ("core-hours used", e.get("used_core_hours"), "core-h"),
        ("idle canonical core-hours", e.get("idle_canonical_core_hours"), "core-h"),
        ("GPU-hours", e.get("gpu_hours"), "GPU-h"),
        ("idle GPU-hours", e.get("idle_gpu_hours"), "GPU-h"),
        ("outcome", e.get("outcome") and f"{e['outcome']}: {e.get('outcome_reason')}", ""),
    ]


# what each memory figure is, how it is obtained, and why they differ; {resident} and
# {kernel}: what is read for them in the job's mode
RESIDENT_READ = {"cgroup-v1": "memory.stat total_rss + total_shmem",
                 "cgroup-v2": "memory.stat anon + shmem",
                 "procfs": "Pss_Anon + Pss_Shmem of each process, a page shared by "
                           "several counted once"}
KERNEL_PEAK = {"cgroup-v1": "memory.max_usage_in_bytes", "cgroup-v2": "memory.peak"}
MEANINGS = {
    "resident": "the larger of the job's resident memory at its samples (anon + shmem: "
                "{resident}) and each process's kernel high-water mark (VmHWM) as jobmon "
                "reaped it: catches a one-process spike between samples, but the mark also "
                "counts the program and library pages the process mapped, so this may "
                "exceed the figures below",
    "resident-sampled": "anonymous + shared memory of the job's processes ({resident}), "
                        "the largest sample: a spike between samples is missed",
    "charged": "resident + the page cache charged to the job's cgroup (memory.stat), the "
               "largest sample: what the kernel charged the job; cache is reclaimable, so "
               "it may exceed the request without harm",
    "mapped": "resident + the file pages the job's processes map (Pss_File: program, "
              "libraries, mapped files), the largest sample; no cgroup charges the job, so "
              "page cache it only read or wrote is not in it",
    "kernel": "the cgroup's own high-water mark of charged memory, at any instant "
              "({kernel}): never misses a spike, includes cache",
    "requested": "what the job asked for", "allocated": "what it was given (its limit)",
    "allocated-unlimited": "what it was given (the scheduler's figure, else the request); no "
                           "memory limit was seen holding the job to it",
}
# what each figure is defined to include: it never comes out below them
INCLUDES = {"resident": "resident-sampled", "charged": "resident-sampled",
            "mapped": "resident-sampled", "kernel": "charged"}


def _largest(samples, cache=False, procfs=False):
    """The largest sampled resident memory (cache: + page cache, of the samples of cgroup
    mode -- procfs: of procfs mode -- that have it), or None."""
    found = [x["mem_resident_bytes"] + (x["mem_cache_bytes"] if cache else 0) for x in samples
             if x.get("mem_resident_bytes") is not None and (not cache or (
                 x.get("mem_cache_bytes") is not None
                 and (x.get("method") == "procfs") == procfs))]
    return max(found) if found else None


def memory_rows(s, samples, eff, scheduler, many):
    """Every memory figure of the run side by side: {"name", "value", "meaning",
    "includes"} -- includes: the names of the figures it is defined to include."""
    methods = sorted({x.get("method") or s.get("method") or "" for x in samples}
                     or {s.get("method") or ""})
    how = "; ".join(RESIDENT_READ[m] for m in methods if m in RESIDENT_READ) or \
        "memory.stat or PSS"
    kernel = " / ".join(KERNEL_PEAK[m] for m in methods if m in KERNEL_PEAK) or \
        "memory.peak / memory.max_usage_in_bytes"
    if eff.get("mem_sizing_basis") in (RESIDENT, None):   # jobmon reaped the job
        rows = [("resident peak", s.get("rss_peak_bytes"), "resident"),
                ("resident, sampled", _largest(samples), "resident-sampled")]
    else:
        rows = [("resident peak, sampled", s.get("rss_peak_bytes"), "resident-sampled")]
    rows += [("charged peak, sampled", _largest(samples, cache=True), "charged"),
             ("mapped peak, sampled", _largest(samples, cache=True, procfs=True), "mapped"),
             ("kernel peak (cgroup)", s.get("mem_peak_bytes"), "kernel")]
    if many:   # each the largest node's
        rows = [(n + " (largest node)", v, m) for n, v, m in rows]
    meanings = dict(MEANINGS)
    for sched in schedulers.all():   # its own memory figure, where its record has one
        label, field, meanings[sched.tag] = sched.memory_figure
        for name, value, _unit in (scheduler or {}).get("figures") or ():
            if name == field:
                rows.append((label, value, sched.tag))
    limited = s.get("oom_limit_bytes") or any(x.get("mem_limit_bytes") for x in samples)
    rows += [("requested", eff.get("mem_requested_bytes"), "requested"),
             ("allocated", eff.get("mem_allocated_bytes"),
              "allocated" if limited else "allocated-unlimited")]
    rows = [r for r in rows if r[1] is not None]
    names = {m: n for n, _v, m in rows}
    return [{"name": n, "value": v, "meaning": meanings[m].format(resident=how, kernel=kernel),
             "includes": [names[INCLUDES[m]]] if names.get(INCLUDES.get(m)) else []}
            for n, v, m in rows]
