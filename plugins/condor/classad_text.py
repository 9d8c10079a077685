"""Read HTCondor's job and machine ads with the standard library only.

The wrapper runs inside every job, where the classad2 bindings would cost ~15 MiB of the
job's own memory. It needs only literals (strings, numbers, booleans, undefined), so this
reader takes those and keeps everything else as the expression's text (`Expr`), for
classad2 to evaluate outside the job (the shipper, `jobmon query`).

Old syntax (the starter's .job.ad and .machine.ad): one `Name = value` per line. A string
escapes only a double quote, as `\\"`, and a backslash before the closing quote at the end
of the line is a plain backslash: HTCondor's own ConvertEscapingOldToNew rule.
New syntax (`[ A = 1; B = "x"; ]`): attributes separated by `;`, strings with C escapes
(`\\n`, `\\"`, `\\\\`, octal bytes).
"""
# checked character by character: `re` would cost every job a few ms of start-up
_DIGITS = frozenset("0123456789")
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_REST = _NAME_START | _DIGITS | {"."}
_KEYWORDS = {"true": True, "false": False, "undefined": None}
_C_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "a": "\a", "v": "\v",
              "\\": "\\", '"': '"', "'": "'", "?": "?"}


class Expr(str):
    """An attribute whose value is an expression, kept as its text."""
    __slots__ = ()

    def __repr__(self):
        return f"Expr({str.__repr__(self)})"


class Ad:
    """Attribute -> value; names are looked up regardless of case, as in ClassAds."""
    __slots__ = ("_values", "_names")

    def __init__(self, pairs=()):
        self._values, self._names = {}, {}
        for k, v in pairs:
            self[k] = v

    def __setitem__(self, name, value):
        key = name.lower()
        self._values[key] = value
        self._names[key] = name

    def __getitem__(self, name):
        return self._values[name.lower()]

    def __contains__(self, name):
        return name.lower() in self._values

    def get(self, name, default=None):
        return self._values.get(name.lower(), default)

    def __len__(self):
        return len(self._values)

    def __iter__(self):
        return iter(self._names.values())

    def items(self):
        return [(self._names[k], v) for k, v in self._values.items()]

    def __repr__(self):
        return f"Ad({self.items()!r})"


def parse(text):
    """An Ad from either syntax (new when the text starts with `[`)."""
    s = text.lstrip()
    return parse_new(s) if s.startswith("[") else parse_old(text)


def read(path):
    with open(path, "rb") as f:
        return parse(f.read().decode("utf-8", "replace"))


# --- old syntax ---------------------------------------------------------------------------

def parse_old(text):
    ad = Ad()
    for line in text.split("\n"):
        name, sep, rhs = line.partition("=")
        name = name.strip()
        if not sep or not _is_name(name):
            continue   # blank, comment, banner or malformed: not an attribute
        ad[name] = old_value(rhs.rstrip("\r"))
    return ad


def old_value(rhs):
    """A literal (str, int, float, bool, None for undefined) or Expr(text)."""
    v = rhs.strip()
    if v.startswith('"'):
        s = _old_string(v)
        if s is not None:
            return s
    return _scalar(v)


def _old_string(v):
    out = []
    i, n = 1, len(v)
    while i < n:
        c = v[i]
        if c == "\\" and i + 1 < n and v[i + 1] == '"' and i + 2 < n:
            out.append('"')   # an escaped quote, unless it ends the line
            i += 2
            continue
        if c == '"':
            return "".join(out) if not v[i + 1:].strip() else None
        out.append(c)
        i += 1
    return None   # unterminated


# --- new syntax ---------------------------------------------------------------------------

def parse_new(text):
    s = text.strip()
    end = s.rfind("]")
    body = s[1:end if end > 0 else len(s)]
    ad = Ad()
    for part in _split_top(body, ";"):
        name, sep, rhs = part.partition("=")
        name = name.strip()
        if sep and _is_name(name) and rhs.strip():
            ad[name.strip("'")] = new_value(rhs)   # the old syntax keeps the quotes
    return ad


def new_value(rhs):
    v = rhs.strip()
    if v.startswith('"'):
        s, rest = _new_string(v)
        if s is not None and not rest.strip():
            return s
    return _scalar(v)


def _new_string(v):
    """(value, text after the closing quote), or (None, "") if unterminated."""
    out = bytearray()
    i, n = 1, len(v)
    while i < n:
        c = v[i]
        if c == '"':
            return out.decode("utf-8", "replace"), v[i + 1:]
        if c == "\\" and i + 1 < n:
            nxt = v[i + 1]
            if nxt in "01234567":
                j = i + 1
                while j < n and j < i + 4 and v[j] in "01234567":
                    j += 1
                out.append(int(v[i + 1:j], 8) & 0xFF)
                i = j
                continue
            out += _C_ESCAPES.get(nxt, nxt).encode()
            i += 2
            continue
        out += c.encode()
        i += 1
    return None, ""


def _split_top(body, sep):
    """Split on `sep` outside strings, brackets and braces (nested ads, lists)."""
    parts, depth, start, i, n = [], 0, 0, 0, len(body)
    while i < n:
        c = body[i]
        if c == '"':
            i += 1
            while i < n and body[i] != '"':
                i += 2 if body[i] == "\\" else 1
        elif c in "[{(":
            depth += 1
        elif c in "]})":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(body[start:i])
            start = i + 1
        i += 1
    parts.append(body[start:])
    return parts


def _is_name(s):
    """A name, or any text in single quotes (how reserved words such as `is` are written)."""
    if len(s) >= 2 and s[0] == s[-1] == "'":
        return "'" not in s[1:-1]
    return bool(s) and s[0] in _NAME_START and all(c in _NAME_REST for c in s)


def _digits(s):
    return bool(s) and all(c in _DIGITS for c in s)


def _unsigned_real(s):
    """1, 1., 1.5, .5, each with an optional exponent (e5, E-3)."""
    for e in "eE":
        if e in s:
            s, _, exp = s.partition(e)
            if not _digits(exp[1:] if exp[:1] in ("+", "-") else exp):
                return False
            break
    whole, dot, frac = s.partition(".")
    return (_digits(whole) or _digits(frac)) and (not whole or _digits(whole)) \
        and (not frac or _digits(frac)) and (dot or not frac)


def _scalar(v):
    low = v.lower()
    if low in _KEYWORDS:
        return _KEYWORDS[low]
    unsigned = v[1:] if v[:1] in ("+", "-") else v
    if _digits(unsigned):
        return int(v)
    if _unsigned_real(unsigned):
        return float(v)
    return Expr(v)
