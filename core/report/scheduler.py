"""The scheduler's own record of one job run, beside jobmon's: what HTCondor (condor_history,
event logs) or Slurm (sacct) recorded, in jobmon's units, with where the two disagree and
why. Read side; the sources may run commands, so only `jobmon query` and reports call it.
"""
import importlib
import re

from .. import accounting
from . import canonical

# scheduler tag -> (name people know, module that explains differences)
KNOWN = {"htcondor": ("HTCondor", ".condor_compare"), "slurm": ("Slurm", ".sacct_compare")}
# where each scheduler's record is not there yet, and what to do
NOT_YET = {"htcondor": "HTCondor writes a job's history when it leaves the queue; set "
                       "[condor] schedd, history or event_log (docs/htcondor.md)",
           "slurm": "sacct lists a job a few seconds after it ends (slurmdbd)"}


# an HTCondor GlobalJobId: SCHEDD#CLUSTER.PROC#QDATE
GLOBAL_ID = re.compile(r"[^#\s]+#\d+\.\d+#\d+")


def lookup_id(record, job=None):
    """The id to ask the scheduler for about a record (or a report's header): its job id
    (`job`, default its own), or an HTCondor run's GlobalJobId, so that only its own
    schedd's job of that number answers."""
    job = job or record.get("job")
    gid = (record.get("tags") or {}).get("GlobalJobId")
    if record.get("scheduler") == "htcondor" and isinstance(gid, str) and \
            GLOBAL_ID.fullmatch(gid) and gid.split("#")[1] == job:
        return gid
    return job


def pick(scheduler, records, job, run):
    """The record of this run (run None: the latest) of `job`."""
    run = int(run) if str(run or "").isdigit() else None
    if scheduler == "htcondor":   # a per-run source (epoch, event log) before the job's ad
        return accounting.load("htcondor").pick(records, job, run)
    mine = [r for r in records if r.job == job and (run is None or (r.run or 1) == run)]
    return max(mine, key=lambda r: r.run or 0) if mine else None


def ending(summary, end):
    """The fields of a run's summary that the scheduler's record of that run decides
    (`end`: Record.as_dict()): its outcome where the scheduler says more than the exit
    status jobmon saw (held, removed, evicted, cancelled, timed out, out of memory,
    preempted, node failure; HTCondor's hold and vacate codes), the scheduler's state, and
    whose job the scheduler says it was. None while the scheduler has the run in flight
    (or no record of it): jobmon's own outcome stands. The one rule for `jobmon query`,
    the reports and `jobmon reconcile`, which stores it."""
    if not end:
        return None
    c = canonical.classify(canonical.run_end(summary, end))
    if c.outcome == canonical.UNKNOWN:
        return None
    state = end.get("state") or end.get("status")
    held = str(state).lower() == "held"
    return {"outcome": c.outcome, "outcome_reason": c.reason, "outcome_cause": c.cause,
            "scheduler_state": str(state) if state else "none",
            "scheduler_code": end.get("hold_code") if held else end.get("vacate_code"),
            "scheduler_subcode": end.get("hold_subcode") if held else None,
            "cancelled_by": end.get("cancelled_by"),
            "scheduler_user": end.get("user") or end.get("owner"), "reconciled": 1,
            "scheduler_memory_bytes": _first(end, "memory_usage_bytes", "max_rss_bytes"),
            "scheduler_cpu_seconds": _first(end, "cpu_seconds") if end.get("cpu_seconds")
            is not None else _sum(end.get("cpu_user_seconds"), end.get("cpu_system_seconds"))}


def _first(end, *names):
    return next((end[n] for n in names if end.get(n) is not None), None)


def ends(scheduler, records, job):
    """{run: the record of that run (Record.as_dict())} of every run of `job` the
    scheduler recorded."""
    runs = {r.run for r in records if r.job == job and r.run is not None}
    return {str(n): pick(scheduler, records, job, n).as_dict() for n in sorted(runs)}


