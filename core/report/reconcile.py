"""Reconciliation: once a run is over, its stored record gets what only the scheduler and
the run's samples can tell -- the same rules `jobmon query` applies at read time, written
into the record so that every aggregate (`jobmon report`, `jobmon pilot`, the dashboards)
uses them.

For each record that needs it (`reconciled` 0 or absent, or no end-of-job record at all):

  1. a run whose end-of-job record never came (the scheduler SIGKILLed its sampler with
     it, its node went down) and that is over gets its samples' fold, marked cut short
     (summary.from_samples);
  2. the scheduler's record of that run is looked up -- one call per source for all the
     records of a pass (Source.lookup_many) -- and where it says how the run ended, the
     record gets the scheduler's outcome, state, codes, who cancelled it and whose job it
     was (report.scheduler.ending), and `reconciled` 1;
  3. a run the scheduler has no final record of yet is left for a later pass (its
     accounting is late, or down); after GIVE_UP_SECONDS, or where no source is
     configured, it gets `reconciled` 1 with `scheduler_state` none, so it is not looked
     up forever;
  4. whose job it is (jobmon.report.ownership): `ownership` own where the scheduler's
     records of the job name the record's user, claim where they name another -- settled
     at once, whatever the run's end: a claim's figures count nowhere -- unconfirmed
     where they name nobody. A `jobmon run` record (no scheduler) under an id the
     scheduler knows is looked up too: under another user's job id it is a claim, else
     local.

Idempotent: a record is rewritten with the same values (InfluxDB: the same series and
time, so the point's fields are replaced). Nothing here blocks a job or the shipper: this
runs in its own command (`jobmon reconcile`), or in a reader on its records in memory.
Read side: standard library, plus whatever the scheduler's source loads when asked.
"""
import re
import time

from .. import schedulers
from ..config.ownership import pilot_accounts
from ..summary import from_samples
from .model import STALE_INTERVALS, STALE_SECONDS
from .ownership import CLAIM, SCHEDULERS, judge
from .runs import is_step
from .scheduler import ending, lookup_id, pick

GIVE_UP_SECONDS = 2 * 86400.0   # after the run's end: no record will come any more
# a `jobmon run` id a scheduler could know: any registered scheduler's id syntax
SCHEDULER_ID = re.compile("|".join(f"(?:{s.id_pattern})" for s in schedulers.all()))


class Plan:
    """What a pass found: `writes` [(record, its new summary)], and how many records were
    folded (cut short), settled (the scheduler's end applied), claims (the scheduler
    says the job is another user's), none (nothing to apply:
    no scheduler, no source, or given up), waiting (the scheduler has no final record
    yet), running (not over), unavailable (the source could not be asked: `errors`)."""

    def __init__(self):
        self.writes = []
        self.counts = dict.fromkeys(("folded", "settled", "claims", "none", "waiting",
                                     "running", "unavailable"), 0)
        self.errors = []
        self.unavailable = set()   # schedulers whose source failed

    def as_dict(self):
        return dict(self.counts, written=len(self.writes), errors=self.errors)


def needs(record, unmarked=True):
    """True for a record whose summary is not reconciled yet (or that has none).
    unmarked False: only those whose summary says `reconciled` 0 (written before jobmon
    reconciled, a summary has no such field)."""
    s = record.get("summary")
    if not s or s.get("end_time") is None:
        return True
    return not s.get("reconciled") and (unmarked or s.get("reconciled") == 0)


def job_of(record):
    """The job the scheduler knows the record's run by: a step's is its job's."""
    return (record.get("tags") or {}).get("parent_job") if is_step(record) \
        else record.get("job")


