"""`jobmon report` over a time range: many jobs' summaries -> groups, distributions, waste,
top wasters, suspects, goodput and badput. A model (plain dicts and lists), no rendering.

Input: the records a store's summaries() gives (job dicts with "summary", None while the
job runs): one per job run per node, and one per step of a job (tag parent_job).
Everything here counts job runs: a step's record is left out (its job's own record holds
its figures), and the records of a multi-node run are one run (runs.job_runs). A record's
figures come from job_efficiency.efficiency_of (stored fields first, else computed from
totals and tags).

The runs of a range add up in a Rollup, which merges with another: counts and sums add,
distributions are kept as {value: runs} (efficiencies have two decimals, so this is exact
and bounded), top wasters and suspects as the first ones in the report's order. A report
over weeks merges the hours' rollups (jobmon.report.rollup) instead of holding every run.

Read side, standard library only.
"""
from ..summary.advice import growth_text
from . import job_efficiency, ownership
from .canonical import BADPUT, GOODPUT
from ..summary import completeness
from .distribution import Values, distribution
from .runs import is_step, job_runs

GROUP_KEYS = ("user", "group", "account", "site", "pool", "queue", "partition")
NONE = "(none)"
# thresholds and sizes; the CLI passes the config's [report] values over these
KEPT = 100     # top wasters and suspects a rollup keeps: the most a report can list
DEFAULTS = {
    "top": 10,                      # top wasters shown (at most KEPT)
    "suspect_min_samples": 5,       # idle samples (CPU at ~0, GPUs at 0 %) before a suspect
    "idle_samples_percent": 50.0,   # ... and this share of its samples
    "suspects": 20,                 # suspects listed (the count covers all)
    "min_completeness_percent": 80.0,   # a run whose data covers less: counted incomplete
}
# summed per group (hours)
SUMS = ("wall_hours", "provisioned_core_hours", "used_core_hours", "idle_core_hours",
        "idle_canonical_core_hours", "gpu_hours", "idle_gpu_hours")
# the node reader's energy, summed per group from the summaries that have it (energy_jobs
# of them: a node without a reader gives none): (sum, summary field, factor)
ENERGY = (("energy_kwh", "energy_joules", 1 / 3.6e6), ("co2e_kg", "co2e_grams", 1e-3),
          # their bounds add up as the runs' bounds (a worst case: no run's error is
          # assumed to cancel another's); energy_unbounded_jobs: runs with energy and no
          # bound (recorded before jobmon gave one), whose error is in no sum
          ("energy_error_kwh", "energy_error_joules", 1 / 3.6e6),
          ("co2e_error_kg", "co2e_error_grams", 1e-3))
SUMMED = SUMS + tuple(e[0] for e in ENERGY[:2]) + ("energy_jobs",) + \
    tuple(e[0] for e in ENERGY[2:]) + ("energy_unbounded_jobs",)


def group_key(record, by):
    """The value of dimension `by` for a record: its user, or a tag the plugins set
    (a scheduler's accounting group is `account`; a glidein's GLIDEIN_Site is its site; the
    pool is the shipper's cluster name). Dimensions that name one thing twice fall back
    on each other: group <-> account, queue <-> partition."""
    tags = record.get("tags") or {}
    if by == "user":
        return record.get("user") or NONE
    order = {"group": ("group", "account"), "account": ("account", "group"),
             "site": ("GLIDEIN_Site", "site"), "pool": ("pool", "cluster"),
             "queue": ("queue", "partition"), "partition": ("partition", "queue")}[by]
    for name in order:
        v = tags.get(name)
        if v:
            return str(v)
    if by == "pool" and record.get("cluster"):
        return str(record["cluster"])   # InfluxDB: the shipper's cluster tag
    return NONE


def in_pilot(record):
    """A payload of a pilot (its tags name another job as its pilot): its slot's time is
    part of the pilot's, which the pilot's own record holds."""
    pilot = (record.get("tags") or {}).get("pilot")
    return bool(pilot) and str(pilot) != str(record.get("job"))


