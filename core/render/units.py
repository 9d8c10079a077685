"""Figures as people read them, the same in the terminal and on the HTML page."""
import datetime
import math

from ..printable import LARGEST_FIXED, clean, co2e, energy, fixed, size

LONGEST = datetime.timedelta.max.total_seconds()   # beyond it, no "(d days, h:mm:ss)"


def when(ts, fmt="%Y-%m-%d %H:%M:%S", none="-"):
    """Local time of `ts` (seconds since the epoch) as `fmt` (None: ISO 8601 with the UTC
    offset); `none` for none; a time no calendar holds (a forged 1e308) as its figure."""
    if not ts:
        return none
    try:
        t = datetime.datetime.fromtimestamp(ts).astimezone()
    except (OverflowError, ValueError, OSError, TypeError):
        return fixed(ts)
    return t.isoformat(" ", "seconds") if fmt is None else t.strftime(fmt)


def number(value):
    """A plain number, short and never in exponent form: 3, 0.421, 12.35, 1234,
    0.000005 (three significant digits below 1)."""
    a = abs(value)
    if a >= LARGEST_FIXED or value != value:
        return fixed(value)
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    digits = 0 if a >= 100 else 2 if a >= 1 else 2 - math.floor(math.log10(a))
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


# units named in the singular for a figure of exactly one
SINGULAR = {"units": "unit"}


def human(value, unit=""):
    """A figure as people read it (clean text, not markup-escaped); bytes in binary units
    (jobmon.printable.size: the one unit policy)."""
    if value is None:
        return "–"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return clean(value)
    if unit == "bytes":
        return size(value)
    if unit in ("bytes/h", "bytes/s"):
        return size(value) + unit[5:]
    if unit == "s":
        return f"{fixed(value)} s" if not 3600 <= value < LONGEST else \
            f"{value:.0f} s ({datetime.timedelta(seconds=round(value))})"
    if unit == "yes/no":
        return "yes" if value else "no"
    if unit == "J":
        return energy(value)
    if unit == "gCO2e":
        return co2e(value)
    if unit in ("%", "W"):
        return f"{fixed(value, '.1f')} {unit}"
    if unit == "cores":
        return f"{fixed(value)} cores"
    if unit and unit != "count":
        return f"{number(value)} {SINGULAR.get(unit, unit) if value == 1 else unit}"
    return number(value) if isinstance(value, float) else str(value)


# scheduler ends that say nothing beyond the exit status
_PLAIN_ENDS = {None, "", "none", "COMPLETED", "completed"}


def short_status(s):
    """One record's end in a few words: its exit status, the scheduler's end where it was
    reconciled and says more, "cut short" for a run whose end-of-job record never came."""
    if s.get("signal"):
        text = f"signal {s['signal']}"
    elif s.get("exit_code") is not None:
        text = f"exit {s['exit_code']}"
    elif not s or s.get("end_time") is None:
        return "no summary" if s else "running?"
    else:
        text = "no exit status"
    if s.get("scheduler_state") not in _PLAIN_ENDS:
        text += f" ({str(s['scheduler_state']).lower().replace('_', ' ')})"
    return text + (", cut short" if s.get("cut_short") else "")
