"""Figures as people read them, the same in the terminal and on the HTML page."""
import datetime


def number(value):
    """A plain number, short: 3, 0.421, 12.35, 1234."""
    if isinstance(value, int) or float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    a = abs(value)
    text = f"{value:.0f}" if a >= 100 else f"{value:.2f}" if a >= 1 else f"{value:.3g}"
    return text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text


def human(value, unit=""):
    """A figure as people read it (text, not escaped)."""
    if value is None:
        return "–"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if unit == "bytes":
        v = float(value)
        for u in ("B", "KiB", "MiB", "GiB", "TiB"):
            if abs(v) < 1024 or u == "TiB":
                return f"{v:.0f} {u}" if u == "B" else f"{v:.1f} {u}"
            v /= 1024
    if unit in ("bytes/h", "bytes/s"):
        return human(value, "bytes") + unit[5:]
    if unit == "s":
        return f"{value:.2f} s" if value < 3600 else \
            f"{value:.0f} s ({datetime.timedelta(seconds=round(value))})"
    if unit == "yes/no":
        return "yes" if value else "no"
    if unit in ("%", "J"):
        return f"{value:.1f} {unit}"
    if unit == "cores":
        return f"{value:.2f} cores"
    if unit and unit != "count":
        return f"{number(value)} {unit}"
    return number(value) if isinstance(value, float) else str(value)
