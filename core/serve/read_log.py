"""Who read which job through `jobmon serve`: the reader, when, how (the command the caller
says it runs, else the operation), the job, its owner, and whether the read was answered
or refused (docs/security.md, "Who read my job").

One SQLite file of the service's own ([service] read_log), mode 0600, in a directory of
mode 0700: users never read it directly, only through the service, each the reads of their
own jobs (the admin group: any job's). Entries older than [service] read_log_days are
dropped, and the oldest past [service] read_log_max_bytes.

A read never waits for its entry: record() hands the entries to one writing thread over a
bounded queue and returns. Where the file cannot be written (a full disk, a directory the
service may not write), the read is answered all the same and the service says once that
the read log is not being kept (and once again when it is kept again)."""
import os
import queue
import sqlite3
import threading
import time

from ..config.validate import MIN_READ_LOG_BYTES as MIN_BYTES

QUEUE_BATCHES = 4096       # reads waiting for the writer; past it their entries are lost
KEEP_FRACTION = 0.8        # past the size cap, the oldest go until this share of it is used
MAX_SHOWN = 10000          # entries one answer holds, newest first
RETRY_SECONDS = 10.0       # after a failure, the file is not tried again before this

SCHEMA = """
CREATE TABLE IF NOT EXISTS reads (id INTEGER PRIMARY KEY, t REAL NOT NULL,
    reader TEXT NOT NULL, how TEXT NOT NULL, job TEXT NOT NULL, owner TEXT,
    allowed INTEGER NOT NULL, via TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS reads_job ON reads (job);
CREATE INDEX IF NOT EXISTS reads_t ON reads (t);
"""


class NotKept(Exception):
    """The read log is off or cannot be read."""


