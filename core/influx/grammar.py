"""Is it jobmon line protocol? The grammar of one spool line, checked fast.

Spool files are written by job users, so the shipper checks every line against the
grammar of what jobmon.influx.lineprotocol writes before sending it: a line that does not parse
here could make the server split or join points differently from the shipper's view.

Speed (the shipper's largest cost): the grammar never needs to backtrack -- each token
ends at a delimiter it cannot contain -- so its repeats are possessive or atomic where
Python has them (3.11+), which saves the backtracking bookkeeping; older Pythons match
the same language the slow way. On top, a Checker learns each line *shape* it sees (the
measurement, the tag keys, the field keys and value types: a job writes thousands of
lines of one shape) and matches those lines with the keys as literals, about twice as
fast again. A shape's pattern matches a subset of the grammar, learnt only from a line
the grammar and valid() accepted, so learning changes the speed, never the answer.
"""
import re
import sys

from . import schema

MAX_SHAPES = 16   # a spool holds a few (sample, job start, job end per probe method)
TAG_KEYS = frozenset(t.encode() for t in schema.ALL_TAGS)
FIELD_TYPES = {m.encode(): {k.encode(): t for k, t in fields.items()}
               for m, fields in schema.FIELD_TYPES.items()}


def _atomic(pattern):
    """Marks -> syntax: `%+` possessive (after a one-character repeat), `(?%>` atomic
    group. Possessive *groups* are avoided: Python before 3.11.5 matches them wrongly
    (CPython gh-106052; Debian 12 has 3.11.2)."""
    if sys.version_info >= (3, 11):
        return pattern.replace(b"%+", b"+").replace(b"(?%>", b"(?>")
    return pattern.replace(b"%+", b"").replace(b"(?%>", b"(?:")


_TEXT = _atomic(rb"[^,= \\\n]*%+(?%>(?:\\[^\n][^,= \\\n]*%+)*)")   # escaped key or tag value
# a tag's key and value are never empty: InfluxDB refuses a line with `k=` (3.x: "tag
# values may not be empty"), and with it the whole spool file the line came from
_TAG_TEXT = rb"(?=[^,= \n])" + _TEXT
_STR = _atomic(rb'"[^"\\\n]*%+(?%>(?:\\[^\n][^"\\\n]*%+)*)"')
_FLOAT = _atomic(rb"-?%+(?%>[0-9]+%+\.?%+[0-9]*%+|\.[0-9]+%+)(?%>(?:[eE][+-]?%+[0-9]+%+)?)")
_NUM = _FLOAT + _atomic(rb"i?%+")
_VALUE = rb"(?:" + _NUM + rb"|" + _STR + rb"|true|false)"
_FIELD = _TEXT + rb"=" + _VALUE
_MEAS = rb"(?:" + b"|".join(m.encode() for m in schema.MEASUREMENTS) + rb")"
_TIME = rb" [0-8][0-9]{18}\n"   # ns since the epoch, up to 2255; within int64
LINE = re.compile(_MEAS + _atomic(rb"(?%>(?:," + _TAG_TEXT + rb"=" + _TAG_TEXT + rb")+) ")
                  + _FIELD + _atomic(rb"(?%>(?:," + _FIELD + rb")*)") + _TIME)
PARTS = re.compile(rb"(" + _MEAS + rb")((?:," + _TEXT + rb"=" + _TEXT + rb")+)( .*\n)",
                   re.S)    # measurement, tags, the rest
_TAG = re.compile(rb",(" + _TEXT + rb")=(" + _TEXT + rb")")
_FIELD_KV = re.compile(rb"(" + _TEXT + rb")=(" + _VALUE + rb")")
# the value patterns of a shape, by value type (each a subset of _VALUE)
_TYPED = {"int": _atomic(rb"-?%+[0-9]+%+i"), "float": _FLOAT, "str": _STR,
          "bool": rb"(?:true|false)"}
_TYPED_RE = {t: re.compile(p) for t, p in _TYPED.items()}


