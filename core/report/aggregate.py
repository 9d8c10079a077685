"""`jobmon report` over a time range: many jobs' summaries -> groups, distributions, waste,
top wasters, suspects, goodput and badput. A model (plain dicts and lists), no rendering.

Input: the records a store's summaries() gives (job dicts with "summary", None while the
job runs): one per job run per node, and one per Slurm step. Everything here counts job
runs: a step's record is left out (its job's own record holds its figures), and the
records of a multi-node run are one run (runs.job_runs). A record's figures come from
job_efficiency.efficiency_of (stored fields first, else computed from totals and tags).

Read side, standard library only.
"""
import math

from ..printable import size
from . import job_efficiency, ownership
from .canonical import BADPUT, GOODPUT
from .runs import is_step, job_runs

GROUP_KEYS = ("user", "group", "account", "site", "pool", "queue", "partition")
NONE = "(none)"
# thresholds and sizes; the CLI passes the config's [report] values over these
DEFAULTS = {
    "top": 10,                      # top wasters shown
    "suspect_min_samples": 5,       # idle samples (CPU at ~0, GPUs at 0 %) before a suspect
    "idle_samples_percent": 50.0,   # ... and this share of its samples
    "suspects": 20,                 # suspects listed (the count covers all)
}
# summed per group (hours)
SUMS = ("wall_hours", "provisioned_core_hours", "used_core_hours", "idle_core_hours",
        "idle_canonical_core_hours", "gpu_hours", "idle_gpu_hours")
# the node reader's energy, summed per group from the summaries that have it (energy_jobs
# of them: a node without a reader gives none): (sum, summary field, factor)
ENERGY = (("energy_kwh", "energy_joules", 1 / 3.6e6), ("co2e_kg", "co2e_grams", 1e-3))


def group_key(record, by):
    """The value of dimension `by` for a record: its user, or a tag the plugins set
    (HTCondor's accounting group is `account`; a glidein's GLIDEIN_Site is its site; the
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


def quantile(values, q):
    """The q-quantile (0..1) of `values` by linear interpolation between the closest ranks
    (numpy's default): sorted x[0..n-1], position q*(n-1). None for no values."""
    xs = sorted(values)
    if not xs:
        return None
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def distribution(values):
    """p10, p50, p90 and n of the known values."""
    xs = sorted(v for v in values if v is not None)
    return {"n": len(xs), "p10": quantile(xs, 0.1), "p50": quantile(xs, 0.5),
            "p90": quantile(xs, 0.9)}


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
            f" ({size(rate)}/h)" if rate is not None else "")))
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
    def __init__(self, key):
        self.key = key
        self.jobs = self.goodput = self.badput = self.unknown = 0
        self.unconfirmed = self.local = 0    # runs counted that no scheduler vouched for
        self.sums = dict.fromkeys(SUMS + tuple(e[0] for e in ENERGY), 0.0)
        self.sums["energy_jobs"] = 0
        self.cpu_eff, self.mem_eff = [], []
        self.suspects = 0

    def add(self, summary, figures, suspect, verdict=ownership.OWN):
        self.jobs += 1
        self.unconfirmed += verdict == ownership.UNCONFIRMED
        self.local += verdict == ownership.LOCAL
        outcome = figures.get("outcome")
        if outcome == GOODPUT:
            self.goodput += 1
        elif outcome == BADPUT:
            self.badput += 1
        else:
            self.unknown += 1
        self.sums["wall_hours"] += (summary.get("wall_seconds") or 0) / 3600.0
        for k in SUMS[1:]:
            self.sums[k] += figures.get(k) or 0.0
        if summary.get("energy_joules") is not None:
            self.sums["energy_jobs"] += 1
        for k, field, factor in ENERGY:
            self.sums[k] += (summary.get(field) or 0.0) * factor
        if figures.get("cpu_efficiency_percent") is not None:
            self.cpu_eff.append(figures["cpu_efficiency_percent"])
        if figures.get("mem_efficiency_percent") is not None:
            self.mem_eff.append(figures["mem_efficiency_percent"])
        self.suspects += bool(suspect)

    def model(self):
        return dict({"key": self.key, "jobs": self.jobs, "goodput": self.goodput,
                     "badput": self.badput, "unknown": self.unknown,
                     "unconfirmed": self.unconfirmed, "local": self.local,
                     "suspects": self.suspects,
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


def aggregate(records, by="user", since=None, until=None, limits=None, accounts=()):
    """The report model of `records` grouped by `by` (GROUP_KEYS). Groups are ordered by
    idle canonical core-hours, then idle GPU-hours, then jobs (most first); top wasters by
    idle canonical core-hours + idle GPU-hours. Claims by other users count nowhere:
    listed apart ("claims"); each group says how many of its runs no scheduler vouched for
    ("unconfirmed": not said yet, "local": none). accounts: the site's pilot accounts."""
    if by not in GROUP_KEYS:
        raise ValueError(f"cannot group by {by!r}: one of {', '.join(GROUP_KEYS)}")
    limits = dict(DEFAULTS, **(limits or {}))
    records, claims, verdicts = counted(records, accounts)
    owners = ownership.known_owners(records, verdicts)
    groups, total = {}, _Group("all")
    wasters, suspects, running = [], [], 0
    for run in job_runs(records):
        if not all(r.get("summary") for r in run):
            running += 1
            continue
        rec, s, figures = run_of(run)
        why = suspicions(s, figures, limits)
        key = group_key(rec, by)
        g = groups.get(key)
        if g is None:
            g = groups[key] = _Group(key)
        verdict = verdicts[id(run[0])]
        g.add(s, figures, why, verdict)
        total.add(s, figures, why, verdict)
        waste = (figures.get("idle_canonical_core_hours") or 0) + \
            (figures.get("idle_gpu_hours") or 0)
        if waste > 0:
            wasters.append((waste, rec, figures))
        if why:
            suspects.append(dict(job_row(rec, figures), why=[w[1] for w in why],
                                 kinds=[w[0] for w in why]))
    wasters.sort(key=lambda w: (-w[0], str(w[1].get("job"))))
    suspects.sort(key=lambda x: (-len(x["kinds"]), x["job"]))
    ordered = sorted((g.model() for g in groups.values()),
                     key=lambda g: (-g["idle_canonical_core_hours"], -g["idle_gpu_hours"],
                                    -g["jobs"], g["key"]))
    return {"since": since, "until": until, "by": by, "jobs": total.jobs, "running": running,
            "total": total.model(), "groups": ordered,
            "top_wasters": [job_row(r, f) for _w, r, f in wasters[:limits["top"]]],
            "suspects": suspects[:limits["suspects"]], "suspect_count": len(suspects),
            "claims": [ownership.claim_row(r, ownership.owners_for(owners, r))
                       for r in claims if not is_step(r)][:limits["suspects"]],
            "claim_count": sum(not is_step(r) for r in claims)}
