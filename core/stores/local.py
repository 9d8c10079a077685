"""The embedded default store: one SQLite file, nothing to install or start.

Safe for many concurrent jobs: WAL journal (readers never block the writer), a busy
timeout, and samples that could not be written are kept and retried, never dropped.
"""
import os
import time

# the sqlite3 package is this module plus datetime adapters, which no column here uses;
# importing them would cost every job ~4 ms of CPU at its start
import _sqlite3 as sqlite3

from ..sinks.jsontext import dumps
from ..sinks import Sink
from .interface import Store

SETUP_WAIT = 5.0      # seconds a new store's first users wait for each other (its busy timeout)


def _locked(e):
    return "locked" in str(e) or "busy" in str(e)


SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    job TEXT NOT NULL,
    host TEXT, user TEXT, method TEXT,
    start_time REAL, end_time REAL,
    info TEXT NOT NULL,       -- job description (JSON): tags, command, interval
    summary TEXT              -- end-of-job record (JSON), NULL while running
);
CREATE INDEX IF NOT EXISTS runs_job ON runs (job, start_time);
CREATE TABLE IF NOT EXISTS samples (
    run INTEGER NOT NULL REFERENCES runs (id),
    time INTEGER NOT NULL,    -- ns since the epoch
    data TEXT NOT NULL        -- the sample's fields (JSON)
);
CREATE INDEX IF NOT EXISTS samples_run ON samples (run, time);
CREATE TABLE IF NOT EXISTS procs (     -- the per-process breakdown, at its own rate
    run INTEGER NOT NULL REFERENCES runs (id),
    time INTEGER NOT NULL,
    data TEXT NOT NULL        -- the breakdown record (JSON)
);
CREATE INDEX IF NOT EXISTS procs_run ON procs (run, time);
"""
# what only reports use, made by the first report (a job's writer never pays for it)
REPORT_SCHEMA = """
CREATE INDEX IF NOT EXISTS runs_start ON runs (start_time);
CREATE TABLE IF NOT EXISTS rollups (   -- jobmon.report.rollup: an hour's runs, aggregated
    hour INTEGER NOT NULL, part TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL,
    PRIMARY KEY (part, key, hour)
);
CREATE INDEX IF NOT EXISTS rollups_hour ON rollups (hour);
"""


class LocalStore(Sink, Store):
    def __init__(self, path):
        self.path = path
        d = os.path.dirname(path)
        if d:
            os.makedirs(d, mode=0o700, exist_ok=True)
        self.db = sqlite3.connect(path, timeout=5, isolation_level=None,
                                  check_same_thread=False)
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA cache_size=-256")  # KiB; the writer inside a job needs little
        self._prepare()
        self.run_id = None
        self.reporting = None       # REPORT_SCHEMA made (None: not tried; False: read-only)
        self.pending = []
        self.pending_procs = []

    def _prepare(self):
        """WAL and the tables, made by whoever comes first. Jobs that start together into
        a new store race for that: SQLite answers "locked" at once, without waiting out
        its busy timeout, to some of them (seen: 9 of 30 rounds of 6 at once), so they
        look again until the store is made (the file keeps WAL once set)."""
        deadline = time.monotonic() + SETUP_WAIT
        while True:
            try:
                if self.db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    self.db.execute("PRAGMA journal_mode=WAL")
                self.db.executescript(SCHEMA)
                return
            except sqlite3.OperationalError as e:
                if not _locked(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    # --- sink side (inside the job) ---
    def open(self, job):
        cur = self.db.execute(
            "INSERT INTO runs (job, host, user, method, start_time, info) VALUES (?,?,?,?,?,?)",
            (job["job"], job.get("host"), job.get("user"), job.get("method"),
             job.get("start_time"), dumps(job)))
        self.run_id = cur.lastrowid

    def write(self, sample):
        self.pending.append((self.run_id, sample["time"], dumps(sample)))
        self._flush()

    def procs(self, record):
        self.pending_procs.append((self.run_id, record["time"], dumps(record)))
        self._flush()

    def _flush(self):
        try:
            with self.db:
                self.db.executemany("INSERT INTO samples (run, time, data) VALUES (?,?,?)",
                                    self.pending)
                if self.pending_procs:
                    self.db.executemany("INSERT INTO procs (run, time, data) VALUES (?,?,?)",
                                        self.pending_procs)
            self.pending, self.pending_procs = [], []
        except sqlite3.OperationalError:
            pass  # locked for longer than the timeout: kept, retried with the next sample

    def close(self, summary):
        self._flush()
        with self.db:
            self.db.execute("UPDATE runs SET summary = ?, end_time = ?, method = ? WHERE id = ?",
                            (dumps(summary), summary.get("end_time"), summary.get("method"),
                             self.run_id))
        self.db.close()

    # --- read side (jobmon query / list) ---
    def jobs(self, limit=20, user=None):
        rows = self.db.execute("SELECT id, info, summary FROM runs WHERE ? IS NULL OR user = ? "
                               "ORDER BY start_time DESC, id DESC LIMIT ?", (user, user, limit))
        return [_info(i, s, run) for run, i, s in rows]

    def records(self, ref, user=None):
        # an id, or all ids with a prefix: an index range [prefix, prefix with its last
        # character incremented) -- SQLite compares text byte by byte
        where = " OR ".join(["job = ?"] * len(ref.exact) + ["(job >= ? AND job < ?)"] * len(ref.prefixes))
        args = list(ref.exact)
        for p in ref.prefixes:
            args += [p, p[:-1] + chr(ord(p[-1]) + 1)]
        rows = self.db.execute(f"SELECT id, info, summary FROM runs WHERE {where} "
                               "ORDER BY start_time DESC, id DESC", args)
        out = [_info(i, s, run) for run, i, s in rows]
        return [r for r in out if ref.matches(r) and (not user or r.get("user") == user)]

    def summaries(self, since=None, until=None, user=None, fields=None):
        # the runs table only, never the samples: 10k jobs read in ~0.1 s
        self._report_schema()
        where, args = ["1"], []
        for cond, v in (("start_time >= ?", since), ("start_time < ?", until),
                        ("user = ?", user)):
            if v is not None:
                where.append(cond)
                args.append(v)
        rows = self.db.execute(f"SELECT id, info, summary FROM runs WHERE {' AND '.join(where)} "
                               "ORDER BY start_time, job, id", args)
        return [_info(i, s, run) for run, i, s in rows]

    def samples(self, record):
        return [_sample(t, d) for t, d in self.db.execute(
            "SELECT time, data FROM samples WHERE run = ? ORDER BY time", (record["_row"],))]

    def _report_schema(self):
        if self.reporting is None:
            try:
                self.db.executescript(REPORT_SCHEMA)
                self.reporting = True
            except sqlite3.OperationalError as e:
                if _locked(e):       # a writer making the store: try again next time
                    return False
                self.reporting = False       # a store this user may only read
        return self.reporting

    def rollups(self, parts, since, until, keys=None):
        if not self._report_schema():
            return []
        q = (f"SELECT hour, part, key, state FROM rollups WHERE part IN "
             f"({','.join('?' * len(parts))}) AND hour >= ? AND hour < ?")
        args = list(parts) + [since, until]
        if keys is not None:
            q += f" AND key IN ({','.join('?' * len(keys))})"
            args += list(keys)
        return self.db.execute(q + " ORDER BY hour", args)

    def save_rollup(self, hour, parts):
        """Replace an hour's rollup (or a day's: its parts start with "d:") with [(part,
        key, text)]."""
        if not self._report_schema():
            return
        with self.db:
            self.db.execute("DELETE FROM rollups WHERE hour = ? AND (part LIKE 'd:%') = ?",
                            (hour, parts[0][0].startswith("d:")))
            self.db.executemany("INSERT INTO rollups (hour, part, key, state) VALUES "
                                "(?,?,?,?)", [(hour, p, k, t) for p, k, t in parts])


    def unfinished(self, host=None):
        """Records without an end-of-job record (running, or their sampler died), of
        `host` when given, newest first."""
        rows = self.db.execute("SELECT id, info, summary FROM runs WHERE summary IS NULL "
                               "AND (? IS NULL OR host = ?) ORDER BY start_time DESC",
                               (host, host))
        return [_info(i, s, run) for run, i, s in rows]

    def unreconciled(self, since=None, host=None):
        """Records not reconciled yet (`jobmon reconcile`: docs/accounting.md) or without
        an end-of-job record (running, or their sampler died), started at or after
        `since` (None: any time), oldest first. host: ignored (an embedded store is its
        writers')."""
        try:
            rows = self.db.execute(
                "SELECT id, info, summary FROM runs WHERE (summary IS NULL OR "
                "json_extract(summary, '$.reconciled') IS NOT 1) AND (? IS NULL OR "
                "start_time >= ?) ORDER BY start_time, id", (since, since)).fetchall()
        except sqlite3.OperationalError:   # an SQLite without JSON functions: filtered here
            rows = self.db.execute("SELECT id, info, summary FROM runs WHERE ? IS NULL OR "
                                   "start_time >= ? ORDER BY start_time, id", (since, since))
        out = [_info(i, s, run) for run, i, s in rows]
        return [r for r in out if not (r["summary"] or {}).get("reconciled")]

    def correct(self, writes):
        """Put reconciled summaries in place of what their records had (`jobmon
        reconcile`): [(record, summary)], in one transaction; the rollups of their hours
        and days go with it (the next report makes them again)."""
        hours = {int(rec["start_time"] // 3600 * 3600) for rec, _s in writes
                 if rec.get("start_time") is not None}
        with self.db:
            self.db.executemany("UPDATE runs SET summary = ?, end_time = ? WHERE id = ?",
                                [(dumps(s), s.get("end_time"), rec["_row"])
                                 for rec, s in writes])
            if hours and self._report_schema():
                self.db.executemany("DELETE FROM rollups WHERE hour = ? OR (hour = ? AND "
                                    "part LIKE 'd:%')", [(h, h // 86400 * 86400)
                                                         for h in sorted(hours)])

    def last_samples(self, record, last):
        """The `last` samples of one record, in time order."""
        rows = self.db.execute("SELECT time, data FROM samples WHERE run = ? ORDER BY time "
                               "DESC LIMIT ?", (record["_row"], int(last))).fetchall()
        return [_sample(t, d) for t, d in reversed(rows)]

    def breakdowns(self, record, last=None):
        """One record's breakdowns in time order (the `last` ones only, when given)."""
        if last:
            rows = self.db.execute("SELECT time, data FROM procs WHERE run = ? ORDER BY time "
                                   "DESC LIMIT ?", (record["_row"], int(last))).fetchall()[::-1]
        else:
            rows = self.db.execute("SELECT time, data FROM procs WHERE run = ? ORDER BY time",
                                   (record["_row"],))
        return [_timed(t, d) for t, d in rows]

    # --- `jobmon act`'s warnings and actions (a table made by its first write) ---
    def latest(self, since):
        from .. import schedulers
        from ..influx.schema import PROMOTED_TAGS
        qualifiers = tuple(t for s in schedulers.all() for t in s.qualifier_tags)
        out = []
        for rec in self.unfinished():
            last = self.last_samples(rec, 1)
            if last and last[-1]["time"] >= since * 1e9:
                tags = rec.get("tags") or {}
                row = {t: tags.get(t) for t in qualifiers + PROMOTED_TAGS}
                row.update({k: rec.get(k) for k in ("job", "run", "host", "user", "scheduler")},
                           cluster=None, sample=last[-1])
                out.append(row)
        return out

    def put_actions(self, actions):
        """Write actions (jobmon.influx.schema.action_from_row's shape); one written again
        with the same time, job, run and user replaces the one before."""
        with self.db:
            self.db.execute(ACTIONS)
            self.db.executemany("INSERT OR REPLACE INTO actions (time, job, run, user, data) "
                                "VALUES (?,?,?,?,?)",
                                [(int(a["time"]), str(a["job"]), str(a.get("run") or ""),
                                  str(a.get("user") or ""), dumps(a)) for a in actions])

    def actions(self, since=None, jobs=None):
        jobs = None if jobs is None else sorted(set(map(str, jobs)))
        try:
            rows = self.db.execute(
                "SELECT data FROM actions WHERE time >= ? ORDER BY time",
                (int((since or 0) * 1e9),)).fetchall()
        except sqlite3.OperationalError:   # no such table: nothing acted on yet
            return []
        out = [_loads(d) for (d,) in rows]
        return [a for a in out if jobs is None or str(a.get("job")) in jobs]


ACTIONS = """CREATE TABLE IF NOT EXISTS actions (
    time INTEGER NOT NULL, job TEXT NOT NULL, run TEXT NOT NULL, user TEXT NOT NULL,
    data TEXT NOT NULL, PRIMARY KEY (time, job, run, user))"""


def _info(info, summary, row):
    from ..influx.schema import in_range
    d = _loads(info)
    d["summary"] = _loads(summary) if summary else None
    d.setdefault("run", None)
    d["_row"] = row   # where its samples are
    return in_range(d)   # its figures outside their ranges left out (docs/metrics.md)


def _timed(time_ns, text):
    """A stored sample or breakdown: an object, timed as its row is (a corrupt one: the
    row's time and nothing else)."""
    d = _loads(text)
    d = d if isinstance(d, dict) else {}
    if d.get("time").__class__ is not int:
        d["time"] = time_ns
    return d


def _sample(time_ns, text):
    from ..influx.schema import sample_in_range
    return sample_in_range(_timed(time_ns, text))   # figures out of range left out


def _loads(text):
    import json      # the read side only: a job's writer never needs it (jobmon.sinks.jsontext)
    return json.loads(text)
