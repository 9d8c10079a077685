"""Reading spool lines for a batch: whole lines only, checked against the grammar of what
jobmon writes, and stamped with the tags only the shipper may set."""
import os
import re

from ..influx import grammar
from ..influx import lineprotocol as lp
from ..influx import schema

_SHIPPER_TAG_NAMES = tuple(t.encode() for t in schema.SHIPPER_TAGS)
_SHIPPER_TAG_KEYS = tuple(t + b"=" for t in _SHIPPER_TAG_NAMES)
_SHIPPER_TAG = re.compile(rb"[, ](?:" + b"|".join(_SHIPPER_TAG_NAMES) + rb")=")


class Batch:
    """Line protocol for one request, and how far into each file it reaches."""

    def __init__(self):
        self.parts, self.ends, self.points, self.bytes = [], {}, 0, 0

    def add(self, sf, data, points, end):
        self.parts.append(data)
        self.ends[sf.name] = (sf, end)
        self.points += points
        self.bytes += len(data)


class LineReader:
    def __init__(self, host, cluster, batch_bytes):
        self.host, self.cluster, self.batch_bytes = host, cluster, batch_bytes
        self.checker = grammar.Checker()
        self.owner_prefix = {}
        self.line_bytes = 512        # running estimate, sizes the reads

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
        at = self.checker.first_bad(data)
        if at is not None:
            n = data.count(b"\n", 0, at) + 1
            sf.bad = f"line {n} of this read (byte {sf.offset + at}) is not jobmon line protocol"
            return None
        end = sf.offset + len(data)
        sf.offset = end
        return self.stamp(data, sf.owner), points, end

    def stamp(self, data, owner):
        """Set the shipper's tags on every line, dropping any the file carried."""
        prefix = self.owner_prefix.get(owner)
        if prefix is None:
            tags = {"user": owner, "host": self.host, "cluster": self.cluster}
            prefix = "".join(f"{lp.tag(k)}={lp.tag(v)}," for k, v in sorted(tags.items()) if v)
            prefix = self.owner_prefix[owner] = prefix.encode()
        if any(t in data for t in _SHIPPER_TAG_KEYS) and _SHIPPER_TAG.search(data):
            # rare: some line names one of our tags (the plain `in` scans are memchr-fast)
            data = b"".join(grammar.without_tags(line, _SHIPPER_TAG_NAMES)
                            for line in data.splitlines(True))
        body = b"\n" + data
        for m in schema.MEASUREMENTS:   # split + join: ~3x faster than bytes.replace here
            m = b"\n" + m.encode() + b","
            body = (m + prefix).join(body.split(m))
        return body[1:]
