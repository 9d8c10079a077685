"""`jobmon ship`: send the node's spool to InfluxDB, exactly where it left off.

Runs as the shipper's service user (or root), never inside a job. Delivery is
at-least-once with idempotent replays: progress (per-file byte offsets) is saved
durably only after the server acknowledged a batch and every batch read before it, so
a crash re-sends at most the batches in flight (`shipper.senders`), and InfluxDB stores
a re-sent point over itself (same measurement, tags and time). Spool data is deleted
only once acknowledged and its writer is gone.

Trust: spool files are written by job users. Every line is checked against the line
protocol grammar jobmon writes before it is sent, and the `user`, `host` and `cluster`
tags are set here -- `user` from the file's owner as the kernel reports it -- replacing
whatever the file says.
"""
import collections
import errno
import fcntl
import json
import logging
import os
import pwd
import random
import re
import socket
import stat
import time
from concurrent.futures import ThreadPoolExecutor

from . import influx_schema as schema
from . import lineprotocol as lp
from . import spool_grammar
from .sinks.spool import SUFFIX
from .transports import SendError

log = logging.getLogger("jobmon.ship")

QUARANTINE = ".quarantine"
STATE_FILE = "ship-state.json"
LOCK_FILE = "ship.lock"
COUNTERS = ("shipped_points", "shipped_batches", "dropped_points", "dropped_bytes",
            "dropped_files", "torn_lines", "quarantined_files", "send_errors")
YOUNG_EMPTY_SECONDS = 10  # an unlocked empty file younger than this may be just created

_SHIPPER_TAG_NAMES = tuple(t.encode() for t in schema.SHIPPER_TAGS)
_SHIPPER_TAG_KEYS = tuple(t + b"=" for t in _SHIPPER_TAG_NAMES)
_SHIPPER_TAG = re.compile(rb"[, ](?:" + b"|".join(_SHIPPER_TAG_NAMES) + rb")=")


class SpoolFile:
    """One job's spool file as this pass sees it."""

    def __init__(self, path, fd, st, offset, owner, age_key):
        self.path, self.fd, self.st, self.offset = path, fd, st, offset
        self.owner, self.age_key = owner, age_key
        self.finished = False     # writer gone: no more lines will come
        self.bad = None           # why it must be quarantined
        self.deleted = False

    @property
    def name(self):
        return os.path.basename(self.path)


class Batch:
    def __init__(self):
        self.parts, self.ends, self.points, self.bytes = [], {}, 0, 0

    def add(self, sf, data, points, end):
        self.parts.append(data)
        self.ends[sf.name] = (sf, end)
        self.points += points
        self.bytes += len(data)


