"""Reading spool lines for a batch: whole lines only, checked against the grammar of what
jobmon writes, and stamped with the tags only the shipper may set.

The bytes checked are the bytes sent: a batch keeps what it read, and a batch the server
refused is split up from those same bytes, never read from the file again (its owner may
have rewritten it meanwhile).

Whose points they are is the file owner's uid, as the kernel reports it -- except for files
owned by root or by the shipper's own user, which no job user can create: a sampler run
by root for someone else's job (a scheduler hook's) writes the job's `user` tag itself,
and that tag is kept.
"""
import os
import re
import time

from ..influx import grammar
from ..influx import lineprotocol as lp
from ..influx import schema
from ..metrics import bounds

_SHIPPER_TAG_NAMES = tuple(t.encode() for t in schema.SHIPPER_TAGS)
_SHIPPER_TAG_KEYS = tuple(t + b"=" for t in _SHIPPER_TAG_NAMES)
_SHIPPER_TAG = re.compile(rb"[, ](?:" + b"|".join(_SHIPPER_TAG_NAMES) + rb")=")
_NODE_TAG_NAMES = tuple(t for t in _SHIPPER_TAG_NAMES if t != b"user")   # host, cluster
_JOB = schema.JOB.encode()
# in a job's end point (a user could fake them only for their own jobs: see stamp())
_ENDED = b"ended=1i"
# what every job's end point is sent with, whatever its file said: only `jobmon reconcile`
# settles whose job it is (jobmon.report.ownership), so no job user can mark their own
# record settled, nor as the job's
_UNSETTLED = {b"reconciled": b"0i", b"ownership": b'"unconfirmed"'}
_LOST = re.compile(rb"[ ,]lost_points=([0-9]+)i[ ,]")


FUTURE_SECONDS = 3600    # a line may be timed this far ahead of the shipper's clock
WINDOW_STEP = 600        # the window moves in steps (each step relearns the line shapes)


