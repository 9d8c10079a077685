"""A pilot's provisioned time, partitioned into the OSG report's categories.

A pilot (a glidein: `jobmon run -- glidein_startup.sh ...`) holds cores, memory and GPUs from
its start to its end; payload jobs run inside it (their records carry tags["pilot"]). Every
core-hour and GPU-hour it held goes to exactly one category:

  validation        from its start until its startd could accept work (validated_at); a
                    pilot that never validated: all of its time (the report's "validation
                    fails")
  decision_problem  after validation, in a pilot that never ran a payload: all of it
  goodput           payloads' time, for runs that completed, or ended by their own (user's)
                    doing: the pilot delivered it (user_badput says how much of it failed)
  misconfiguration  payloads' time, for runs that failed for the site's or pilot's reasons
  preemption        payloads' time, for runs stopped by the pilot's end (or evicted)
  overhead          after validation, in a pilot that ran payloads: idle cores only in whole
                    canonical units (1 core + 2 GiB), all of it while no payload runs, and
                    every idle GPU

The remainder of idle cores that make no whole unit goes to the payloads running at that
time, in proportion to their cores, into each one's category. Time is cut into slices at
every start and end (pilot, validation, payloads); within a slice the running payloads and
their allocations are constant, so each slice is split exactly and the slices are summed.

Units: times in seconds since the epoch in, core-hours and GPU-hours out; memory in bytes.
Read side, standard library only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .canonical import (CANONICAL_MEMORY_BYTES, GOODPUT as GOODPUT_RUN,
                        PREEMPTION as PREEMPTED, SITE, USER, Classification, Resources,
                        whole_units)

VALIDATION, DECISION_PROBLEM, GOODPUT = "validation", "decision_problem", "goodput"
MISCONFIGURATION, PREEMPTION, OVERHEAD = "misconfiguration", "preemption", "overhead"
CATEGORIES = (VALIDATION, DECISION_PROBLEM, GOODPUT, MISCONFIGURATION, PREEMPTION, OVERHEAD)
# a payload that ended this close before the pilot did was stopped by the pilot's end
# (its shutdown: SIGTERM, MachineMaxVacateTime, then the glidein's own cleanup)
END_GRACE_SECONDS = 300.0


@dataclass(frozen=True)
class Pilot:
    """start, end: seconds since the epoch; resources: the cores, memory (bytes) and GPUs
    the site gave it; validated_at: when its validation ended and its startd started, or
    None if it never validated (pass `start` when it is not known: validation then counts
    as none, see docs/accounting.md)."""
    start: float
    end: float
    resources: Resources
    validated_at: Optional[float]

    def __post_init__(self):
        if not self.end >= self.start:
            raise ValueError(f"pilot ends ({self.end}) before it starts ({self.start})")


@dataclass(frozen=True)
class Payload:
    """One run of a payload job in a pilot. start, end: seconds since the epoch (end None:
    no end recorded, it ran until the pilot ended); resources: what its slot was given
    (cores, memory bytes, GPUs: CpusProvisioned, MemoryProvisioned, GPUsProvisioned);
    ended: canonical.classify() of the run; name: for people (job id and run)."""
    start: float
    end: Optional[float]
    resources: Resources
    ended: Classification
    name: str = ""

    def __post_init__(self):
        if self.end is not None and not self.end >= self.start:
            raise ValueError(f"payload {self.name!r} ends before it starts")


@dataclass
class Hours:
    core_hours: float = 0.0
    gpu_hours: float = 0.0

    def add(self, core_hours, gpu_hours=0.0):
        self.core_hours += core_hours
        self.gpu_hours += gpu_hours

    def __add__(self, other):
        return Hours(self.core_hours + other.core_hours, self.gpu_hours + other.gpu_hours)

    def __sub__(self, other):
        return Hours(self.core_hours - other.core_hours, self.gpu_hours - other.gpu_hours)


@dataclass
class PilotAccount:
    """The partition of one pilot's time (within the window asked for).
    provisioned: its cores and GPUs times the time; categories: CATEGORIES -> Hours;
    user_badput: the part of goodput from runs that failed by their own doing (or with no
    sign of the pilot's); payloads: each payload's Hours (its share of the remainder
    included), in the order given; payload_categories: each one's category, None for a
    payload outside the pilot's life (ignored); validated_at: the validation end used (a
    payload's start caps it: it cannot have run before the startd accepted it)."""
    provisioned: Hours
    categories: dict = field(default_factory=lambda: {c: Hours() for c in CATEGORIES})
    user_badput: Hours = field(default_factory=Hours)
    payloads: list = field(default_factory=list)
    payload_categories: list = field(default_factory=list)
    validated_at: Optional[float] = None

    def accounted(self):
        out = Hours()
        for h in self.categories.values():
            out = out + h
        return out

    def unaccounted(self):
        """provisioned - the sum of the categories: zero (to rounding) for every pilot."""
        return self.provisioned - self.accounted()

    def balanced(self, tolerance=1e-9):
        """True when the categories add up to the provisioned time, within `tolerance`
        relative to it (floating-point sums)."""
        diff, scale = self.unaccounted(), self.provisioned
        return (abs(diff.core_hours) <= tolerance * max(scale.core_hours, 1.0)
                and abs(diff.gpu_hours) <= tolerance * max(scale.gpu_hours, 1.0))


def payload_category(ended, at_pilot_end):
    """(category, counts as user badput) of a payload run: canonical.classify()'s result,
    and whether it ended with the pilot (within END_GRACE_SECONDS) or ran past it. A run
    whose cause is not known is the pilot end's doing when it ended with the pilot;
    otherwise nothing points at the pilot and it stays with the user."""
    if ended.outcome == GOODPUT_RUN:
        return GOODPUT, False
    if ended.cause == SITE:
        return MISCONFIGURATION, False
    if ended.cause == PREEMPTED or (ended.cause != USER and at_pilot_end):
        return PREEMPTION, False
    return GOODPUT, True


@dataclass
class _Run:
    index: int
    start: float
    end: float
    res: Resources
    category: str
    user_badput: bool


def _runs(pilot, payloads, grace):
    runs, categories = [], []
    for i, p in enumerate(payloads):
        if p.start > pilot.end or (p.end is not None and p.end < pilot.start):
            categories.append(None)   # not in this pilot's life: a mismatched record
            continue
        at_end = p.end is None or p.end >= pilot.end - grace
        category, user = payload_category(p.ended, at_end)
        end = pilot.end if p.end is None else min(p.end, pilot.end)
        runs.append(_Run(i, max(p.start, pilot.start), end, p.resources, category, user))
        categories.append(category)
    return runs, categories


def _validation_end(pilot, runs):
    v = pilot.validated_at
    if runs:
        first = min(r.start for r in runs)
        v = first if v is None else min(v, first)
    return pilot.end if v is None else min(max(v, pilot.start), pilot.end)


def _split_slice(acct, pilot, running, hours, memory_per_unit):
    """One slice with payloads running: each gets its own allocation (scaled down where
    the allocations exceed the pilot's), idle cores go to overhead in whole canonical units
    and the rest to the running payloads in proportion to their cores; idle GPUs to
    overhead."""
    have = pilot.resources
    alloc_cores = sum(r.res.cores for r in running)
    alloc_gpus = sum(r.res.gpus or 0 for r in running)
    scale_cores = 1.0 if alloc_cores <= have.cores else have.cores / alloc_cores
    scale_gpus = 1.0 if alloc_gpus <= (have.gpus or 0) else (have.gpus or 0) / alloc_gpus
    idle_cores = max(have.cores - alloc_cores, 0)
    idle_memory = None if have.memory_bytes is None else \
        max(have.memory_bytes - sum(r.res.memory_bytes or 0 for r in running), 0)
    units = whole_units(idle_cores, idle_memory, memory_per_unit)
    remainder = idle_cores - units
    acct.categories[OVERHEAD].add(units * hours, max((have.gpus or 0) - alloc_gpus, 0) * hours)
    weights = [r.res.cores * scale_cores for r in running]
    total = sum(weights)
    if total <= 0:   # GPU-only payloads: share the remainder evenly
        weights, total = [1.0] * len(running), float(len(running))
    for r, w in zip(running, weights):
        # w / total first: with a denormal payload (5e-324 cores) remainder * w underflows
        cores = (r.res.cores * scale_cores + remainder * (w / total)) * hours
        gpus = (r.res.gpus or 0) * scale_gpus * hours
        acct.categories[r.category].add(cores, gpus)
        acct.payloads[r.index].add(cores, gpus)
        if r.user_badput:
            acct.user_badput.add(cores, gpus)


def account(pilot, payloads=(), *, memory_per_unit=CANONICAL_MEMORY_BYTES,
            end_grace_seconds=END_GRACE_SECONDS, since=None, until=None):
    """Partition `pilot`'s (Pilot) provisioned core-hours and GPU-hours over CATEGORIES,
    given its payload runs ([Payload]). since/until (seconds since the epoch) restrict the
    account to that window, e.g. one day of a time series: windows that tile the pilot's
    life add up to its whole account. memory_per_unit: bytes of one canonical unit."""
    payloads = list(payloads)
    lo = pilot.start if since is None else min(max(since, pilot.start), pilot.end)
    hi = pilot.end if until is None else min(max(until, lo), pilot.end)
    have = pilot.resources
    runs, categories = _runs(pilot, payloads, end_grace_seconds)
    validated = _validation_end(pilot, runs)
    gpus = have.gpus or 0
    acct = PilotAccount(provisioned=Hours(have.cores * (hi - lo) / 3600.0,
                                          gpus * (hi - lo) / 3600.0),
                        payloads=[Hours() for _ in payloads], payload_categories=categories,
                        validated_at=None if pilot.validated_at is None and not runs
                        else validated)
    cuts = {lo, hi, validated} | {r.start for r in runs} | {r.end for r in runs}
    cuts = sorted(t for t in cuts if lo <= t <= hi)
    # sweep: payloads enter at their start and leave at their end, so a slice costs only
    # the payloads running in it
    starts, ends = sorted(runs, key=lambda r: r.start), sorted(runs, key=lambda r: r.end)
    active, i, j = {}, 0, 0
    for a, b in zip(cuts, cuts[1:]):
        while i < len(starts) and starts[i].start <= a:
            active[starts[i].index] = starts[i]
            i += 1
        while j < len(ends) and ends[j].end <= a:
            active.pop(ends[j].index, None)
            j += 1
        hours = (b - a) / 3600.0
        if b <= validated:
            acct.categories[VALIDATION].add(have.cores * hours, gpus * hours)
            continue
        if not runs:
            acct.categories[DECISION_PROBLEM].add(have.cores * hours, gpus * hours)
            continue
        running = list(active.values())   # start <= a < end, so each covers the slice
        if running:
            _split_slice(acct, pilot, running, hours, memory_per_unit)
        else:   # no payload at all: every idle resource is overhead, whole units or not
            acct.categories[OVERHEAD].add(have.cores * hours, gpus * hours)
    return acct


def add_up(accounts):
    """Many pilots' accounts summed (a site, a day): {category: Hours} for CATEGORIES, plus
    "provisioned" and "user_badput"."""
    out = {name: Hours() for name in CATEGORIES + ("provisioned", "user_badput")}
    for a in accounts:
        for name in CATEGORIES:
            out[name] = out[name] + a.categories[name]
        out["provisioned"] = out["provisioned"] + a.provisioned
        out["user_badput"] = out["user_badput"] + a.user_badput
    return out
