"""The plain part of TOML a site configuration is written in, read without tomllib.

tomllib imports re, typing, string and datetime: ~20 ms of CPU at the start of every job
whose node has a configuration file, more than the rest of a job wrapper's start-up. A
site file is `[section]` headers and `key = value` lines (a string without escapes, an
integer, a float, true or false) with comments. parse() reads exactly that and gives
what tomllib gives; for anything else -- escapes, arrays, dotted keys, a repeated key, a
malformed line -- it gives None, and tomllib reads the text (and says what is wrong).
"""

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_DIGITS = frozenset("0123456789")
_SPACE = " \t"
_CONTROL = frozenset(chr(c) for c in range(32) if chr(c) not in "\t\n") | {"\x7f"}


def parse(text):
    """{section: {key: value}} (keys before any header at the top), or None."""
    if not _CONTROL.isdisjoint(text):
        return None                  # control characters, CR: tomllib's rules
    out, table = {}, None
    for line in text.split("\n"):
        s = line.strip(_SPACE)
        if not s or s[0] == "#":
            continue
        if s[0] == "[":
            name, close, rest = s[1:].partition("]")
            if not close or not _bare(name) or not _comment(rest) or name in out:
                return None
            table = out[name] = {}
            continue
        key, eq, rest = s.partition("=")
        key = key.strip(_SPACE)
        here = out if table is None else table
        if not eq or not _bare(key) or key in here:
            return None
        value, ok = _value(rest.strip(_SPACE))
        if not ok:
            return None
        here[key] = value
    return out


def _bare(name):
    return bool(name) and all(c in _BARE for c in name)


def _comment(rest):
    """Nothing, or a comment, after a header or a value."""
    rest = rest.strip(_SPACE)
    return not rest or rest[0] == "#"


def _value(v):
    """(value, True) for a value this reader takes (with an optional comment after it)."""
    if v[:1] in ('"', "'"):
        end = v.find(v[0], 1)
        if end < 0 or not _comment(v[end + 1:]):
            return None, False
        s = v[1:end]
        if v[0] == '"' and "\\" in s or v.startswith(('"""', "'''")):
            return None, False       # escapes and multi-line strings: tomllib's
        return s, True
    word = v.partition("#")[0].rstrip(_SPACE)   # a comment may follow
    if word in ("true", "false"):
        return word == "true", True
    return _number(word)


def _number(w):
    """A decimal integer or float as TOML writes them (no underscores, no leading zero,
    no inf or nan: those go to tomllib)."""
    body = w[1:] if w[:1] in ("+", "-") else w
    mant, e, exp = body.replace("E", "e").partition("e")
    whole, dot, frac = mant.partition(".")
    if not _int_digits(whole) or (dot and not _digits(frac)) or \
            (e and not _digits(exp[1:] if exp[:1] in ("+", "-") else exp)):
        return None, False
    if not dot and not e:
        return int(w), True
    return float(w), True


def _digits(s):
    return bool(s) and all(c in _DIGITS for c in s)


def _int_digits(s):
    return _digits(s) and (s == "0" or s[0] != "0")