def job_row(record, figures):
    """One job run as the report lists it (top wasters, suspects)."""
    s = record.get("summary") or {}
    return {"job": str(record.get("job")), "run": record.get("run"),
            "user": record.get("user"), "host": record.get("host"),
            "start_time": record.get("start_time") or s.get("start_time"),
            "wall_seconds": s.get("wall_seconds"),
            "cores_allocated": figures.get("cores_allocated"),
            "mem_allocated_bytes": figures.get("mem_allocated_bytes"),
            "gpus_allocated": figures.get("gpus_allocated"),
            "cpu_efficiency_percent": figures.get("cpu_efficiency_percent"),
            "mem_efficiency_percent": figures.get("mem_efficiency_percent"),
            "idle_canonical_core_hours": figures.get("idle_canonical_core_hours"),
            "idle_gpu_hours": figures.get("idle_gpu_hours"),
            "outcome": figures.get("outcome"), "outcome_reason": figures.get("outcome_reason"),
            # allocations held idle at a stretch past the site's idle_allocation_seconds
            "idle_allocation": s.get("idle_allocation") or None,
            "cpu_idle_longest_seconds": s.get("cpu_idle_longest_seconds"),
            "gpu_unused_longest_seconds": s.get("gpu_unused_longest_seconds")}


def suspicions(summary, figures, limits):
    """Why a job looks wrong, as (kind, detail) pairs: memory rising steadily, CPU at ~0
    for many samples while it ran, GPUs allocated but idle."""
    out = []
    if figures.get("mem_rising"):
        rate = figures.get("mem_growth_bytes_per_hour")
        out.append(("mem_rising", "memory rose steadily" + (
            f" ({growth_text(rate, summary.get('wall_seconds'))})" if rate is not None else "")))
    samples = summary.get("samples") or 0

    def many(idle):
        return idle is not None and idle >= limits["suspect_min_samples"] and \
            idle >= limits["idle_samples_percent"] / 100.0 * samples
    idle = figures.get("cpu_idle_samples")
    if many(idle):
        out.append(("cpu_idle", f"CPU at ~0 in {idle} of {samples} samples"))
    gidle = figures.get("gpu_idle_samples")
    if (figures.get("gpus_allocated") or 0) > 0 and many(gidle):
        out.append(("gpu_idle", f"{figures['gpus_allocated']:g} GPU(s) allocated, idle in "
                                f"{gidle} of {samples} samples"))
    return out


class _Group:
    FIELDS = ("jobs", "goodput", "badput", "unknown", "suspects", "unconfirmed", "local",
              "incomplete")

    def __init__(self, key):
        self.key = key
        self.jobs = self.goodput = self.badput = self.unknown = self.suspects = 0
        self.unconfirmed = self.local = 0    # runs counted that no scheduler vouched for
        self.incomplete = 0                  # runs whose data covers too little of them
        self.sums = dict.fromkeys(SUMMED, 0.0)
        self.sums["energy_jobs"] = self.sums["energy_unbounded_jobs"] = 0
        self.cpu_eff, self.mem_eff = Values(), Values()

    def add(self, summary, figures, suspect, verdict=ownership.OWN, held=True, short=False):
        """held: the run's hours and energy are its own (False: a payload, whose hours
        are its pilot's, counted in the pilot's record); short: its data covers less of it
        than the site's min_completeness_percent."""
        self.jobs += 1
        self.incomplete += bool(short)
        self.unconfirmed += verdict == ownership.UNCONFIRMED
        self.local += verdict == ownership.LOCAL
        outcome = figures.get("outcome")
        if outcome == GOODPUT:
            self.goodput += 1
        elif outcome == BADPUT:
            self.badput += 1
        else:
            self.unknown += 1
        if held:
            self._hours(summary, figures)
        for name, values in (("cpu_efficiency_percent", self.cpu_eff),
                             ("mem_efficiency_percent", self.mem_eff)):
            if figures.get(name) is not None:
                values.add(figures[name])
        self.suspects += bool(suspect)

    def _hours(self, summary, figures):
        self.sums["wall_hours"] += (summary.get("wall_seconds") or 0) / 3600.0
        for k in SUMS[1:]:
            self.sums[k] += figures.get(k) or 0.0
        if summary.get("energy_joules") is not None:
            self.sums["energy_jobs"] += 1
            self.sums["energy_unbounded_jobs"] += summary.get("energy_error_joules") is None
        for k, field, factor in ENERGY:
            self.sums[k] += (summary.get(field) or 0.0) * factor

    def merge(self, other):
        for k in self.FIELDS:
            setattr(self, k, getattr(self, k) + getattr(other, k))
        for k in SUMMED:
            self.sums[k] += other.sums[k]
        self.cpu_eff.merge(other.cpu_eff)
        self.mem_eff.merge(other.mem_eff)

    def state(self):
        """A plain form for storing (JSON): numbers and flat lists."""
        return [[getattr(self, k) for k in self.FIELDS], [self.sums[k] for k in SUMMED],
                self.cpu_eff.state(), self.mem_eff.state()]

    @classmethod
    def of_state(cls, key, state):
        g = cls(key)
        counts, sums, cpu, mem = state
        for k, v in zip(cls.FIELDS, counts):
            setattr(g, k, v)
        g.sums = dict(zip(SUMMED, sums))
        g.cpu_eff, g.mem_eff = Values.of(*cpu), Values.of(*mem)
        return g

    def model(self):
        return dict({"key": self.key, "jobs": self.jobs, "goodput": self.goodput,
                     "badput": self.badput, "unknown": self.unknown,
                     "unconfirmed": self.unconfirmed, "local": self.local,
                     "suspects": self.suspects, "incomplete": self.incomplete,
                     "cpu_efficiency_percent": distribution(self.cpu_eff),
                     "mem_efficiency_percent": distribution(self.mem_eff)}, **self.sums)


