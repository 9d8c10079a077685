"""InfluxDB line protocol, standard library only (it runs inside every job).

Output is byte-for-byte what influxdb-client's Point.to_line_protocol() gives for the
same point (a test proves it), except where that would not survive a real server:

- A raw newline ends a point, and InfluxDB 1.x reads the `\\n` escape influxdb-client
  writes as a literal backslash + n. So control characters in tag keys/values become
  U+FFFD, and in string fields \\n and \\r become U+FFFD (jobmon's own multi-line texts,
  the command and the tags, are stored JSON-encoded, so nothing of theirs is lost).
- InfluxDB 1.x cannot represent a tag value ending in a backslash, or a backslash in
  front of `,`, ` ` or `=` (measured on 1.6.7: the point is rejected or split). Such a
  backslash becomes U+FF3C (fullwidth reverse solidus); every other backslash stays.

One point is always exactly one line: a hostile job name cannot inject a point.
"""
import math
import re

from ..metrics import SAMPLE_FIELDS, SUMMARY_FIELDS

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_UNSAFE_BACKSLASH = re.compile(r"\\(?=[, =]|\Z)")
_ESCAPE_KEY = str.maketrans({",": r"\,", "=": r"\=", " ": r"\ "})
_ESCAPE_STRING = str.maketrans({'"': r"\"", "\\": r"\\", "\n": "\ufffd", "\r": "\ufffd"})

# the InfluxDB type of every numeric field, fixed by its unit: a field must keep one type
# or the server rejects the write ("field type conflict")
INTEGER_UNITS = ("bytes", "count", "")
FIELD_IS_INT = {n: u in INTEGER_UNITS for n, u, _k, _m in SAMPLE_FIELDS}
FIELD_IS_INT.update({n: u in INTEGER_UNITS for n, u, _m in SUMMARY_FIELDS})
FIELD_IS_INT.update({"elapsed_seconds": False, "interval": False})


def clean_tag(value):
    """The text a tag key/value is stored as (see the module doc)."""
    value = str(value)
    if "\\" in value:
        value = _UNSAFE_BACKSLASH.sub("\uff3c", value)
    return _CONTROL.sub("\ufffd", value)


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
    return '"' + str(value).translate(_ESCAPE_STRING) + '"'


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