def time_window(now, max_job_seconds):
    """(first, last) second a spool line may be timed in: what a sampler can write -- its
    job's start at the earliest, the time of writing at the latest -- with the job's
    start (the writer's word) bounded by the shipper's clock. In steps, widened."""
    first = int(now - max_job_seconds) // WINDOW_STEP * WINDOW_STEP
    last = -(-int(now + FUTURE_SECONDS) // WINDOW_STEP) * WINDOW_STEP
    return first, last


class FilePart:
    """What one batch holds of one file."""

    __slots__ = ("sf", "end", "parts", "points", "ended", "lost", "marker")

    def __init__(self, sf):
        self.sf, self.end, self.parts, self.points = sf, 0, [], 0
        self.ended, self.lost, self.marker = [], 0, False    # ended: jobs' keys (job_key)


class Batch:
    """Line protocol for one request, and what it holds of each file."""

    def __init__(self):
        self.parts, self.files, self.points, self.bytes = [], {}, 0, 0

    def add(self, sf, data, points, end, ended=(), lost=0, marker=False):
        self.parts.append(data)
        f = self.files.get(sf.name)
        if f is None:
            f = self.files[sf.name] = FilePart(sf)
        f.end = end
        f.parts.append(data)
        f.points += points
        f.ended += ended
        f.lost += lost
        f.marker |= marker
        self.points += points
        self.bytes += len(data)

    def only(self, name):
        """A batch of this one file's part, the same checked bytes."""
        f = self.files[name]
        single = Batch()
        single.parts, single.files = list(f.parts), {name: f}
        single.points, single.bytes = f.points, sum(map(len, f.parts))
        return single


class LineReader:
    def __init__(self, host, cluster, batch_bytes, max_job_days=31.0, limits=None):
        self.host, self.cluster, self.batch_bytes = host, cluster, batch_bytes
        self.max_job_days = max_job_days
        self.trusted = {0, os.geteuid()}     # owners whose files may say the user
        self.node_prefix = "".join(f"{lp.tag(k)}={lp.tag(v)}," for k, v in
                                   (("cluster", cluster), ("host", host)) if v).encode()
        # every figure's valid range (docs/metrics.md): the site's node, this window
        ranges = bounds(dict(limits or {}, max_job_days=max_job_days)).of
        self.checker = grammar.Checker(ranges)
        self.aside = []     # (owner, file, points, bytes, first line's fields) set aside
        self.owner_prefix = {}
        self.line_bytes = 512        # running estimate, sizes the reads

    def new_pass(self):
        """Before each pass: the time window moves with the clock (a line timed outside
        it would open shards no sampler's data needs: docs/security.md)."""
        self.checker.relearn()
        self.checker.set_window(*time_window(time.time(), self.max_job_days * 86400))

    def read(self, sf, max_bytes, max_points):
        """(line protocol ready to send, points, new offset, the keys of the jobs whose end
        point it holds, points their samplers lost) from sf, or None when it has no
        complete line left. Marks sf.bad on a line jobmon would not write."""
        if max_bytes <= 0 or max_points <= 0:
            return None
        want = min(max_bytes, int(max_points * self.line_bytes * 1.25) + 4096)
        data = os.pread(sf.fd, want, sf.offset)
        if data[:1] == b"\0" and not sf.finished:
            return None   # room kept for an end point, or a write still landing
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            if len(data) == want and want < max_bytes:
                self.line_bytes = max_bytes   # a line longer than the estimate: read it all
                return self.read(sf, max_bytes, max_points)
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
        end = sf.offset + len(data)
        kept, pos, aside, why = [], 0, 0, None
        while True:
            at = self.checker.first_bad(data, pos)
            if at is None:
                break
            line = data[at:data.index(b"\n", at) + 1]
            fields = self.checker.out_of_range(line)
            if fields is None:
                n = data.count(b"\n", 0, at) + 1
                sf.bad = f"line {n} of this read (byte {sf.offset + at}) " \
                    f"{self.checker.why_bad(line)}"
                return None
            # a figure no run can show: this line is set aside, the rest go on
            kept.append(data[pos:at])
            pos, aside, why = at + len(line), aside + 1, why or fields
        if aside:
            kept.append(data[pos:])
            self.aside.append((sf.owner, sf.name, aside, len(data) - sum(map(len, kept)), why))
            data, points = b"".join(kept), points - aside
        sf.offset = end
        stamped, ended, lost = self.stamp(data, sf.owner, sf.st.st_uid in self.trusted)
        return stamped, points, end, ended, lost

    def stamp(self, data, owner, trusted=False):
        """Set the shipper's tags on every line, dropping any the file carried. Also gives
        the keys of the jobs whose end point is among the lines, and the points their
        samplers lost."""
        prefix = self.owner_prefix.get(owner)
        if prefix is None:
            tags = {"user": owner, "host": self.host, "cluster": self.cluster}
            prefix = "".join(f"{lp.tag(k)}={lp.tag(v)}," for k, v in sorted(tags.items()) if v)
            prefix = self.owner_prefix[owner] = prefix.encode()
        if any(t in data for t in _SHIPPER_TAG_KEYS) and _SHIPPER_TAG.search(data):
            # rare: some line names one of our tags (the plain `in` scans are memchr-fast)
            if not trusted:
                data = b"".join(grammar.without_tags(line, _SHIPPER_TAG_NAMES)
                                for line in data.splitlines(True))
            elif b"host=" in data or b"cluster=" in data or \
                    data.count(b",user=") != data.count(b"\n"):
                return self.stamp_trusted(data, owner)
            else:   # a trusted sampler's lines, each with its user: only the node's tags
                prefix = self.node_prefix
        body = b"\n" + data
        ended, lost = [], 0
        for m in schema.MEASUREMENTS:   # split + join: ~3x faster than bytes.replace here
            m = m.encode()
            pieces = body.split(b"\n" + m + b",")
            if m == _JOB and len(pieces) > 1:    # a job's points: two per job
                for i, piece in enumerate(pieces[1:], 1):
                    nl = piece.find(b"\n")   # -1: the next line is a job point too
                    line = piece[:nl + 1] if nl >= 0 else piece + b"\n"
                    if _ENDED in line:   # found by bytes, not parsed: only ever about
                        ended.append(job_key(owner, m + b"," + line))   # the owner's job
                        found = _LOST.search(line)
                        lost += int(found.group(1)) if found else 0
                        line = unsettled(m + b"," + line)[len(m) + 1:]
                        pieces[i] = (line if nl >= 0 else line[:-1]) + \
                            (piece[nl + 1:] if nl >= 0 else b"")
            body = (b"\n" + m + b"," + prefix).join(pieces)
        return body[1:], ended, lost

    def stamp_trusted(self, data, owner):
        """stamp() for a trusted sampler's lines, line by line: a line's own `user` tag is
        kept, its `host` and `cluster` are the node's."""
        out, ended, lost = [], [], 0
        for line in data.splitlines(True):
            if b"user" not in grammar.tag_keys(line):
                stamped, keys, n = self.stamp(line, owner)
            else:
                line = grammar.without_tags(line, _NODE_TAG_NAMES)
                at = line.index(b",") + 1
                stamped, keys, n = line[:at] + self.node_prefix + line[at:], [], 0
                if line.startswith(_JOB + b",") and _ENDED in line:
                    stamped = unsettled(stamped)
                    found = _LOST.search(line)
                    keys, n = [job_key(owner, line)], int(found.group(1)) if found else 0
            out.append(stamped)
            ended += keys
            lost += n
        return b"".join(out), ended, lost

    def end_marker(self, sf):
        """For a job whose end point never came (sampler killed, disk full): (its job
        point again with `ended=1` and `reconciled=0`, from the file's first line, checked
        again; the job's key), so the job does not look as if it still ran. None when the
        file does not start with a job point."""
        head = os.pread(sf.fd, schema.MAX_LINE_BYTES + 1, 0)
        line = head[:head.find(b"\n") + 1]
        if not line.startswith(_JOB + b",") or self.checker.first_bad(line) is not None:
            return None
        trusted = sf.st.st_uid in self.trusted and b",user=" in line
        line = grammar.without_tags(line, _NODE_TAG_NAMES if trusted else _SHIPPER_TAG_NAMES)
        m = grammar.PARTS.fullmatch(line)
        # reconciled=0: `jobmon reconcile` folds the job's samples into it
        marker = m.group(1) + m.group(2) + b" ended=1i,reconciled=0i" + line[line.rindex(b" "):]
        return self.stamp(marker, sf.owner, trusted)[0], job_key(sf.owner, line)


def unsettled(line):
    """A job's end point as it is sent: not reconciled, whose job it is unconfirmed."""
    return grammar.with_fields(line, _UNSETTLED)


def job_key(owner, line):
    """A job run, whichever file its points came in: owner, sampler tags, start time."""
    m = grammar.PARTS.fullmatch(line)
    return owner.encode() + b" " + m.group(2) + line[line.rindex(b" "):]
