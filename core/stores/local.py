"""The embedded default store: one SQLite file, nothing to install or start.

Safe for many concurrent jobs: WAL journal (readers never block the writer), a busy
timeout, and samples that could not be written are kept and retried, never dropped.
"""
import json
import os
import sqlite3

from ..sinks import Sink
from . import JobRecord, Store


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
"""


class LocalStore(Sink, Store):
    def __init__(self, path):
        self.path = path
        d = os.path.dirname(path)
        if d:
            os.makedirs(d, mode=0o700, exist_ok=True)
        self.db = sqlite3.connect(path, timeout=5, isolation_level=None,
                                  check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA cache_size=-256")  # KiB; the writer inside a job needs little
        self.db.executescript(SCHEMA)
        self.run_id = None
        self.pending = []

    # --- sink side (inside the job) ---
    def open(self, job):
        cur = self.db.execute(
            "INSERT INTO runs (job, host, user, method, start_time, info) VALUES (?,?,?,?,?,?)",
            (job["job"], job.get("host"), job.get("user"), job.get("method"),
             job.get("start_time"), json.dumps(job)))
        self.run_id = cur.lastrowid

    def write(self, sample):
        self.pending.append((self.run_id, sample["time"], json.dumps(sample)))
        self._flush()

    def _flush(self):
        try:
            with self.db:
                self.db.executemany("INSERT INTO samples (run, time, data) VALUES (?,?,?)",
                                    self.pending)
            self.pending = []
        except sqlite3.OperationalError:
            pass  # locked for longer than the timeout: kept, retried with the next sample

    def close(self, summary):
        self._flush()
        with self.db:
            self.db.execute("UPDATE runs SET summary = ?, end_time = ?, method = ? WHERE id = ?",
                            (json.dumps(summary), summary.get("end_time"), summary.get("method"),
                             self.run_id))
        self.db.close()

    # --- read side (jobmon query / list) ---
    def jobs(self, limit=20):
        rows = self.db.execute(
            "SELECT info, summary FROM runs ORDER BY start_time DESC, id DESC LIMIT ?", (limit,))
        return [_info(i, s) for i, s in rows]

    def job(self, job_id, user=None):
        runs = [(run, _info(i, s)) for run, i, s in self.db.execute(
            "SELECT id, info, summary FROM runs WHERE job = ? ORDER BY start_time DESC, id DESC",
            (job_id,))]
        users = sorted({info.get("user") or "" for _run, info in runs})
        runs = [r for r in runs if not user or r[1].get("user") == user]
        if not runs:
            return None
        run, info = runs[0]
        info["users"] = users
        samples = [json.loads(d) for (d,) in self.db.execute(
            "SELECT data FROM samples WHERE run = ? ORDER BY time", (run,))]
        return JobRecord(info, samples)


def _info(info, summary):
    d = json.loads(info)
    d["summary"] = json.loads(summary) if summary else None
    return d