def valid(line):
    """Does a line that matches LINE use only jobmon's keys, each once, and each field
    with its type?"""
    meas, tags, rest = PARTS.fullmatch(line).groups()
    keys = [t.group(1) for t in _TAG.finditer(tags)]
    if b"job" not in keys or len(set(keys)) != len(keys) or not TAG_KEYS.issuperset(keys):
        return False
    types, seen = FIELD_TYPES[meas], set()
    for f in _FIELD_KV.finditer(rest, 1, rest.rindex(b" ")):
        key, value = f.groups()
        want = types.get(key)
        if want is None or key in seen or not _TYPED_RE[want].fullmatch(value):
            return False
        seen.add(key)
    return True


def tag_keys(line):
    """The tag keys of a line that matches LINE."""
    return [t.group(1) for t in _TAG.finditer(PARTS.fullmatch(line).group(2))]


def between(lo, hi):
    """A regex (bytes) for the decimal numbers from lo to hi, both bytes of one length
    (leading zeros kept)."""
    n = len(lo)
    if lo == hi:
        return re.escape(lo)
    if lo == b"0" * n and hi == b"9" * n:
        return b"[0-9]{%d}" % n
    a, b = lo[0] - 48, hi[0] - 48
    if a == b:
        return lo[:1] + b"(?:" + between(lo[1:], hi[1:]) + b")"
    if n == 1:
        return b"[%d-%d]" % (a, b)
    out = [lo[:1] + b"(?:" + between(lo[1:], b"9" * (n - 1)) + b")"]
    if b - a > 1:
        out.append(b"[%d-%d][0-9]{%d}" % (a + 1, b - 1, n - 1))
    out.append(hi[:1] + b"(?:" + between(b"0" * (n - 1), hi[1:]) + b")")
    return b"(?:" + b"|".join(out) + b")"


def within(kind, lo, hi):
    """A regex (bytes) for numbers of type `kind` ("int", "float") that are surely within
    [lo, hi]: no more whole digits than hi has, less one; a sign only where lo < 0. A
    number it does not match may still be within: the slow path parses it."""
    digits = len(str(int(min(hi, -lo) if lo < 0 else hi))) - 1
    if digits < 1:   # a flag (0 or 1), say; a float: the slow path
        return b"[0-%d]i" % int(hi) if kind == "int" and lo >= 0 and hi >= 0 else b"(?!)"
    sign = b"-?" if lo < 0 else b""
    whole = sign + b"[0-9]{1,%d}" % digits
    if kind == "int":
        return whole + b"i"
    # what repr() writes: 12.5, 0.001, and 1e-05 for the smallest (under 10, so within)
    return _atomic(b"(?:" + whole + b"(?:\\.[0-9]+%+)?(?![0-9])|" + sign +
                   b"[0-9](?:\\.[0-9]+%+)?e-[0-9]{2,3})")


def shape_pattern(line, time=_TIME, ranges=None):
    """A regex (bytes) for the lines of this line's shape, timed as `time` matches; line
    must be valid(). ranges ({field: (lo, hi)}): a number of a field with one matches
    only where it is surely within it."""
    meas, tags, rest = PARTS.fullmatch(line).groups()
    types = FIELD_TYPES[meas]
    out = [re.escape(meas)]
    out += [b"," + re.escape(t.group(1)) + b"=" + _TAG_TEXT for t in _TAG.finditer(tags)]
    out.append(b" ")
    out.append(b",".join(re.escape(f.group(1)) + b"=" + _value(types[f.group(1)],
                                                                (ranges or {}).get(f.group(1)))
                         for f in _FIELD_KV.finditer(rest, 1, rest.rindex(b" "))))
    out.append(time)
    return b"".join(out)


def _value(kind, bounds):
    if bounds is None or kind not in ("int", "float"):
        return _TYPED[kind]
    return within(kind, *bounds)


def out_of_range(line, ranges):
    """The names of the numeric fields of a valid() line outside their ranges ({field:
    (lo, hi)}): NaN and the infinities (1e999 parses as one) never within."""
    meas, _tags, rest = PARTS.fullmatch(line).groups()
    bad = []
    for f in _FIELD_KV.finditer(rest, 1, rest.rindex(b" ")):
        key, value = f.groups()
        r = ranges.get(key.decode())
        if r is None or value[:1] == b'"' or value in (b"true", b"false"):
            continue
        number = int(value[:-1]) if value.endswith(b"i") else float(value)
        if not r[0] <= number <= r[1]:
            bad.append(key.decode())
    return bad


