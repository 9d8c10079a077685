"""InfluxDB line protocol, standard library only (it runs inside every job).

Output is byte-for-byte what influxdb-client's Point.to_line_protocol() gives for the
same point (a test proves it), except where that would not survive a real server:

- A raw newline ends a point, and InfluxDB 1.x reads the `\\n` escape influxdb-client
  writes as a literal backslash + n. So control characters in tag keys/values become
  their Control Pictures (TAB U+2409, CR U+240D, ESC U+241B: jobmon.printable), so that
  ids that differ only by one stay distinct, and in string fields \\n and \\r become
  U+FFFD (jobmon's own multi-line texts, the command and the tags, are stored
  JSON-encoded, so nothing of theirs is lost).
- InfluxDB 1.x cannot represent a tag value ending in a backslash, or a backslash in
  front of `,`, ` ` or `=` (measured on 1.6.7: the point is rejected or split). Such a
  backslash becomes U+FF3C (fullwidth reverse solidus); every other backslash stays.
- Text that is not valid Unicode (bytes of a job id or tag that were not UTF-8, which
  Python keeps as lone surrogates) cannot be encoded: each such code point becomes U+FFFD.
- A series key longer than 64 KiB is refused by the server, and the whole spool file with
  it. A tag value longer than MAX_TAG_BYTES keeps its start and gets a checksum of the
  whole value instead of the rest (`<start>~<crc32>`), so distinct values stay distinct.

One point is always exactly one line: a hostile job name cannot inject a point.
"""
import math
import re
import zlib

from ..metrics import SAMPLE_FIELDS, SUMMARY_FIELDS
from ..printable import CONTROL_PICTURES

_SURROGATE = re.compile(r"[\ud800-\udfff]")
MAX_TAG_BYTES = 256     # UTF-8 bytes of a stored tag value (jobmon's own are far shorter)
_UNSAFE_BACKSLASH = re.compile(r"\\(?=[, =]|\Z)")
_ESCAPE_KEY = str.maketrans({",": r"\,", "=": r"\=", " ": r"\ "})
_ESCAPE_STRING = str.maketrans({'"': r"\"", "\\": r"\\", "\n": "\ufffd", "\r": "\ufffd"})

# the InfluxDB type of every numeric field, fixed by its unit: a field must keep one type
# or the server rejects the write ("field type conflict")
INTEGER_UNITS = ("bytes", "count", "")
FIELD_IS_INT = {n: u in INTEGER_UNITS for n, u, _r, _k, _m in SAMPLE_FIELDS}
FIELD_IS_INT.update({n: u in INTEGER_UNITS for n, u, _r, _m in SUMMARY_FIELDS})
FIELD_IS_INT.update({"elapsed_seconds": False, "interval": False})


def clean_tag(value):
    """The text a tag key/value is stored as (see the module doc). `jobmon query` looks
    ids up through this same function, so it finds what the writer stored."""
    value = str(value)
    if not value.isprintable():      # controls and lone surrogates are not
        value = _SURROGATE.sub("\ufffd", value.translate(CONTROL_PICTURES))
    if "\\" in value:
        value = _UNSAFE_BACKSLASH.sub("\uff3c", value)
    if len(value) > MAX_TAG_BYTES // 4 and len(value.encode()) > MAX_TAG_BYTES:
        value = _shorten(value)
    return value


def _shorten(value):
    raw = value.encode()
    start = raw[:MAX_TAG_BYTES - 9].decode("utf-8", "ignore")   # whole characters only
    return f"{start}~{zlib.crc32(raw):08x}"   # ends in hex: no backslash can end it


def tag(value):
    return clean_tag(value).translate(_ESCAPE_KEY)


def number(value, is_int):
    """A numeric field value, or None if it has none (None, NaN, inf)."""
    if value is None or isinstance(value, bool):
        return None
    if is_int:
        try:
            return f"{int(value)}i"
        except (ValueError, OverflowError):
            return None
    value = float(value)
    if not math.isfinite(value):
        return None
    s = str(value)
    return s[:-2] if s.endswith(".0") else s


def string(value):
    value = str(value)
    if not value.isascii():
        value = _SURROGATE.sub("\ufffd", value)
    return '"' + value.translate(_ESCAPE_STRING) + '"'


def line(measurement, tags, fields, time_ns):
    """One point. tags: {key: text}; fields: {key: already-encoded value} (see number(),
    string()). Tags and fields sorted like influxdb-client; empty tag values dropped."""
    out = [measurement.translate(_ESCAPE_KEY)]
    for k in sorted(tags):
        v = tags[k]
        if v is not None and v != "":
            out.append(f",{tag(k)}={tag(v)}")
    out.append(" ")
    out.append(",".join(f"{tag(k)}={fields[k]}" for k in sorted(fields)))
    out.append(f" {int(time_ns)}\n")
    return "".join(out)


def point(measurement, tags, values, time_ns):
    """One point from plain Python values: numbers typed by FIELD_IS_INT, str as strings."""
    fields = {}
    for k, v in values.items():
        if isinstance(v, str):
            fields[k] = string(v)
        else:
            enc = number(v, FIELD_IS_INT.get(k, isinstance(v, int)))
            if enc is not None:
                fields[k] = enc
    return line(measurement, tags, fields, time_ns)
