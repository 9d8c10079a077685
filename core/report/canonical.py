"""OSG canonical units, and how one run of a job ended.

The OSG report "Accounting of provisioned resources on OSG pool" (GIL, August 2022) measures
waste in canonical units: "1 CPU core + 2 GB of RAM" for CPUs, "1 GPU chip" for GPUs. Idle
CPU resources count only in whole units: 3 idle cores + 3 GB is 1 unit (memory-limited),
3 cores + 1 GB is 0, 2 cores + 6 GB is 2 (core-limited). A GPU's canonical time is its time.

Units here: times in seconds (since the epoch, or durations) in, hours out; memory in bytes;
cores and GPUs as counts (fractions allowed). The report's "GB" is read as GiB: the
schedulers' "MB" are MiB, and OSG's "2 GB per core" is set as 2048 of them, so such a slot is
exactly one canonical unit per core (`memory_per_unit` changes it).

Read side, standard library only. docs/accounting.md has the definitions and decisions.
"""
from __future__ import annotations

import math
import signal as _signal
from dataclasses import dataclass
from typing import Optional, Union

from .. import schedulers

# the unit arithmetic is the summary's too (written inside the job at its end)
from ..summary.efficiency import (  # noqa: F401,E402
    CANONICAL_MEMORY_BYTES, GIB, idle_units, limited_by, number, signal_name, sizing_peak,
    whole_units)


@dataclass(frozen=True)
class Resources:
    """Cores, memory in bytes and GPUs: what a pilot or a job was given, or used.
    memory_bytes None: not known (it then limits nothing); gpus None: not known."""
    cores: float = 0.0
    memory_bytes: Optional[float] = None
    gpus: Optional[float] = 0.0

    def __post_init__(self):
        for name in ("cores", "memory_bytes", "gpus"):
            v = getattr(self, name)
            if v is not None and not (v >= 0 and math.isfinite(v)):
                raise ValueError(f"Resources.{name} must be a finite count >= 0, not {v!r}")


# --- one run: provisioned against used -----------------------------------------------------

@dataclass(frozen=True)
class JobCanonical:
    """One run's provisioned and used resources over its wall time, in hours.
    idle_canonical_core_hours: the idle cores and memory in whole canonical units (the OSG
    rule); idle_core_hours: the idle cores, any amount. GPU hours are canonical as they are.
    GPU figures are None where the GPUs used are not known."""
    hours: float
    provisioned_core_hours: float
    used_core_hours: float
    idle_core_hours: float
    idle_canonical_core_hours: float
    idle_limited_by: str
    provisioned_gpu_hours: Optional[float]
    used_gpu_hours: Optional[float]
    idle_gpu_hours: Optional[float]


def job_canonical(provisioned, used, wall_seconds, memory_per_unit=CANONICAL_MEMORY_BYTES):
    """Canonical accounting of one run (one job run, one node) that held `provisioned`
    (Resources) for wall_seconds and used `used` (Resources: average cores busy, peak
    memory, GPUs busy). Idle = provisioned - used, never below 0, constant over the run."""
    hours = wall_seconds / 3600.0
    idle_cores = max(provisioned.cores - used.cores, 0.0)
    idle_mem = None if provisioned.memory_bytes is None or used.memory_bytes is None else \
        max(provisioned.memory_bytes - used.memory_bytes, 0)
    gpus = provisioned.gpus is not None and used.gpus is not None
    units, limit = idle_units(idle_cores, idle_mem, provisioned.cores, provisioned.memory_bytes,
                              memory_per_unit)
    return JobCanonical(
        hours=hours,
        provisioned_core_hours=provisioned.cores * hours,
        used_core_hours=min(used.cores, provisioned.cores) * hours,
        idle_core_hours=idle_cores * hours,
        idle_canonical_core_hours=units * hours, idle_limited_by=limit,
        provisioned_gpu_hours=provisioned.gpus * hours if provisioned.gpus is not None else None,
        used_gpu_hours=min(used.gpus, provisioned.gpus) * hours if gpus else None,
        idle_gpu_hours=max(provisioned.gpus - used.gpus, 0.0) * hours if gpus else None)