def plan(store, records, cfg=None, now=None, sources=None, final_without_source=True):
    """The Plan for `records` (a store's job dicts): what to write into each that needs
    it. sources: {scheduler: Source or None} (default: the configured ones);
    final_without_source: a record whose scheduler has no source here gets `reconciled`
    1 (the node's reconciler) or is left as it is (a reader)."""
    now = time.time() if now is None else now
    p = Plan()
    accounts = pilot_accounts(cfg)
    todo = [rec for rec in records if needs(rec)]
    found = _lookups(todo, cfg, sources, p)
    for rec in todo:
        scheduler = rec.get("scheduler")
        got = found.get(scheduler)
        end = None
        if got is not None:
            end = pick(scheduler, got.get(lookup_id(rec, job_of(rec))) or [], job_of(rec),
                       rec.get("run"))
        end = end.as_dict() if end else None
        summary, folded = _summary(store, rec, now, end)
        if summary is None:
            p.counts["running"] += 1
            continue
        owners = _owners(rec, found)
        verdict = judge(rec, owners, accounts)
        local = scheduler not in SCHEDULERS
        given_up = now - (summary.get("end_time") or now) > GIVE_UP_SECONDS
        settled = ending(summary, end)
        new = None
        if verdict == CLAIM:    # whatever its end: it counts nowhere
            p.counts["claims"] += 1
            new = dict(summary, ownership=CLAIM, reconciled=1,
                       scheduler_user=", ".join(sorted(owners)))
        elif settled:
            p.counts["settled"] += 1
            new = dict(summary, ownership=verdict, **settled)
            new["advice"] = _advice(new, cfg)   # the scheduler's end may change it
        elif _asked(rec) & p.unavailable and not (local and given_up):
            p.counts["unavailable"] += 1
        elif local or (got is None and final_without_source) or given_up:
            p.counts["none"] += 1
            new = dict(summary, reconciled=1, scheduler_state="none", ownership=verdict)
        else:
            p.counts["waiting"] += 1
        if new is None and folded:
            new = summary   # its figures now, the scheduler's end on a later pass
        if new is not None:
            p.writes.append((rec, new))
        p.counts["folded"] += folded
    return p


def _advice(summary, cfg):
    """The run's advice (jobmon.summary.advice) by the site's thresholds, as the summary has it."""
    from ..summary.advice import summary_text
    from ..config.report import defaults
    try:
        report = cfg["report"]
    except (TypeError, KeyError):   # no site configuration here
        report = defaults()
    return summary_text(summary, report)


def _asked(rec):
    """The schedulers asked about a record: its own; for a `jobmon run` record under an
    id a scheduler could know, every one."""
    if rec.get("scheduler") in SCHEDULERS:
        return {rec["scheduler"]}
    return set(SCHEDULERS) if SCHEDULER_ID.fullmatch(str(rec.get("job") or "")) else set()


def _owners(rec, found):
    """The users the schedulers' records of the record's job name."""
    job = lookup_id(rec, job_of(rec))
    return {getattr(r, "user", None) or getattr(r, "owner", None)     # either name
            for s in _asked(rec) for r in (found.get(s) or {}).get(job, ())} - {None, ""}


def _summary(store, rec, now, end=None):
    """(the record's summary to reconcile, folded?): its end-of-job record, or for a run
    that is over without one, its samples' fold; (None, False) for a run still going.
    Over: the shipper marked it ended, the scheduler's record of it (`end`) says it
    ended, or its samples stopped coming."""
    s = rec.get("summary")
    if s and s.get("end_time") is not None:
        return s, False
    if not s and ending({}, end) is None:
        latest = getattr(store, "last_samples", None)
        if latest is None:
            return None, False   # InfluxDB: the shipper marks a run that is over
        last = latest(rec, 1)
        last = last[-1]["time"] / 1e9 if last else rec.get("start_time") or now
        if now - last <= max(STALE_INTERVALS * (rec.get("interval") or 10.0), STALE_SECONDS):
            return None, False
    folded = from_samples(rec, store.samples(rec), cut_short=True)
    for k in ("job", "host", "user", "tags"):
        folded[k] = rec.get(k)
    return dict(s or {}, **folded), True


def _lookups(todo, cfg, sources, p):
    """{scheduler: {job id: its records}} of every scheduler with records to settle; a
    scheduler without a source here is absent, one whose source failed too (its name in
    p.unavailable; its error in p.errors where one of its own jobs waits on it -- asked
    only about `jobmon run` ids, it holds those back, and the pass goes on)."""
    ids, own = {}, set()
    for rec in todo:
        for scheduler in _asked(rec):
            ids.setdefault(scheduler, set()).add(lookup_id(rec, job_of(rec)))
        own.add(rec.get("scheduler"))
    found = {}
    for scheduler, wanted in ids.items():
        try:
            src = sources[scheduler] if sources and scheduler in sources else \
                schedulers.get(scheduler).accounting().source(cfg)
            if src is not None:
                found[scheduler] = src.lookup_many(sorted(wanted))
        except Exception as e:   # accounting down, bindings missing: a later pass
            p.unavailable.add(scheduler)
            if scheduler in own:
                p.errors.append(f"{scheduler}: {e}")
    return found


def apply(records, p):
    """The plan's summaries put into the records (in memory), for a reader."""
    new = {id(rec): s for rec, s in p.writes}
    for rec in records:
        if id(rec) in new:
            rec["summary"] = new[id(rec)]
            rec.pop("figures", None)   # job_efficiency.figures_of's, of the old summary
    return records
