"""Text and figures from a job, made safe to show a person. Standard library only (the
report card uses it inside the job's wrapper).

Everything a job supplies -- its id, command line, tags, user and host names, run labels,
and every string read back from a store or the scheduler -- is hostile: a terminal obeys
escape sequences (set the title, clear the screen, move the cursor to forge lines), and
bidirectional controls (U+202E) make text read in another order than it is. Every
renderer that writes for a person (the terminal views, `jobmon list`, `report`, `pilot`,
`top`, `watch`, the report card, CSV written to a terminal, the HTML page) passes each
such string through clean(), and each figure through fixed().
"""
import math

# C0 controls and DEL are shown as their Control Pictures (U+2400-U+241F, U+2421):
# seen, never obeyed, and two ids that differ only by a TAB or a CR stay two ids on screen
# (the InfluxDB writer stores them the same way: jobmon.influx.lineprotocol)
CONTROL_PICTURES = {c: 0x2400 + c for c in range(0x20)}
CONTROL_PICTURES[0x7F] = 0x2421
REPLACEMENT = "\ufffd"
# no real figure reaches this (1e15 s is 30 million years, 1e15 cores, ...): beyond it a
# figure is shown in scientific notation, so a forged 1e308 is not 309 digits
LARGEST_FIXED = 1e15


def clean(value):
    """`value` as text that cannot drive a terminal or reorder what is around it: C0
    controls and DEL become their Control Pictures (ESC: U+241B), every other character
    that is not printable (C1 controls, bidirectional and other format controls, line and
    paragraph separators, unassigned code points, lone surrogates) becomes U+FFFD."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else chr(CONTROL_PICTURES[ord(c)])
                   if ord(c) in CONTROL_PICTURES else REPLACEMENT for c in text)


def fixed(value, spec=".2f"):
    """A figure formatted with `spec` (a format spec for floats: ".2f", ",.0f"); one
    beyond LARGEST_FIXED in 3 significant digits instead; a value that is not a number
    (a forged field) as clean text."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return clean(value)
    if abs(value) >= LARGEST_FIXED:      # inf stays "inf"; NaN fails the test: "nan"
        return f"{value if abs(value) <= 1e308 else math.inf if value > 0 else -math.inf:.3g}"
    return format(value, spec)


# The one unit policy for bytes: binary units with their IEC names (1 KiB = 1024 B), as
# the schedulers read memory requests (their "MB" and "GB" are MiB and GiB)
BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def size(value, short=False):
    """Bytes as people read them: "512 B", "7.9 MiB", "3.0 GiB"; short (a narrow column,
    a request): at most 3 significant digits and no ".0", "7.9 MiB", "123 MiB", "3 GiB" (8
    characters at most). A figure that is not a number (a forged field) as clean text, one
    beyond any real one as fixed() gives it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return clean(value)
    if not abs(value) < LARGEST_FIXED:   # a forged figure (or NaN): its 3 digits
        return fixed(value) + " B"
    v = float(value)
    for unit in BYTE_UNITS:
        if abs(v) < 1024 or unit == BYTE_UNITS[-1]:
            break
        v /= 1024
    if unit == "B":
        return f"{fixed(v, '.0f')} B"
    if not short:
        return f"{fixed(v, '.1f')} {unit}"
    text = fixed(v, ".0f" if abs(v) >= 99.95 else ".1f")
    return f"{text[:-2] if text.endswith('.0') else text} {unit}"


def energy(joules):
    """Energy as people read it: "850.0 J", "12.4 kJ", "4.5 MJ (1.25 kWh)"; the unit chosen
    for the figure as rounded (999.96 J is "1.0 kJ", not "1000.0 J")."""
    if isinstance(joules, bool) or not isinstance(joules, (int, float)) or \
            not abs(joules) < LARGEST_FIXED:
        return fixed(joules) + (" J" if isinstance(joules, (int, float)) else "")
    a = abs(joules)
    if round(a, 1) < 1e3:
        return f"{fixed(joules, '.1f')} J"
    if round(a / 1e3, 1) < 1e3:
        return f"{fixed(joules / 1e3, '.1f')} kJ"
    return f"{fixed(joules / 1e6, '.1f')} MJ ({fixed(joules / 3.6e6, '.2f')} kWh)"


def significant(value):
    """A figure in 3 significant digits, written out, never in exponent form: "0.000123",
    "0.420", "12.3", "100" (99.96), "1,234" (every digit of a whole number from 100 up)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not abs(value) < LARGEST_FIXED:
        return fixed(value)
    a = abs(float(f"{value:.3g}"))        # as rounded: 0.9999 is "1.00", not "1.000"
    digits = 0 if a >= 100 else 1 if a >= 10 else 2 if a >= 1 or a == 0 else \
        2 - math.floor(math.log10(a))
    return fixed(value, f",.{digits}f")


def co2e(grams):
    """CO2 equivalent: "0.420 gCO2e", "12.3 gCO2e", "4.56 kgCO2e"; the unit chosen for the
    figure as rounded (999.6 g is "1.00 kgCO2e", not "1000 gCO2e")."""
    if isinstance(grams, (int, float)) and not isinstance(grams, bool) and \
            1e3 <= abs(float(f"{grams:.3g}")) < LARGEST_FIXED:
        return f"{significant(grams / 1e3)} kgCO2e"
    return significant(grams) + (" gCO2e" if isinstance(grams, (int, float)) else "")