def prepare_spool(directory):
    """Make (or check) the spool dir: ours, mode 3733 (see jobmon.sinks.spool)."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(errno.ENOTDIR, f"spool {directory} is not a directory")
    if st.st_uid != os.geteuid():
        raise OSError(errno.EPERM, f"spool {directory} belongs to uid {st.st_uid}, not to "
                      f"the shipper (uid {os.geteuid()}): not trusted")
    if stat.S_IMODE(st.st_mode) != 0o3733:
        os.chmod(directory, 0o3733)
    q = os.path.join(directory, QUARANTINE)
    try:
        os.mkdir(q, 0o700)
    except FileExistsError:
        pass


class State:
    """Offsets and counters, saved atomically (tmp + fsync + rename)."""

    def __init__(self, directory):
        self.path = os.path.join(directory, STATE_FILE)
        self.files, self.counters, self.last_error, self.last_success = {}, {}, None, None
        try:
            with open(self.path) as f:
                d = json.load(f)
            self.files = d.get("files", {})
            self.counters = d.get("counters", {})
            self.last_error, self.last_success = d.get("last_error"), d.get("last_success")
        except FileNotFoundError:
            pass
        for k in COUNTERS:
            self.counters.setdefault(k, 0)

    def offset(self, name, st):
        e = self.files.get(name)
        if e and e["ino"] == st.st_ino and e["dev"] == st.st_dev:
            return e["offset"]
        return 0

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"files": self.files, "counters": self.counters,
                       "last_error": self.last_error, "last_success": self.last_success}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


class Shipper:
    def __init__(self, cfg, transport, sleep=time.sleep):
        self.spool = cfg["spool"]["dir"]
        self.max_bytes = cfg["spool"]["max_bytes"]
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
        prepare_spool(self.spool)
        self.state = State(sh["state_dir"])
        self.pending_since = None
        self.owner_prefix = {}
        self.last_metrics = 0.0
        self.line_bytes = 512        # running estimate, sizes the reads
        self.checker = spool_grammar.Checker()
        self.senders = sh["senders"]
        self.sender = ThreadPoolExecutor(self.senders, thread_name_prefix="jobmon-send")
        self.in_flight = collections.deque()   # (future, batch), oldest first

    # --- one pass over the spool ---
    def ship_pass(self, final=False):
        """Send every complete line (a partial batch only once it waited flush_seconds,
        or when final). Raises SendError when the server did not take a batch.
        Returns the points acknowledged."""
        self.enforce_limit()
        before = self.state.counters["shipped_points"]
        while not self._pass(final):
            pass   # the server refused a batch; its bad file is quarantined: read on
        self.send_metrics(final)
        return self.state.counters["shipped_points"] - before

    def _pass(self, final):
        """One scan of the spool. False when a refused batch cut it short."""
        files = self.scan()
        try:
            batch = Batch()
            for sf in files:
                while not sf.bad:
                    got = self.read(sf, self.batch_bytes - batch.bytes,
                                    self.batch_points - batch.points)
                    if got is None:
                        break
                    batch.add(sf, *got)
                    if batch.points >= self.batch_points or batch.bytes >= self.batch_bytes:
                        if not self.send(batch):
                            return False
                        batch = Batch()
                if sf.bad:
                    self.quarantine(sf)
            if batch.points:
                now = time.monotonic()
                self.pending_since = self.pending_since or now
                if (final or now - self.pending_since >= self.flush_seconds) \
                        and not self.send(batch):
                    return False
            if not self.collect():
                return False
            done = [sf for sf in files if sf.finished and not sf.bad]
            if any([self.finish(sf) for sf in done]):
                self.state.save()
            return True
        finally:
            self.collect(quietly=True)   # only left in flight when something raised
            for sf in files:
                os.close(sf.fd)

    def scan(self):
        """The spool files, oldest first, opened (no symlinks, regular files only)."""
        out = []
        seen = set()
        for name in os.listdir(self.spool):
            if not name.endswith(SUFFIX):
                continue
            path = os.path.join(self.spool, name)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError as e:
                if e.errno != errno.ENOENT:
                    log.warning("cannot open spool file %s: %s", path, e.strerror)
                continue
            st = os.fstat(fd)
            sf = SpoolFile(path, fd, st, self.state.offset(name, st), self.owner(st.st_uid),
                           _age_key(name, st))
            seen.add(name)
            out.append(sf)
            if not stat.S_ISREG(st.st_mode):
                sf.bad = "not a regular file"
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)   # never make a starting sampler wait
                sf.finished = st.st_size > 0 or time.time() - st.st_mtime > YOUNG_EMPTY_SECONDS
            except BlockingIOError:
                pass   # its sampler is still writing
        for name in list(self.state.files):
            if name not in seen:
                del self.state.files[name]
        out.sort(key=lambda sf: sf.age_key)
        return out

    def owner(self, uid):
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return str(uid)

    def read(self, sf, max_bytes, max_points):
        """(line protocol ready to send, points, new offset) from sf, or None when it
        has no complete line left. Marks sf.bad on a line jobmon would not write."""
        if max_bytes <= 0 or max_points <= 0:
            return None
        want = min(max_bytes, int(max_points * self.line_bytes * 1.25) + 4096)
        data = os.pread(sf.fd, want, sf.offset)
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            if len(data) == want and want < max_bytes:
                return self.read_long(sf, max_bytes, max_points)
            if len(data) == max_bytes and max_bytes == self.batch_bytes:
                sf.bad = f"line at byte {sf.offset} longer than batch_bytes"
            return None
        data = data[:cut]
        points = data.count(b"\n")
        self.line_bytes = max(16, len(data) // points)
        if points > max_points:
            pos = -1
            for _ in range(max_points):
                pos = data.index(b"\n", pos + 1)
            data, points = data[:pos + 1], max_points
        at = self.checker.first_bad(data)
        if at is not None:
            n = data.count(b"\n", 0, at) + 1
            sf.bad = f"line {n} of this read (byte {sf.offset + at}) is not jobmon line protocol"
            return None
        end = sf.offset + len(data)
        sf.offset = end
        return self.stamp(data, sf.owner), points, end

    def read_long(self, sf, max_bytes, max_points):
        self.line_bytes = max_bytes   # a line longer than the estimate: read it all
        return self.read(sf, max_bytes, max_points)

    def stamp(self, data, owner):
        """Set the shipper's tags on every line, dropping any the file carried."""
        prefix = self.owner_prefix.get(owner)
        if prefix is None:
            tags = {"user": owner, "host": self.host, "cluster": self.cluster}
            prefix = "".join(f"{lp.tag(k)}={lp.tag(v)}," for k, v in sorted(tags.items()) if v)
            prefix = self.owner_prefix[owner] = prefix.encode()
        if any(t in data for t in _SHIPPER_TAG_KEYS) and _SHIPPER_TAG.search(data):
            # rare: some line names one of our tags (the plain `in` scans are memchr-fast)
            data = b"".join(spool_grammar.without_tags(line, _SHIPPER_TAG_NAMES)
                            for line in data.splitlines(True))
        body = b"\n" + data
        for m in schema.MEASUREMENTS:   # split + join: ~3x faster than bytes.replace here
            m = b"\n" + m.encode() + b","
            body = (m + prefix).join(body.split(m))
        return body[1:]

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
        for name, (sf, end) in batch.ends.items():
            self.state.files[name] = {"ino": sf.st.st_ino, "dev": sf.st.st_dev, "offset": end}
        for sf, _end in batch.ends.values():
            if sf.finished:   # all of it acknowledged: delete now, keeps the state small
                self.finish(sf)
        c = self.state.counters
        c["shipped_points"] += batch.points
        c["shipped_batches"] += 1
        self.state.last_success = time.time()
        self.state.save()
        self.pending_since = None

    def isolate(self, batch, err):
        """The server refused a batch: quarantine the files it refuses on their own
        (the others are then acknowledged as usual)."""
        log.warning("server refused a batch (%s); checking its %d file(s) one by one",
                    err, len(batch.ends))
        for name, (sf, end) in list(batch.ends.items()):
            start = self.state.offset(name, sf.st)
            data = os.pread(sf.fd, end - start, start)
            single = Batch()
            single.add(sf, self.stamp(data, sf.owner), data.count(b"\n"), end)
            try:
                self.transport.send(single.parts[0])
            except SendError as e:
                if e.retry:
                    self.failed(e)
                    raise
                sf.bad = f"refused by the server: {e}"
                sf.offset = start
                self.quarantine(sf)
                continue
            self.acknowledged(single)

    def failed(self, err):
        self.state.counters["send_errors"] += 1
        self.state.last_error = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {err}"
        self.state.save()

    def quarantine(self, sf):
        dest = os.path.join(self.spool, QUARANTINE, sf.name)
        try:
            os.rename(sf.path, dest)
        except OSError as e:
            log.error("cannot quarantine spool file %s: %s", sf.path, e.strerror)
            return
        log.error("quarantined spool file %s (owner %s): %s; moved to %s",
                  sf.path, sf.owner, sf.bad, dest)
        self.state.files.pop(sf.name, None)
        self.state.counters["quarantined_files"] += 1
        self.state.save()
        sf.finished = False

    def finish(self, sf):
        """Delete a finished file once all its complete lines are acknowledged (the
        caller saves the state). True when it was deleted."""
        if sf.deleted:
            return False
        size = os.fstat(sf.fd).st_size
        shipped = self.state.offset(sf.name, sf.st)
        rest = os.pread(sf.fd, size - shipped, shipped) if size > shipped else b""
        if b"\n" in rest:
            return False   # complete lines not sent yet (batch held back or failed)
        if rest:
            self.state.counters["torn_lines"] += 1
            log.warning("spool file %s ends in a torn line (%d bytes, writer died mid-write): "
                        "skipped", sf.path, len(rest))
        try:
            os.unlink(sf.path)
        except FileNotFoundError:
            pass
        self.state.files.pop(sf.name, None)
        sf.deleted = True
        return True

    def enforce_limit(self):
        """Keep the spool under max_bytes: drop whole files, oldest data first, and
        count what was lost."""
        files = []
        total = 0
        for name in os.listdir(self.spool):
            if not name.endswith(SUFFIX):
                continue
            try:
                st = os.lstat(os.path.join(self.spool, name))
            except FileNotFoundError:
                continue
            total += st.st_size
            files.append((_age_key(name, st), name, st))
        if total <= self.max_bytes:
            return
        files.sort()
        c = self.state.counters
        for _age, name, st in files:
            if total <= self.max_bytes:
                break
            path = os.path.join(self.spool, name)
            offset = self.state.offset(name, st)
            points = 0
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as f:
                    f.seek(offset)
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        points += chunk.count(b"\n")
            except OSError:
                pass
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            total -= st.st_size
            c["dropped_points"] += points
            c["dropped_bytes"] += st.st_size - offset
            c["dropped_files"] += 1
            self.state.files.pop(name, None)
            log.warning("spool over its limit (%d bytes): dropped %s, %d unsent point(s)",
                        self.max_bytes, path, points)
        self.state.save()

    def send_metrics(self, final):
        """The shipper's own counters as a jobmon_shipper point (best effort)."""
        now = time.time()
        if not final and now - self.last_metrics < 60:
            return
        tags = {"host": self.host, "cluster": self.cluster}
        line = lp.point(schema.SHIPPER, tags, dict(self.state.counters), time.time_ns())
        try:
            self.transport.send(line.encode())
            self.last_metrics = now
        except SendError:
            pass

    # --- modes ---
    def backoff(self, attempt):
        """Exponential backoff with full jitter."""
        return random.uniform(0, min(self.retry_max, self.retry_initial * 2 ** attempt))

    def wait(self, seconds, stop):
        """Sleep, still keeping the spool under its limit meanwhile."""
        deadline = time.monotonic() + seconds
        while not stop() and time.monotonic() < deadline:
            self.sleep(min(self.poll_seconds, max(deadline - time.monotonic(), 0)))
            self.enforce_limit()

    def follow(self, stop=lambda: False):
        attempt = 0
        while not stop():
            try:
                self.ship_pass()
                attempt = 0
                self.wait(self.poll_seconds, stop)
            except SendError as e:
                delay = self.backoff(attempt)
                log.warning("send failed (%s); retrying in %.1f s", e, delay)
                attempt += 1
                self.wait(delay, stop)

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


