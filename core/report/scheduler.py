"""The scheduler's own record of one job run, beside jobmon's: what the scheduler recorded
(its accounting source, jobmon.schedulers), in jobmon's units, with where the two disagree
and why. Read side; the sources may run commands, so only `jobmon query` and reports call it.
"""
from .. import accounting, schedulers
from . import canonical


def lookup_id(record, job=None):
    """The id to ask the scheduler for about a record (or a report's header): its job id
    (`job`, default its own), or the one its scheduler qualifies it by (a global id, so
    that only its own instance's job of that number answers)."""
    s = schedulers.find(record.get("scheduler"))
    return s.lookup_id(record, job) if s else job or record.get("job")


def pick(scheduler, records, job, run):
    """The record of this run (run None: the latest) of `job`."""
    return (schedulers.find(scheduler) or schedulers.Scheduler()).pick(records, job, run)


def ending(summary, end):
    """The fields of a run's summary that the scheduler's record of that run decides
    (`end`: Record.as_dict()): its outcome where the scheduler says more than the exit
    status jobmon saw (held, removed, evicted, cancelled, timed out, out of memory,
    preempted, node failure; the scheduler's hold and vacate codes), the scheduler's state, and
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
    """(label, value, unit) rows of what the scheduler recorded."""
    return [x for x in schedulers.get(scheduler).figures(r) if x[1] not in (None, "")]


def allocation(scheduler, r):
    """What the scheduler says the run asked for and was given (jobmon's field names)."""
    return schedulers.get(scheduler).allocation(r)


def record_of(header, summary, cfg, source=None):
    """{"name", "source", "figures", "allocation", "end", "runs", "differences", "note"} for
    the run `header` describes (scheduler, job, run), or None for `jobmon run` jobs ("runs":
    ends() of every run of the job). A source that cannot be asked, or has no record yet,
    gives a note instead of figures."""
    scheduler = header.get("scheduler")
    sched = schedulers.find(scheduler)
    if sched is None:
        return None
    name = sched.name
    out = {"name": name, "source": None, "figures": [], "allocation": {}, "end": None,
           "runs": {}, "differences": [], "note": None}
    try:
        source = source or sched.accounting().source(cfg)
    except Exception as e:   # bindings missing, a bad config: the report goes on without it
        out["note"] = f"{name}'s accounting could not be read: {e}"
        return out
    if source is None:
        out["note"] = f"no {name} accounting source on this host ({sched.not_yet})"
        return out
    try:
        records = source.lookup(lookup_id(header))
    except accounting.AccountingError as e:
        out["note"] = f"{name}'s accounting: {e}"
        return out
    rec = pick(scheduler, records, header["job"], header.get("run"))
    if rec is None:
        out["note"] = f"{name} has no record of this job yet ({sched.not_yet})"
        return out
    out.update(source=rec.source, figures=figures(scheduler, rec),
               runs=ends(scheduler, records, header["job"]),
               allocation={k: v for k, v in allocation(scheduler, rec).items() if v is not None},
               end=rec.as_dict(), differences=sched.compare(summary, rec) if summary else [])
    return out


def _sum(a, b):
    return None if a is None and b is None else (a or 0) + (b or 0)