class Checker:
    """Checks batches of spool lines; remembers the shapes it has seen. ranges: {field:
    (lo, hi)}, each numeric field's valid range (jobmon.metrics.ranges): a line with a
    figure outside it is found like one that does not parse (first_bad), and told apart
    by out_of_range()."""

    def __init__(self, ranges=None):
        self.shapes = []
        self.known = None          # (?:shape|shape|...)*, None until one is learnt
        self.window = None         # (first, last) second a line's time may be in
        self.time = _TIME
        self.ranges = ranges

    def set_window(self, first, last):
        """From now on refuse lines timed outside [first, last] (whole seconds since the
        epoch): the window is part of each learnt shape, so checking it costs no more
        than matching the digits did. A new window forgets the shapes."""
        first, last = max(first, 10**9), min(last, 9 * 10**9 - 1)   # 19-digit times
        if (first, last) == self.window:
            return
        self.window = (first, last)
        self.time = b" " + between(b"%d" % first, b"%d" % last) + b"[0-9]{9}\n"
        self.shapes, self.known = [], None

    def first_bad(self, data, pos=0):
        """None when data (from pos on) is whole lines of jobmon line protocol with every
        figure in range, else the offset of the first line that is not."""
        end = len(data)
        while True:
            if self.known is not None:
                pos = self.known.match(data, pos).end()
            if pos == end:
                return None
            m = LINE.match(data, pos)
            if m is None or not valid(data[pos:m.end()]) or not self.timely(data, m.end()) \
                    or (self.ranges and out_of_range(data[pos:m.end()], self.ranges)):
                return pos
            self._learn(data[pos:m.end()])
            pos = m.end()

    def timely(self, data, end):
        """Is the line ending at `end` (a LINE match) timed within the window?"""
        return self.window is None or \
            self.window[0] <= int(data[end - 20:end - 10]) <= self.window[1]

    def out_of_range(self, line):
        """The fields outside their ranges of a line first_bad() refused, where that is
        all that is wrong with it (it parses and is timely); else None."""
        if not self.ranges or LINE.fullmatch(line) is None or not valid(line) or \
                not self.timely(line, len(line)):
            return None
        return out_of_range(line, self.ranges) or None

    def why_bad(self, line):
        """What is wrong with a line first_bad() refused (ending in a newline)."""
        m = LINE.fullmatch(line)
        if m is None or not valid(line):
            return "is not jobmon line protocol"
        return (f"is timed at {int(line[-20:-10])} s, outside {self.window[0]} ... "
                f"{self.window[1]} s since the epoch")

    def relearn(self):
        """Forget the shapes once the table is full: lines that do not fit a learnt shape
        are checked the slow way, and nobody's odd lines may keep everybody there."""
        if len(self.shapes) >= MAX_SHAPES:
            self.shapes, self.known = [], None

    def _learn(self, line):
        if len(self.shapes) >= MAX_SHAPES:
            return     # still checked, line by line, with the whole grammar
        pattern = shape_pattern(line, self.time, self.ranges)
        if pattern not in self.shapes:
            self.shapes.append(pattern)
            self.known = re.compile(_atomic(b"(?%>(?:") + b"|".join(self.shapes) + b")*)")


def without_tags(line, names):
    """line with the tags named in `names` (bytes) removed; it keeps at least one tag."""
    m = PARTS.fullmatch(line)
    if not m:
        return line
    keep = [t.group(0) for t in _TAG.finditer(m.group(2)) if t.group(1) not in names]
    if not keep:
        keep = [b",job=unknown"]
    return m.group(1) + b"".join(keep) + m.group(3)


def with_fields(line, fields):
    """line (matching LINE) with the fields in `fields` ({key: encoded value}, bytes) set:
    any of them it carried removed, these appended."""
    meas, tags, rest = PARTS.fullmatch(line).groups()
    end = rest.rindex(b" ")
    kept = [f.group(0) for f in _FIELD_KV.finditer(rest, 1, end) if f.group(1) not in fields]
    return meas + tags + b" " + b",".join(kept + [k + b"=" + v for k, v in fields.items()]) \
        + rest[end:]