def _age_key(name, st):
    """Files' data age: the start time in the name the sampler gave it, else mtime."""
    try:
        return int(name.split(".", 1)[0])
    except ValueError:
        return int(st.st_mtime * 1e9)


def status(cfg):
    """What `jobmon ship --status` shows: counters, last error, what waits in the spool."""
    st = {"spool": cfg["spool"]["dir"], "max_bytes": cfg["spool"]["max_bytes"]}
    state = State(cfg["shipper"]["state_dir"])
    st.update(state.counters)
    st["last_error"] = state.last_error
    st["last_success"] = state.last_success
    files = spooled = pending = 0
    quarantined = []
    try:
        names = os.listdir(cfg["spool"]["dir"])
    except OSError as e:
        names = []
        st["error"] = f"cannot list the spool: {e.strerror}"
    for name in names:
        if not name.endswith(SUFFIX):
            continue
        path = os.path.join(cfg["spool"]["dir"], name)
        try:
            with open(path, "rb") as f:
                s = os.fstat(f.fileno())
                f.seek(state.offset(name, s))
                pending += f.read().count(b"\n")
        except OSError:
            continue
        files += 1
        spooled += s.st_size
    try:
        quarantined = sorted(os.listdir(os.path.join(cfg["spool"]["dir"], QUARANTINE)))
    except OSError:
        pass
    st.update({"spool_files": files, "spool_bytes": spooled, "pending_points": pending,
               "quarantine": quarantined})
    return st
