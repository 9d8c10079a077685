"""Hourly rollups of the job summaries: `jobmon report` over weeks of a busy cluster reads a
few thousand small aggregates instead of a million records (docs/reports.md).

An hour's rollup is the aggregate.Rollup of the job runs that started in it, stored in
parts: "run" (the total, runs still running, top wasters, suspects, each batch's task
count), "by:<dimension>" (that dimension's groups) and "batch" (one batch's tasks, keyed
by a hash of the batch). The report merges the stored hours of its range with the hours
it reads live -- those without a rollup, and the partial hour at its end -- an hour at a
time, never more;
right-sizing then reads the tasks of the largest batches only. A multi-node run whose
nodes started in different hours counts once in each.

Who keeps them: on the embedded store the report itself (it saves each past hour it read
live); on InfluxDB `jobmon rollup`, run hourly by the site with write access (the
report's readers may only read). A rollup counts the runs still running when it was
made as running, and the runs no scheduler has vouched for yet as unconfirmed: the
report makes an hour again while runs in it were running, and the embedded store drops
the rollups of the hours whose records it corrects; `jobmon rollup` makes one again until
its runs ended and the scheduler's word is in (or reconciliation gave up). Claims by
other users are known, as a report over the records knows them, from the scheduler's
stored word and the records of the same job in the hour.

Read side, standard library only.
"""
import hashlib
import json
import time

from . import aggregate, rightsize
from .job_efficiency import INPUTS
from .reconcile import GIVE_UP_SECONDS

HOUR, DAY = 3600, 86400
DAILY = "d:"             # a day's parts: "d:run", "d:by:<dimension>" (its 24 hours merged)
VERSION = 5          # of the stored form: a rollup of another is made again
LATE_SECONDS = 86400     # an hour younger than this may still get points (a node's shipper
                         # catching up): `jobmon rollup` makes it again


def by_hour(store, since, until, user=None, settle=None):
    """(hour, its records in [since, until)) of every hour touching [since, until), as the
    store reads them (Store.summaries_by_hour: an hour or a day at a time, never all).
    settle: what the records go through first (the scheduler's word the store lacks yet)."""
    for hour, records in store.summaries_by_hour(since, until, user, fields=INPUTS):
        yield hour, settle(records) if settle else records


def made_with(roll):
    """What else than the runs a rollup depends on: the thresholds and pilot accounts."""
    return [roll.limits[k] for k in ("suspect_min_samples", "idle_samples_percent")] + \
        [sorted(roll.accounts)]


def settled(roll, end):
    """Will a rollup of runs that started before `end` stay as it is: none was running,
    and none unconfirmed while the scheduler's word may still come."""
    return not roll.running and not (roll.total.unconfirmed and
                                     roll.built < end + GIVE_UP_SECONDS)