def run_of(records):
    """(record, summary, figures) of one job run from its nodes' ended records: one node's
    as they are; several nodes' with their hours and core-hours added up, the wall time
    and memory efficiency of the longest and the tightest node, CPU efficiency from the
    added core-hours, badput if any node's was, and each node's suspicions."""
    if len(records) == 1:
        rec = records[0]
        return rec, rec["summary"], job_efficiency.figures_of(rec)
    figs = [job_efficiency.figures_of(r) for r in records]
    summaries = [r["summary"] for r in records]
    s = dict(summaries[0], wall_seconds=max(x.get("wall_seconds") or 0 for x in summaries),
             samples=sum(x.get("samples") or 0 for x in summaries))
    for _k, field, _f in ENERGY:      # every node's share of its own node's energy
        vals = [x[field] for x in summaries if x.get(field) is not None]
        s[field] = sum(vals) if vals else None
    if any(x.get("energy_joules") is not None and x.get("energy_error_joules") is None
           for x in summaries):       # a node's energy without a bound: the run has none
        s["energy_error_joules"] = s["co2e_error_grams"] = None
    f = dict(figs[0])
    for k in SUMS[1:] + ("cores_allocated", "mem_allocated_bytes", "gpus_allocated"):
        vals = [x[k] for x in figs if x.get(k) is not None]
        f[k] = sum(vals) if vals else None
    used, held = f.get("used_core_hours"), f.get("provisioned_core_hours")
    f["cpu_efficiency_percent"] = round(100.0 * used / held, 2) if used is not None and held \
        else None
    mem = [x["mem_efficiency_percent"] for x in figs if x.get("mem_efficiency_percent") is not None]
    f["mem_efficiency_percent"] = max(mem) if mem else None
    worst = next((x for x in figs if x.get("outcome") == BADPUT), None) or \
        next((x for x in figs if x.get("outcome") != GOODPUT), figs[0])
    f["outcome"], f["outcome_reason"] = worst.get("outcome"), worst.get("outcome_reason")
    for k in ("cpu_idle_samples", "gpu_idle_samples"):
        vals = [x[k] for x in figs if x.get(k) is not None]
        f[k] = sum(vals) if vals else None
    f["mem_rising"] = int(any(x.get("mem_rising") for x in figs))
    rates = [x["mem_growth_bytes_per_hour"] for x in figs if x.get("mem_rising")]
    f["mem_growth_bytes_per_hour"] = max(rates) if rates else None
    rec = dict(records[0], host=", ".join(sorted({r.get("host") or "" for r in records})),
               summary=s)
    return rec, s, f


def counted(records, accounts=()):
    """(the records that count, the claims by other users among them: jobmon.report.
    ownership), and the verdicts."""
    verdicts = ownership.settle(records, accounts)
    keep = [r for r in records if verdicts[id(r)] != ownership.CLAIM]
    return keep, [r for r in records if verdicts[id(r)] == ownership.CLAIM], verdicts


def _waster_order(w):
    row = w[1]
    return (-w[0], row["job"], row.get("start_time") or 0, row.get("host") or "")


def _suspect_order(row):
    return (-len(row["kinds"]), row["job"], row.get("start_time") or 0, row.get("host") or "")