def figures(scheduler, r):
    """(label, value, unit) rows of what the scheduler recorded, the same for both."""
    if scheduler == "htcondor":
        rows = [("status", r.status, ""), ("exit", _status(r.exit_code, r.signal), ""),
                ("wall time (this run)", r.wall_seconds, "s"),
                ("CPU user + system", _sum(r.cpu_user_seconds, r.cpu_system_seconds), "s"),
                ("MemoryUsage (polled peak)", r.memory_usage_bytes, "bytes"),
                ("cores requested / provisioned", _pair(r.request_cpus, r.cpus_provisioned), ""),
                ("memory requested", r.request_memory_bytes, "bytes"),
                ("memory provisioned", r.memory_provisioned_bytes, "bytes"),
                ("runs (NumJobStarts)", r.runs, "count"),
                ("hold reason", r.hold_reason, ""), ("remove reason", r.remove_reason, ""),
                ("last eviction", r.vacate_reason, "")]
    else:
        rows = [("state", r.state, ""), ("exit", _status(r.exit_code, r.signal), ""),
                ("Elapsed", r.elapsed_seconds, "s"), ("TotalCPU", r.cpu_seconds, "s"),
                ("MaxRSS (sampled, largest step)", r.max_rss_bytes, "bytes"),
                ("cores requested / allocated", _pair(r.req_cpus, r.alloc_cpus), ""),
                ("memory requested", r.req_mem_bytes, "bytes"),
                ("memory allocated", r.alloc_mem_bytes, "bytes"),
                ("GPUs allocated", r.alloc_gpus, "count"),
                ("disk read / written (step leaders)", _pair(r.read_bytes, r.write_bytes), ""),
                ("cancelled by uid", r.cancelled_by, "")]
    return [x for x in rows if x[1] not in (None, "")]


def allocation(scheduler, r):
    """What the scheduler says the run asked for and was given (jobmon's field names)."""
    if scheduler == "htcondor":
        return {"cores_requested": r.request_cpus, "cores_allocated": r.cpus_provisioned,
                "mem_requested_bytes": r.request_memory_bytes,
                "mem_allocated_bytes": r.memory_provisioned_bytes,
                "gpus_requested": r.request_gpus, "gpus_allocated": r.gpus_provisioned}
    return {"cores_requested": r.req_cpus, "cores_allocated": r.alloc_cpus,
            "mem_requested_bytes": r.req_mem_bytes, "mem_allocated_bytes": r.alloc_mem_bytes,
            "gpus_allocated": r.alloc_gpus}


def record_of(header, summary, cfg, source=None):
    """{"name", "source", "figures", "allocation", "end", "runs", "differences", "note"} for
    the run `header` describes (scheduler, job, run), or None for `jobmon run` jobs ("runs":
    ends() of every run of the job). A source that cannot be asked, or has no record yet,
    gives a note instead of figures."""
    scheduler = header.get("scheduler")
    if scheduler not in KNOWN:
        return None
    name, compare_module = KNOWN[scheduler]
    out = {"name": name, "source": None, "figures": [], "allocation": {}, "end": None,
           "runs": {}, "differences": [], "note": None}
    try:
        source = source or accounting.load(scheduler).source(cfg)
    except Exception as e:   # bindings missing, a bad config: the report goes on without it
        out["note"] = f"{name}'s accounting could not be read: {e}"
        return out
    if source is None:
        out["note"] = f"no {name} accounting source on this host ({NOT_YET[scheduler]})"
        return out
    try:
        records = source.lookup(lookup_id(header))
    except accounting.AccountingError as e:
        out["note"] = f"{name}'s accounting: {e}"
        return out
    rec = pick(scheduler, records, header["job"], header.get("run"))
    if rec is None:
        out["note"] = f"{name} has no record of this job yet ({NOT_YET[scheduler]})"
        return out
    cmp = importlib.import_module(compare_module, accounting.__name__)
    out.update(source=rec.source, figures=figures(scheduler, rec),
               runs=ends(scheduler, records, header["job"]),
               allocation={k: v for k, v in allocation(scheduler, rec).items() if v is not None},
               end=rec.as_dict(), differences=cmp.compare(summary, rec) if summary else [])
    return out


def _status(code, sig):
    return f"signal {sig}" if sig else None if code is None else f"exit code {code}"


def _sum(a, b):
    return None if a is None and b is None else (a or 0) + (b or 0)


def _pair(a, b):
    return None if a is None and b is None else f"{'-' if a is None else a} / " \
        f"{'-' if b is None else b}"
