"""JSON text for the per-job writers (the embedded store, the summary file) without the
json package: json imports re, and the two cost every job ~10 ms of CPU at its start.
The text is json.dumps's, byte for byte (tests/test_jsontext.py), for what samples and
summaries hold: dict, list, tuple, str, int, float, bool and None. Readers use json.
"""

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t",
            "\b": "\\b", "\f": "\\f"}


def dumps(obj, indent=None):
    """json.dumps(obj) or json.dumps(obj, indent=indent)."""
    out = []
    _write(obj, out, indent, 0)
    return "".join(out)


def _write(o, out, indent, level):
    if isinstance(o, str):
        out.append(_string(o))
    elif isinstance(o, (int, float)) or o is None:
        out.append(_scalar(o))
    elif isinstance(o, dict):
        _items([(_string(_key(k)) + ": ", v) for k, v in o.items()], "{}", out, indent, level)
    elif isinstance(o, (list, tuple)):
        _items([("", v) for v in o], "[]", out, indent, level)
    else:
        raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _items(items, brackets, out, indent, level):
    if not items:
        out.append(brackets)
        return
    if indent is None:
        sep, end = ", ", ""
    else:
        sep = ",\n" + " " * (indent * (level + 1))
        end = "\n" + " " * (indent * level)
    out.append(brackets[0])
    if indent is not None:
        out.append(sep[1:])
    for i, (head, value) in enumerate(items):
        if i:
            out.append(sep)
        out.append(head)
        _write(value, out, indent, level + 1)
    out.append(end + brackets[1])


def _scalar(o):
    if o is None:
        return "null"
    if o is True or o is False:
        return "true" if o else "false"
    if isinstance(o, int):
        return int.__repr__(o)
    if o != o:
        return "NaN"
    if o in (float("inf"), float("-inf")):
        return "Infinity" if o > 0 else "-Infinity"
    return float.__repr__(o)


def _key(k):
    if isinstance(k, str):
        return k
    if isinstance(k, (int, float)) or k is None:
        return _scalar(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")


def _string(s):
    """ensure_ascii as json does it: printable ASCII as is, the rest \\u-escaped (UTF-16)."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'
    out = []
    for c in s:
        e = _ESCAPES.get(c)
        if e is not None:
            out.append(e)
        elif " " <= c <= "~":
            out.append(c)
        else:
            n = ord(c)
            if n > 0xFFFF:
                n -= 0x10000
                out.append(f"\\u{0xD800 | (n >> 10):04x}\\u{0xDC00 | (n & 0x3FF):04x}")
            else:
                out.append(f"\\u{n:04x}")
    return '"' + "".join(out) + '"'