class ReadLog:
    def __init__(self, path, days, max_bytes, log, clock=time.time):
        self.path, self.days, self.clock, self.log = path, days, clock, log
        self.max_bytes = max(int(max_bytes), MIN_BYTES)
        self.queue = queue.Queue(QUEUE_BATCHES)
        self.db = None
        self.broken = None        # why the log is not being kept (said once), or None
        self.retry_at = 0.0
        self.lost = 0             # entries dropped because the writer fell behind
        self.thread = threading.Thread(target=self._write_all, daemon=True,
                                       name="read-log")
        self.thread.start()

    # --- the reading side: in the caller's thread, never blocking on the writer ---

    def record(self, entries):
        """entries: [(reader, how, job, owner or None, allowed, via)]; the time is now."""
        if not entries:
            return
        try:
            self.queue.put_nowait((self.clock(), entries))
        except queue.Full:
            self.lost += len(entries)

    def reads_of(self, jobs, owners, unowned_jobs=(), limit=MAX_SHOWN):
        """The reads within the retention of jobs (ids) owned by one of `owners`, and the
        refused reads that named one of unowned_jobs and found nothing to refuse by owner
        (a user asking for an id they have no run of: the store gave them nothing)."""
        if not jobs and not unowned_jobs:
            return []
        try:
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=5.0)
        except sqlite3.Error as e:
            raise NotKept(self._why(e))
        try:
            jobs, owners, unowned = list(jobs), list(owners), list(unowned_jobs)
            q = (f"SELECT t, reader, how, job, owner, allowed, via FROM reads WHERE t >= ? AND "
                 f"((job IN ({_marks(jobs)}) AND owner IN ({_marks(owners)})) OR "
                 f"(job IN ({_marks(unowned)}) AND owner IS NULL)) ORDER BY id DESC LIMIT ?")
            rows = db.execute(q, [self.clock() - self.days * 86400, *jobs, *owners,
                                  *unowned, limit]).fetchall()
        except sqlite3.Error as e:
            raise NotKept(self._why(e))
        finally:
            db.close()
        return [{"time": t, "reader": reader, "how": how, "job": job, "owner": owner,
                 "allowed": bool(allowed), "via": via}
                for t, reader, how, job, owner, allowed, via in rows]

    def _why(self, e):
        return f"the read log {self.path} cannot be read ({self.broken or e})"

    # --- the writing thread ---

    def _write_all(self):
        self._open()
        while True:
            item = self.queue.get()
            if item is None:
                return
            batch = [item]
            while len(batch) < 256:           # what came meanwhile: one transaction
                try:
                    item = self.queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._write(batch)
                    return
                batch.append(item)
            self._write(batch)

    def _write(self, batch):
        if self.db is None and not self._open():
            return
        try:
            with self.db:
                self.db.executemany(
                    "INSERT INTO reads (t, reader, how, job, owner, allowed, via) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(t, *e[:4], int(bool(e[4])), e[5]) for t, entries in batch
                     for e in entries])
            self._trim()
        except Exception as e:       # sqlite3.Error, OSError; anything else: the same
            self._fail(e)
            return
        if self.lost:
            self.log(f"the read log fell behind: {self.lost} entries were not kept")
            self.lost = 0

    def _trim(self):
        """Entries past the retention, then the oldest past the size cap."""
        with self.db:
            self.db.execute("DELETE FROM reads WHERE t < ?",
                            (self.clock() - self.days * 86400,))
        while True:
            used = self._used()
            if used <= self.max_bytes:
                return
            n = self.db.execute("SELECT count(*) FROM reads").fetchone()[0]
            if not n:
                return
            drop = max(1, n - int(n * KEEP_FRACTION * self.max_bytes / used))
            with self.db:
                self.db.execute("DELETE FROM reads WHERE id IN "
                                "(SELECT id FROM reads ORDER BY id LIMIT ?)", (drop,))

    def _used(self):
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        size = self.db.execute("PRAGMA page_size").fetchone()[0]
        return pages * size

    def _open(self):
        if self.clock() < self.retry_at:
            return False
        try:
            directory = os.path.dirname(self.path)
            if not os.path.isdir(directory):
                os.makedirs(directory, mode=0o700)
            # the file is made 0600 before SQLite opens it; an older one is made so too
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o600))
            os.chmod(self.path, 0o600)
            db = sqlite3.connect(self.path, timeout=5.0, isolation_level=None,
                                 check_same_thread=False)
            db.isolation_level = ""           # `with db:` commits
            try:
                # full auto-vacuum: deleted entries give their pages back to the disk, so
                # the file's size is what the cap counts
                db.execute("PRAGMA auto_vacuum=FULL")
                db.execute("PRAGMA journal_mode=WAL")      # reads never wait for writes
                db.execute("PRAGMA wal_autocheckpoint=256")     # the -wal file: ~1 MiB
                db.execute("PRAGMA journal_size_limit=1048576")
                db.executescript(SCHEMA)
            except sqlite3.Error:
                db.close()
                raise
        except (sqlite3.Error, OSError) as e:
            self._fail(e)
            return False
        self.db = db
        if self.broken:
            self.log(f"the read log {self.path} is kept again")
        self.broken = None
        return True

    def _fail(self, e):
        why = getattr(e, "strerror", None) or str(e) or type(e).__name__
        if self.db is not None:
            try:
                self.db.close()
            except sqlite3.Error:
                pass
            self.db = None
        self.retry_at = self.clock() + RETRY_SECONDS
        if self.broken is None:
            self.log(f"the read log {self.path} is not being kept: {why} (reads are "
                     "answered all the same)")
        self.broken = why

    def close(self, timeout=10.0):
        """Write what is queued, then stop (the service's end): `timeout` at most."""
        try:
            self.queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self.thread.join(timeout)


def _marks(items):
    return ", ".join("?" * len(items)) or "NULL"


class Noter:
    """One connection's reads for the log: each (how, job, owner, answered) once per
    connection (a `jobmon query` reads a job's records, samples and breakdowns: one read),
    handed to the log after each answer."""
    MAX_SEEN = 20000

    def __init__(self, read_log, reader, via):
        self.read_log, self.reader, self.via = read_log, reader, via
        self.how = ""
        self.seen, self.pending = set(), []

    def note(self, job, owner, allowed):
        key = (self.how, job, owner, allowed)
        if key in self.seen:
            return
        if len(self.seen) >= self.MAX_SEEN:
            self.seen.clear()
        self.seen.add(key)
        self.pending.append((self.reader, self.how, "" if job is None else str(job), owner,
                             allowed, self.via))

    def flush(self):
        if self.pending:
            self.read_log.record(self.pending)
            self.pending = []


def how_of(request, op):
    """The command a request says it comes from (`jobmon query`: "query"), else its
    operation. The caller's word, shown as such: the operation is the service's."""
    said = request.get("command")
    if isinstance(said, str) and 0 < len(said) <= 32 and said.replace("-", "").isalpha():
        return said
    return op
