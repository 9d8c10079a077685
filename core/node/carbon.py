"""The carbon intensity of the node's electricity, in gCO2e per kWh, as the site sets it
([node_reader] in the site file; docs/energy.md): a constant, or a time series the site
keeps up to date in a file, or both (the file first, the constant where it has nothing).

The file: one `TIME,G_PER_KWH` per line, TIME in seconds since the epoch or ISO 8601
(`2026-03-01T14:00:00Z`, `2026-03-01T15:00:00+01:00`), in time order; `#` starts a
comment; a first line that is not a figure (a header) is skipped. A value holds from its
time to the next one's; after the last, for as long as the series' last step (its last two
times apart), then it is out of date. The file is read again when it changes.
"""
import logging
import os
from datetime import datetime

log = logging.getLogger("jobmon.node")


class IntensityError(ValueError):
    pass


def _when(text):
    try:
        return float(text)
    except ValueError:
        pass
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise IntensityError(f"{text!r} is neither seconds since the epoch nor ISO 8601")
    if t.tzinfo is None:
        raise IntensityError(f"{text!r} has no time zone (add Z or +HH:MM)")
    return t.timestamp()


def parse(text, where="carbon intensity file"):
    """[(time, gCO2e/kWh)] in time order."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        t, sep, g = (x.strip() for x in line.partition(","))
        try:
            if not sep:
                raise IntensityError("expected TIME,G_PER_KWH")
            value = float(g)
            if not 0 <= value < 1e5:
                raise IntensityError(f"{value} gCO2e/kWh is not an intensity")
            point = (_when(t), value)
        except (IntensityError, ValueError) as e:
            if not out and n == 1 and sep:
                continue        # a header
            raise IntensityError(f"{where}:{n}: {e}")
        if out and point[0] <= out[-1][0]:
            raise IntensityError(f"{where}:{n}: times must rise")
        out.append(point)
    return out


class Intensity:
    def __init__(self, constant=0.0, path=""):
        self.constant = constant or None
        self.path = path or None
        self.key = None
        self.series = []
        self.warned = None

    def _load(self):
        try:
            st = os.stat(self.path)
            key = (st.st_ino, st.st_mtime_ns, st.st_size)
            if key != self.key:
                from ..config.validate import read_text    # a FIFO never blocks the reader
                self.series = parse(read_text(self.path, 64 << 20), self.path)
                self.key = key
        except (OSError, IntensityError) as e:
            self._warn(f"carbon intensity file unusable, keeping what it said before: {e}")

    def _warn(self, message):
        if message != self.warned:
            log.warning("%s", message)
            self.warned = message

    def at(self, t):
        """(gCO2e/kWh at time t, "file" or "constant"), or (None, None)."""
        if self.path:
            self._load()
            s = self.series
            i = next((i for i in range(len(s) - 1, -1, -1) if s[i][0] <= t), None)
            if i is not None:
                step = s[-1][0] - s[-2][0] if len(s) > 1 else 0
                if i < len(s) - 1 or t - s[i][0] <= step:
                    return s[i][1], "file"
            self._warn(f"{self.path} has no carbon intensity for now"
                       + (": using the constant" if self.constant else ""))
        if self.constant:
            return self.constant, "constant"
        return None, None