def whole(since, until, size=3600):
    """The whole hours (or days: size 86400) [t, t + size) inside [since, until)."""
    t = -(-int(since) // size) * size
    while t + size <= until:
        yield t
        t += size


def batch_hash(batch):
    return hashlib.sha1(json.dumps(list(batch)).encode()).hexdigest()[:16]


def parts(roll, counts=None, prefix=""):
    """[(part, key, text)] of a Rollup of every dimension: an hour's, with its batches'
    tasks; a day's (prefix DAILY), with their counts only."""
    counts = {b: len(t) for b, t in roll.tasks.items()} if counts is None else counts
    run = {"v": VERSION, "built": time.time(), "total": roll.total.state(),
           "running": roll.running, "suspect_count": roll.suspect_count,
           "wasters": roll.wasters, "suspects": roll.suspects,
           "claim_count": roll.claim_count, "claims": roll.claims,
           "limits": made_with(roll), "batches": [[list(b), n] for b, n in counts.items()]}
    out = [(prefix + "run", "-", json.dumps(run))]
    for by, groups in roll.groups.items():
        out.append((f"{prefix}by:{by}", "-",
                    json.dumps([[k, g.state()] for k, g in groups.items()])))
    if not prefix:
        for b, tasks in roll.tasks.items():
            out.append(("batch", batch_hash(b), json.dumps([list(b), tasks])))
    return out


def of_parts(texts, dims, limits, prefix="", accounts=()):
    """(Rollup of `dims` without its batches' tasks, {batch: tasks}) from a stored hour's
    or day's {part: text}; None when it was made with other thresholds, pilot accounts
    or another version, or lacks a dimension."""
    run = json.loads(texts[prefix + "run"])
    roll = aggregate.Rollup(limits, dims, accounts)
    if run["v"] != VERSION or run["limits"] != made_with(roll) or \
            any(f"{prefix}by:{by}" not in texts for by in dims):
        return None
    roll.total = aggregate._Group.of_state("all", run["total"])
    roll.running, roll.suspect_count = run["running"], run["suspect_count"]
    roll.wasters, roll.suspects = run["wasters"], run["suspects"]
    roll.claim_count, roll.claims, roll.built = run["claim_count"], run["claims"], run["built"]
    for by in dims:
        roll.groups[by] = {k: aggregate._Group.of_state(k, st)
                           for k, st in json.loads(texts[f"{prefix}by:{by}"])}
    return roll, {tuple(b): n for b, n in run["batches"]}


def day_parts(store, day, limits, accounts=()):
    """The parts of a day's rollup, its 24 stored hours merged; None while one is missing
    (or was made otherwise)."""
    texts = {}
    for h, part, _k, text in store.rollups(
            ("run",) + tuple(f"by:{b}" for b in aggregate.GROUP_KEYS), day, day + DAY):
        texts.setdefault(h, {})[part] = text
    roll, counts = aggregate.Rollup(limits, accounts=accounts), {}
    for h in whole(day, day + DAY):
        got = "run" in texts.get(h, {}) and of_parts(texts[h], aggregate.GROUP_KEYS, limits,
                                                        accounts=accounts)
        if not got:
            return None
        roll.merge(got[0])
        for b, n in got[1].items():
            counts[b] = counts.get(b, 0) + n
    return parts(roll, counts, DAILY)


class Report:
    """A report over [since, until) from a store: its stored days and hours, and live
    reads of the rest."""

    def __init__(self, store, by, limits, user=None, save=False, accounts=(), settle=None):
        self.store, self.by, self.limits, self.user = store, by, dict(limits), user
        self.accounts, self.settle = tuple(accounts), settle
        self.save = save and user is None and hasattr(store, "save_rollup")
        self.roll = aggregate.Rollup(limits, (by,), accounts)
        self.counts = {}            # batch -> tasks, of the stored hours
        self.stored = {}            # batch -> [(start, end) of rollups holding its tasks]
        self.hours = {"stored": 0, "live": 0}

    def read(self, since, until):
        days = self._stored(DAILY, since, until)
        t, unmade = since, []
        for day in whole(since, until, DAY):
            got = self._usable(days.get(day), DAILY)
            if got:
                self._hours(t, day)
                self._add(day, day + DAY, *got)
                self.hours["stored"] += DAY // HOUR
                t = day + DAY
            elif day + DAY <= time.time():
                unmade.append(day)
        self._hours(t, until)
        for day in unmade if self.save else ():     # the days all of whose hours are kept
            made = day_parts(self.store, day, self.limits, self.accounts)
            if made:
                self.store.save_rollup(day, made)
        return self

    def _stored(self, prefix, since, until):
        """{start: {part: text}} of the stored rollups (days': prefix DAILY) in range."""
        out = {}
        if self.user is None and since < until:    # the rollups hold every user's runs
            for t, part, _key, text in self.store.rollups(
                    (prefix + "run", f"{prefix}by:{self.by}"), since, until):
                out.setdefault(t, {})[part] = text
        return out

    def _usable(self, texts, prefix=""):
        """A stored rollup, unless the report would make it anew (it keeps the rollups:
        while runs in it were running; a correction of the store's records drops those
        of their hours)."""
        got = texts and prefix + "run" in texts and of_parts(texts, (self.by,), self.limits,
                                                             prefix, self.accounts)
        return got if got and not (self.save and got[0].running) else None

    def _hours(self, since, until):
        stored, t = self._stored("", since, until), since
        for h in whole(since, until):
            got = self._usable(stored.get(h))
            if got:
                self._live(t, h)
                self._add(h, h + HOUR, *got)
                self.hours["stored"] += 1
                t = h + HOUR
        self._live(t, until)

    def _add(self, start, end, roll, counts):
        """A stored rollup of [start, end), and where its batches' tasks are."""
        self.roll.merge(roll)
        for b, n in counts.items():
            self.counts[b] = self.counts.get(b, 0) + n
            self.stored.setdefault(b, []).append((start, end))

    def _live(self, since, until):
        """Read [since, until); keep (save) the whole past hours' rollups when it can --
        and then, as for a stored hour, not their batches' tasks."""
        for h, records in by_hour(self.store, since, until, self.user, self.settle):
            if self.save and h >= since and h + HOUR <= min(until, time.time()):
                full = aggregate.Rollup(self.limits, accounts=self.accounts).add(records)
                self.store.save_rollup(h, parts(full))
                counts = {b: len(t) for b, t in full.tasks.items()}
                full.tasks = {}
                self._add(h, h + HOUR, full, counts)
            else:
                self.roll.merge(aggregate.Rollup(self.limits, (self.by,), self.accounts)
                                .add(records))
            self.hours["live"] += 1

    def batches(self, top):
        """The right-sizing of the `top` largest batches: their counts from every hour,
        then the tasks of the largest from the stored hours. A count may count a task
        that ran in two hours twice, never less: batches are read, largest count first,
        until none left unread could rank among the `top` read."""
        counts = dict(self.counts)
        for b, tasks in self.roll.tasks.items():
            counts[b] = counts.get(b, 0) + len(tasks)
        exact = {}
        for b in sorted(counts, key=lambda b: (-counts[b], b)):
            ranks = sorted((-len(t), k) for k, t in exact.items())
            if len(ranks) >= top and (-counts[b], b) > ranks[top - 1]:
                break
            exact[b] = self._tasks(b)
        return rightsize.suggestions(exact, self.limits, top)

    def _tasks(self, batch):
        tasks = {}
        spans = self.stored.get(batch)
        if spans:
            for _h, _p, _k, text in self.store.rollups(("batch",), min(a for a, _b in spans),
                                                       max(b for _a, b in spans),
                                                       keys=[batch_hash(batch)]):
                b, t = json.loads(text)
                if tuple(b) == batch:
                    rightsize.merge_tasks(tasks, {batch: t})
        rightsize.merge_tasks(tasks, {batch: self.roll.tasks.get(batch, {})})
        return tasks.get(batch, {})

    def model(self, since, until, top):
        m = self.roll.model(self.by, since, until)
        m["batches"] = self.batches(top)
        m["hours"] = dict(self.hours)
        return m


# what make() keeps of each stored "run" part to tell whether to make it again (not its
# wasters, suspects and batches: a month of those is ~300 MB at a million jobs)
STATE = ("v", "built", "running", "total", "limits")


def stale(hour, run):
    """Should the stored rollup of `hour` (its "run" part) be made again: it counted runs
    still running or unconfirmed (settled()), or was made while points of the hour could
    still arrive."""
    if run["v"] != VERSION:
        return True
    roll = aggregate.Rollup()
    roll.running, roll.built = run["running"], run["built"]
    roll.total = aggregate._Group.of_state("all", run["total"])
    return not settled(roll, hour + HOUR) or run["built"] < hour + HOUR + LATE_SECONDS


def make(store, since, until, save, limits=None, remake=stale, accounts=(), settle=None):
    """Rollups of the whole past hours in [since, until) without one (or that `remake`
    says to make again, or made with other thresholds or pilot accounts), read live
    (through `settle`, as by_hour) and handed to save(start, parts); then those of the
    whole past days among them. Returns (hours made, runs in them)."""
    stored = {}
    for t, p, _k, text in store.rollups(("run", DAILY + "run"), since, until):
        run = json.loads(text)
        stored[t, p] = {k: run.get(k) for k in STATE}
    now = min(until, time.time())
    made_now = made_with(aggregate.Rollup(limits, accounts=accounts))
    todo = [h for h in whole(since, now) if (h, "run") not in stored or remake(
        h, stored[h, "run"]) or stored[h, "run"].get("limits") != made_now]
    days = {h // DAY * DAY for h in todo} | {
        d for d in whole(since, now, DAY) if (d, DAILY + "run") not in stored}
    made = runs = 0
    while todo:                  # each stretch of consecutive hours in one read
        n = next((k for k in range(1, len(todo)) if todo[k] != todo[0] + k * HOUR), len(todo))
        for h, records in by_hour(store, todo[0], todo[n - 1] + HOUR, settle=settle):
            roll = aggregate.Rollup(limits, accounts=accounts).add(records)
            save(h, parts(roll))
            made += 1
            runs += roll.total.jobs + roll.running
        todo = todo[n:]
    for day in sorted(d for d in days if since <= d and d + DAY <= now):
        day_made = day_parts(store, day, limits, accounts)
        if day_made:
            save(day, day_made)
    return made, runs