class Rollup:
    """What a report over job runs needs of them, mergeable with another Rollup of other
    runs (other hours): per group of each dimension in `dims` counts, sums and efficiency
    distributions, the total, the runs still running, the top wasters, the suspects and
    the claims by other users (the first KEPT of each in the report's order, and how many
    suspects and claims), and each batch's tasks for the right-sizing
    (jobmon.report.rightsize). accounts: the site's pilot accounts (ownership)."""

    def __init__(self, limits=None, dims=GROUP_KEYS, accounts=()):
        self.limits = dict(DEFAULTS, **(limits or {}))
        self.dims, self.accounts = tuple(dims), tuple(accounts)
        self.groups = {by: {} for by in self.dims}
        self.total = _Group("all")
        self.running = self.suspect_count = self.claim_count = 0
        self.wasters, self.suspects = [], []       # [waste, job row]; job rows with why
        self.claims = []                           # ownership.claim_row, in time order
        self.tasks = {}                            # batch -> {job id: task}

    def add(self, records):
        """Add records read together: a claim is known from the scheduler's stored word
        and from the other records of its job among them (ownership.settle)."""
        from . import rightsize
        records, claims, verdicts = counted(records, self.accounts)
        owners = ownership.known_owners(records, verdicts)
        claims = [r for r in claims if not is_step(r)]
        self.claim_count += len(claims)
        self.claims += [ownership.claim_row(r, ownership.owners_for(owners, r))
                        for r in claims[:KEPT - len(self.claims)]]
        for run in job_runs(records):
            if not all(r.get("summary") for r in run):
                self.running += 1
                continue
            rec, s, figures = run_of(run)
            why = suspicions(s, figures, self.limits)
            verdict, held = verdicts[id(run[0])], not in_pilot(rec)
            short = bool(completeness.below(s, self.limits["min_completeness_percent"]))
            for by in self.dims:
                key = group_key(rec, by)
                g = self.groups[by].get(key)
                if g is None:
                    g = self.groups[by][key] = _Group(key)
                g.add(s, figures, why, verdict, held, short)
            self.total.add(s, figures, why, verdict, held, short)
            waste = (figures.get("idle_canonical_core_hours") or 0) + \
                (figures.get("idle_gpu_hours") or 0)
            if waste > 0:
                self.wasters.append([waste, job_row(rec, figures)])
            if why:
                self.suspect_count += 1
                self.suspects.append(dict(job_row(rec, figures), why=[w[1] for w in why],
                                          kinds=[w[0] for w in why]))
        self._trim()
        rightsize.merge_tasks(self.tasks, rightsize.tasks_of(records))
        return self

    def _trim(self):
        self.wasters = sorted(self.wasters, key=_waster_order)[:KEPT]
        self.suspects = sorted(self.suspects, key=_suspect_order)[:KEPT]
        self.claims = self.claims[:KEPT]

    def merge(self, other):
        """Merge the rollup of later runs (claims are kept in the order merged)."""
        from . import rightsize
        for by in self.dims:
            mine = self.groups[by]
            for key, g in other.groups[by].items():
                if key in mine:
                    mine[key].merge(g)
                else:
                    mine[key] = g
        self.total.merge(other.total)
        self.running += other.running
        self.suspect_count += other.suspect_count
        self.claim_count += other.claim_count
        self.wasters += other.wasters
        self.suspects += other.suspects
        self.claims += other.claims
        self._trim()
        rightsize.merge_tasks(self.tasks, other.tasks)
        return self

    def model(self, by="user", since=None, until=None):
        """The report model, grouped by `by` (one of self.dims). Groups are ordered by idle
        canonical core-hours, then idle GPU-hours, then jobs (most first); top wasters by
        idle canonical core-hours + idle GPU-hours. Claims by other users count nowhere:
        listed apart ("claims"); each group says how many of its runs no scheduler vouched
        for ("unconfirmed": not said yet, "local": none)."""
        ordered = sorted((g.model() for g in self.groups[by].values()),
                         key=lambda g: (-g["idle_canonical_core_hours"], -g["idle_gpu_hours"],
                                        -g["jobs"], g["key"]))
        return {"since": since, "until": until, "by": by, "jobs": self.total.jobs,
                "running": self.running, "total": self.total.model(), "groups": ordered,
                "top_wasters": [row for _w, row in self.wasters[:self.limits["top"]]],
                "suspects": self.suspects[:self.limits["suspects"]],
                "suspect_count": self.suspect_count,
                "claims": self.claims[:self.limits["suspects"]],
                "claim_count": self.claim_count}


def aggregate(records, by="user", since=None, until=None, limits=None, accounts=()):
    """The report model of `records` grouped by `by` (GROUP_KEYS). accounts: the site's
    pilot accounts."""
    if by not in GROUP_KEYS:
        raise ValueError(f"cannot group by {by!r}: one of {', '.join(GROUP_KEYS)}")
    return Rollup(limits, (by,), accounts).add(records).model(by, since, until)