def used_from_summary(summary):
    """What a run used, from jobmon's summary (docs/metrics.md): average cores busy
    ((user + system CPU) / wall), the memory peak that sizes it (jobmon.summary.efficiency.
    sizing_peak: the footprint, page cache left out as reclaimable, where jobmon reaped the
    job; else the kernel's exact peak, cache included), and GPUs busy (gpu_count x average
    utilization; None without GPU figures)."""
    wall = summary.get("wall_seconds") or 0
    cpu = (summary.get("cpu_user_seconds") or 0) + (summary.get("cpu_system_seconds") or 0)
    count, util = summary.get("gpu_count") or 0, summary.get("gpu_util_avg_percent")
    if not count:
        gpus = 0.0    # no GPU (jobmon records gpu_count only where there are GPUs)
    else:
        gpus = None if util is None else count * util / 100.0
    return Resources(cores=cpu / wall if wall else 0.0,
                     memory_bytes=sizing_peak(summary)[0], gpus=gpus)


# --- how a run ended -----------------------------------------------------------------------

GOODPUT, BADPUT, UNKNOWN = "goodput", "badput", "unknown"
# whose doing a badput run is: the user's job, the site or pilot, the pilot's or the node's
# end (preemption), or not known from the records
USER, SITE, PREEMPTION, NO_CAUSE = "user", "site", "preemption", "unknown"


@dataclass(frozen=True)
class RunEnd:
    """How one run ended, in plain fields, for every scheduler and for `jobmon run`.
    exit_code, signal: the command's (jobmon's summary; else the scheduler's record's).
    state: the scheduler's end of this run, as its record gives it: a state's name or
    number (its object's state_names), an event-log end (completed, removed, held,
    evicted), or a state's first word (COMPLETED, FAILED, CANCELLED, TIMEOUT, ...).
    hold_code/hold_subcode: HoldReasonCode/SubCode; vacate_code: VacateReasonCode; reason:
    the hold, remove or vacate reason text. run: this run (1 = first); job_starts:
    NumJobStarts, the runs the job had when the scheduler recorded it."""
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    state: Union[str, int, None] = None
    hold_code: Optional[int] = None
    hold_subcode: Optional[int] = None
    vacate_code: Optional[int] = None
    reason: Optional[str] = None
    run: Optional[int] = None
    job_starts: Optional[int] = None


@dataclass(frozen=True)
class Classification:
    """outcome: goodput, badput, or unknown (still running, or nothing recorded);
    cause (badput): user, site, preemption or unknown ("none" for goodput);
    reason: one line for people."""
    outcome: str
    cause: str
    reason: str


# signals a program brings on itself (a fault, a limit it hit, its own alarm): the user's
_OWN_SIGNALS = {_signal.SIGILL, _signal.SIGTRAP, _signal.SIGABRT, _signal.SIGBUS,
                _signal.SIGFPE, _signal.SIGSEGV, _signal.SIGSYS, _signal.SIGPIPE,
                _signal.SIGXCPU, _signal.SIGXFSZ, _signal.SIGALRM}
# the states every registered scheduler names (its object's outcome part): the number
# a state may be given as, the states of a run not over yet, the ends its state alone
# decides (state -> (cause, reason)); read once, when first asked
_OUTCOMES = []


def _outcomes():
    if not _OUTCOMES:
        names, flight, ends = {}, set(), {}
        for sched in schedulers.all():
            names.update(sched.state_names)
            flight.update(sched.in_flight)
            ends.update(sched.state_ends)
        _OUTCOMES[:] = [names, flight, ends]
    return _OUTCOMES


def state_name(state):
    """A state given as a number, as its scheduler names it (None where none does)."""
    return _outcomes()[0].get(state)


def code_cause(code, subcode=None):
    """Whose doing a hold or vacate code is (the scheduler whose code it is says): user,
    site, preemption or unknown."""
    return next(filter(None, (s.code_cause(code, subcode) for s in schedulers.all())),
                NO_CAUSE)


def _by_code(what, code, subcode, reason, default):
    text = what + (f" (code {code}" + (f".{subcode}" if subcode else "") + ")"
                   if code is not None else "") + (f": {reason}" if reason else "")
    return Classification(BADPUT, default if code is None else code_cause(code, subcode), text)


