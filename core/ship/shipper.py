"""`jobmon ship`: send the node's spool to InfluxDB, exactly where it left off.

Runs as the shipper's service user (or root), never inside a job. Delivery is
at-least-once with idempotent replays: progress (per-file byte offsets) is saved
durably only after the server acknowledged a batch and every batch read before it, so
a crash re-sends at most the batches in flight (`shipper.senders`), and InfluxDB stores
a re-sent point over itself (same measurement, tags and time). Spool data is deleted
only once acknowledged and its writer is gone.

Trust: spool files are written by job users, any of whom may be hostile (docs/security.md).
Every line is checked against the line protocol grammar and the keys jobmon writes before
it is sent, only the bytes checked are ever sent, and the `user`, `host` and `cluster`
tags are set here -- `user` from the file's owner as the kernel reports it -- replacing
whatever the file says. Every point lost on the way is counted against its user.
"""
import collections
import fcntl
import logging
import os
import random
import socket
import time
from concurrent.futures import ThreadPoolExecutor

from . import health, quota
from .lines import Batch, LineReader
from .spooldir import SpoolDir, lost_in_name, prepare_spool
from .state import State
from .transports import SendError

log = logging.getLogger("jobmon.ship")

LOCK_FILE = "ship.lock"


class Shipper:
    def __init__(self, cfg, transport, sleep=time.sleep):
        sh = cfg["shipper"]
        self.batch_points, self.batch_bytes = sh["batch_points"], sh["batch_bytes"]
        self.flush_seconds, self.poll_seconds = sh["flush_seconds"], sh["poll_seconds"]
        self.retry_initial, self.retry_max = sh["retry_initial_seconds"], sh["retry_max_seconds"]
        self.host = sh["host"] or socket.gethostname()
        self.cluster = sh["cluster"]
        self.transport = transport
        self.sleep = sleep
        os.makedirs(sh["state_dir"], mode=0o700, exist_ok=True)
        self.lock_fd = os.open(os.path.join(sh["state_dir"], LOCK_FILE),
                               os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError("another `jobmon ship` is running on this spool")
        prepare_spool(cfg["spool"]["dir"])
        self.state = State(sh["state_dir"])
        sp = cfg["spool"]
        self.spool = SpoolDir(sp["dir"], sp["max_bytes"], sp["max_bytes_per_user"],
                              self.batch_bytes, self.state)
        self.lines = LineReader(self.host, self.cluster, self.batch_bytes, sh["max_job_days"],
                                cfg["limits"])
        self.told_aside = set()    # files whose set-aside lines were logged (once each)
        self.pending_since = None
        self.last_metrics = 0.0
        self.senders = sh["senders"]
        self.sender = ThreadPoolExecutor(self.senders, thread_name_prefix="jobmon-send")
        self.in_flight = collections.deque()   # (future, batch), oldest first
        self.ended_jobs = set()    # jobs whose end point the server acknowledged (job_key)

    # --- one pass over the spool ---
    def ship_pass(self, final=False):
        """Send every complete line (a partial batch only once it waited flush_seconds,
        or when final). Raises SendError when the server did not take a batch.
        Returns the points acknowledged."""
        self.spool.enforce_limit()
        before = self.state.counters["shipped_points"]
        while not self._pass(final):
            pass   # the server refused a batch; its bad file is quarantined: read on
        self.send_metrics(final)
        return self.state.counters["shipped_points"] - before

    def _pass(self, final):
        """One scan of the spool. False when a refused batch cut it short."""
        files = self.spool.scan()
        self.lines.new_pass()
        try:
            batch = Batch()
            for sf in files:
                while not sf.bad:
                    got = self.lines.read(sf, self.batch_bytes - batch.bytes,
                                          self.batch_points - batch.points)
                    if self.lines.aside:
                        self.set_aside()
                    if got is None:
                        break
                    batch.add(sf, *got)
                    if batch.points >= self.batch_points or batch.bytes >= self.batch_bytes:
                        if not self.send(batch):
                            return False
                        batch = Batch()
                if sf.bad:
                    self.spool.quarantine(sf)
            waiting = False   # lines read but held back: another file's may end a job
            if batch.points:
                now = time.monotonic()
                self.pending_since = self.pending_since or now
                waiting = not (final or now - self.pending_since >= self.flush_seconds)
                if not waiting and not self.send(batch):
                    return False
            if not self.collect():
                return False
            done = [sf for sf in files if sf.finished and not sf.bad and not sf.deleted
                    and not waiting]
            if not self.mark_ended(done):
                return False
            if any([self.spool.finish(sf) for sf in done]):
                self.state.save()
            for sf in done:
                if sf.bad:      # it ends in more than a line without a newline
                    self.spool.quarantine(sf)
            return True
        finally:
            self.collect(quietly=True)   # only left in flight when something raised
            for sf in files:
                os.close(sf.fd)

    def set_aside(self):
        """Lines with a figure no run can show (docs/metrics.md, "Valid ranges"): never
        sent, counted against the user who wrote them, each file's said once."""
        for owner, name, points, nbytes, fields in self.lines.aside:
            self.state.counters["out_of_range_points"] += points
            self.state.lose(owner, "out_of_range", points, nbytes)
            if len(self.told_aside) > 4096:   # bounded: a file name each
                self.told_aside.clear()
            if name not in self.told_aside:
                self.told_aside.add(name)
                log.warning("spool file %s (owner %s): %d line(s) set aside, a figure out of "
                            "its valid range (%s); the rest of the file is sent", name, owner,
                            points, ", ".join(fields[:5]))
        self.lines.aside = []

    def mark_ended(self, done):
        """Finished files whose job's end point never came (sampler killed, disk full):
        send their job point with `ended=1` before they go, so the job does not look as
        if it were still running. False when the server refused it."""
        batch = Batch()
        for sf in done:
            if sf.ended or not self.spool.complete(sf):
                continue
            marker = self.lines.end_marker(sf)
            if marker is None or marker[1] in self.ended_jobs:
                sf.ended = True       # nothing to mark, or its end came in another file
                continue              # (the room its sampler kept for it)
            batch.add(sf, marker[0], 1, self.state.offset(sf.name, sf.st), [marker[1]],
                      marker=True)
        return not batch.points or (self.send(batch) and self.collect())

    def send(self, batch):
        """Hand a batch to a sender thread, once there is room in flight: reading and
        checking the next batches overlaps the server's work on the ones before. False
        when an earlier batch was refused (this one is dropped, to be read again)."""
        if not self.collect(keep=self.senders - 1):
            return False
        self.in_flight.append((self.sender.submit(self.transport.send, b"".join(batch.parts)),
                               batch))
        return True

    def collect(self, keep=0, quietly=False):
        """Wait until at most `keep` batches are in flight, recording acknowledgements in
        the order the batches were read (so saved offsets only ever cover acknowledged
        data). Raises SendError when a batch must be retried; quietly: forget it instead,
        the next pass reads it again. False when a batch was refused or forgotten."""
        while len(self.in_flight) > keep:
            future, batch = self.in_flight.popleft()
            try:
                future.result()
            except Exception as e:
                self.forget_in_flight()
                if quietly:
                    return False
                if not isinstance(e, SendError):
                    raise
                if e.retry:
                    self.failed(e)
                    raise
                self.isolate(batch, e)     # some file holds data the server refuses
                return False
            self.acknowledged(batch)
        return True

    def forget_in_flight(self):
        """Wait for the later batches and forget them: without the refused or failed
        batch before them their offsets cannot be saved, so the next pass reads them
        again (InfluxDB stores a re-sent point over itself)."""
        for future, _batch in self.in_flight:
            future.exception()
        self.in_flight.clear()

    def acknowledged(self, batch):
        c = self.state.counters
        for name, f in batch.files.items():
            sf = f.sf
            self.state.acknowledge(name, sf.st, f.end, bool(f.ended))
            sf.ended |= bool(f.ended)
            self.ended_jobs.update(f.ended)
            if f.lost:      # the sampler's own count of what the spool could not take
                self.state.sampler_lost(sf.owner, f.lost, quota.age_key(sf.name, sf.st) / 1e9)
            if f.marker:
                c["jobs_without_summary"] += 1
                if not lost_in_name(name):   # else counted in the points its name gives
                    self.state.lose(sf.owner, "no_summary", files=1)
        for f in batch.files.values():
            if f.sf.finished:   # all of it acknowledged: delete now, keeps the state small
                self.spool.finish(f.sf)
        if len(self.ended_jobs) > 100_000:   # bounded; a file's own end is in the state
            self.ended_jobs.clear()
        c["shipped_points"] += batch.points
        c["shipped_batches"] += 1
        self.state.last_success = time.time()
        self.state.save()
        self.pending_since = None

    def isolate(self, batch, err):
        """The server refused a batch: send each file's part of it on its own -- the same
        checked bytes, never the file read again -- and quarantine the files the server
        refuses (the others are then acknowledged as usual)."""
        log.warning("server refused a batch (%s); checking its %d file(s) one by one",
                    err, len(batch.files))
        for name in list(batch.files):
            single = batch.only(name)
            sf = single.files[name].sf
            try:
                self.transport.send(b"".join(single.parts))
            except SendError as e:
                if e.retry:
                    self.failed(e)
                    raise
                sf.bad = f"refused by the server: {e}"
                self.spool.quarantine(sf)
                continue
            self.acknowledged(single)

    def failed(self, err):
        self.state.counters["send_errors"] += 1
        self.state.last_error = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {err}"
        self.state.save()

    def send_metrics(self, final):
        """The shipper's own counters as a jobmon_shipper point (best effort)."""
        now = time.time()
        if not final and now - self.last_metrics < 60:
            return
        self.state.last_run = now          # at most once a minute in --follow mode
        self.state.save()
        lines = health.metrics_lines(self.state, self.host, self.cluster, self.spool.usage,
                                     health.quarantine_count(self.spool.path), time.time_ns())
        try:
            self.transport.send(lines.encode())
            self.last_metrics = now
        except SendError:
            pass

    # --- modes ---
    def backoff(self, attempt):
        """Exponential backoff with full jitter (the exponent capped: 2.0 ** 1024 is
        beyond a float)."""
        return random.uniform(0, min(self.retry_max, self.retry_initial * 2.0 ** min(attempt, 60)))

    def wait(self, seconds, stop, spool_ok=True):
        """Sleep, still keeping the spool under its limit meanwhile (spool_ok False: it
        could not be read; the next pass tries it again)."""
        deadline = time.monotonic() + seconds
        while not stop() and time.monotonic() < deadline:
            self.sleep(min(self.poll_seconds, max(deadline - time.monotonic(), 0)))
            if spool_ok:
                self.spool.enforce_limit()

    def follow(self, stop=lambda: False):
        attempt = 0
        unreadable = None    # why the last pass could not read the spool (or its state)
        while not stop():
            try:
                self.ship_pass()
                attempt = 0
                if unreadable:
                    log.warning("the spool %s can be read again: shipping", self.spool.path)
                    unreadable = None
                self.wait(self.poll_seconds, stop)
            except SendError as e:
                delay = self.backoff(attempt)
                log.warning("send failed (%s); retrying in %.1f s", e, delay)
                attempt += 1
                self.wait(delay, stop)
            except OSError as e:
                # the spool or the state became unreadable (its mode, its file system):
                # said once, retried as a send is, shipped from where it left off after
                self.forget_in_flight()
                if unreadable is None:
                    log.error("cannot read the spool %s (%s); retrying until it can be "
                              "read (its samples stay where they are)", self.spool.path, e)
                unreadable = str(e)
                attempt = min(attempt + 1, 60)
                self.wait(max(self.backoff(attempt), self.poll_seconds), stop, spool_ok=False)

    def once(self, deadline_seconds):
        """Ship everything there is; retry until the deadline. True when drained."""
        deadline = time.monotonic() + deadline_seconds
        attempt = 0
        while True:
            try:
                while self.ship_pass(final=True):
                    pass
                return True
            except SendError as e:
                delay = self.backoff(attempt)
                attempt += 1
                if time.monotonic() + delay > deadline:
                    log.error("send failed (%s); giving up for now, data stays spooled", e)
                    return False
                log.warning("send failed (%s); retrying in %.1f s", e, delay)
                self.wait(delay, lambda: False)

    def close(self):
        self.sender.shutdown()
        self.transport.close()
        os.close(self.lock_fd)