def _exit(end, restarted):
    if end.signal:
        own = end.signal in _OWN_SIGNALS
        text = f"killed by {signal_name(end.signal)}" + ("" if own else " (sent from outside)")
        return Classification(BADPUT, USER if own else NO_CAUSE,
                              text + ("; the job started again" if restarted else ""))
    if end.exit_code is None:
        if restarted:
            return Classification(BADPUT, NO_CAUSE, "ended without an exit status; the job "
                                                    "started again")
        return Classification(UNKNOWN, NO_CAUSE, "no exit status recorded")
    if end.exit_code == 0:
        if restarted:   # its result was lost (e.g. the exit status never reached the shadow)
            return Classification(BADPUT, SITE, "exit code 0, but the job ran again")
        return Classification(GOODPUT, "none", "completed (exit code 0)")
    return Classification(BADPUT, USER, f"failed (exit code {end.exit_code})")


def classify(end):
    """Goodput or badput of one run (RunEnd), whose doing, and why. The scheduler's state
    decides where it says more than the exit status (held, removed, evicted, node
    failure; a scheduler's hold and vacate codes say whose doing: its object's
    code_cause); otherwise the exit status does: 0 is goodput, another code the user's
    failure, a signal the program brings on itself (SIGSEGV, SIGABRT, ...) the user's, a
    signal from outside (SIGTERM, SIGKILL, ...) of unknown cause. A run after which the
    job started again did not complete it: badput even with exit code 0 (then the
    site's: the result was lost)."""
    state = end.state
    if isinstance(state, int):
        state = state_name(state)
    state = (state or "").strip().lower() or None
    _names, in_flight, state_ends = _outcomes()
    if state in in_flight:
        return Classification(UNKNOWN, NO_CAUSE, f"still {state.replace('_', ' ')}")
    if state == "held":
        return _by_code("held", end.hold_code, end.hold_subcode, end.reason, NO_CAUSE)
    if state in ("evicted", "vacated", "idle"):   # idle: the run ended, the job was requeued
        return _by_code("evicted", end.vacate_code, None, end.reason,
                        PREEMPTION if state != "idle" else NO_CAUSE)
    if state in state_ends:
        cause, text = state_ends[state]
        return Classification(BADPUT, cause, text + (f": {end.reason}" if end.reason else ""))
    if state == "failed" and not end.signal and not end.exit_code:
        # a record may give a failed job exit code 0 (a scheduler's JSON accounting did, in
        # one version): the state is what is right
        return Classification(BADPUT, USER, "failed (its exit code was not recorded)")
    restarted = end.run is not None and end.job_starts is not None and end.run < end.job_starts
    return _exit(end, restarted)


def run_end(summary=None, record=None, run=None, job_starts=None):
    """A RunEnd from jobmon's summary of a run (a dict: exit_code, signal) and the scheduler's
    record (a dict as jobmon.accounting's Record.as_dict() gives it: `status` or `state`,
    `exit_code`, `signal`, `hold_code`, `hold_subcode`, `hold_reason`, `remove_reason`,
    `vacate_code`, `vacate_reason`, `cancelled_by`, `run`, `runs`, those its scheduler
    records: docs/accounting.md). A record of another run than `run` only gives the job's
    number of starts.
    jobmon's exit status comes first: it is the command's own."""
    s, r = summary or {}, record or {}
    run = run if run is not None else r.get("run")
    job_starts = job_starts if job_starts is not None else r.get("runs")
    if r.get("run") is not None and run is not None and int(r["run"]) != int(run):
        r = {}   # describes another run of the job
    src = s if s.get("exit_code") is not None or s.get("signal") is not None else r
    state = r.get("status") or r.get("state")
    name = state_name(state) if isinstance(state, int) else str(state).lower()
    why = {"held": "hold_reason", "removed": "remove_reason", "evicted": "vacate_reason",
           "idle": "vacate_reason"}.get(name)
    reason = r.get(why) if why else None
    who = str(r.get("cancelled_by") or "")
    if name == "cancelled" and who:   # CANCELLED by <uid> (text), by <user> (JSON)
        reason = f"by uid {who}" if who.isdigit() else f"by {who}"
    return RunEnd(exit_code=src.get("exit_code"), signal=src.get("signal"), state=state,
                  hold_code=r.get("hold_code"), hold_subcode=r.get("hold_subcode"),
                  vacate_code=r.get("vacate_code"), reason=reason, run=run,
                  job_starts=job_starts)
