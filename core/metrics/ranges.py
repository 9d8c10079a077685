"""Every figure's valid range: what one run on one node can physically show.

Each metric's declaration (samples.py, summary.py, procs.py) names a kind of range; the
kinds' bounds come from the site's largest node ([limits] in the site file) and the
longest run it allows (`shipper.max_job_days`). Every range is finite and, for counts,
durations, sizes and energies, non-negative. A figure outside its range (a forged spool
line, a corrupt store) is set aside by the shipper and left out by every reader: it
never enters a figure, a total or a decision. Standard library only.
"""

DEFAULTS = {"node_cores": 1024, "node_memory_bytes": 64 << 40, "node_watts": 30000.0,
            "node_gpus": 64, "max_job_days": 31.0}
INT64 = (1 << 63) - 1
EXACT = 1 << 53          # a count beyond this is no longer exact as a float
GIB2 = 2 << 30           # one canonical unit's memory (OSG: 1 core + 2 GB)
MAX_G_PER_KWH = 2000.0   # carbon intensity: over twice a coal plant's
MAX_EPOCH = 1 << 33      # seconds since the epoch: the year 2242


def kinds(limits=None):
    """{kind: (lowest, highest)} for the site's limits (DEFAULTS where not given)."""
    lim = dict(DEFAULTS, **(limits or {}))
    wall = lim["max_job_days"] * 86400.0
    cores, gpus = float(lim["node_cores"]), float(lim["node_gpus"])
    memory, watts = float(lim["node_memory_bytes"]), float(lim["node_watts"])
    units = max(cores, memory / GIB2)
    return {
        "wall": (0.0, wall),                      # a duration within one run
        "cpu": (0.0, cores * wall),               # CPU seconds: every core, all the run
        "task_seconds": (0.0, 4194304 * wall),    # summed over threads (pid_max of them)
        "cores": (0.0, cores),
        "gpus": (0, gpus),
        "memory": (0, memory),                    # held at once: at most the node's
        "bytes": (0, INT64),                      # moved over the run, limits asked for
        "count": (0, EXACT),
        "flag": (0, 1),
        "percent": (0.0, 100.0),
        "share": (0.0, 100.0 * cores),            # of one core's time: every core at most
        "ratio": (0.0, float(EXACT)),
        "joules": (0.0, watts * wall),
        "watts": (0.0, watts),
        "grams": (0.0, watts * wall / 3.6e6 * MAX_G_PER_KWH),
        "intensity": (0.0, MAX_G_PER_KWH),
        "core_hours": (0.0, cores * wall / 3600),
        "unit_hours": (0.0, units * wall / 3600),
        "gpu_hours": (0.0, gpus * wall / 3600),
        "epoch": (0.0, float(MAX_EPOCH)),
        "status": (0, 255),                       # an exit code, a signal number
        "pid": (0, 4194304),                      # the kernel's largest pid_max
        "code": (-(1 << 31), (1 << 31) - 1),      # a scheduler's (sub)code: an int32
        "signed": (-float(INT64), float(INT64)),  # finite, either sign (a growth rate)
    }


class Bounds:
    """The valid range of every figure, by name, for one site's limits."""

    def __init__(self, names, limits=None):
        k = kinds(limits)
        self.of = {n: k[kind] for n, kind in names.items() if kind is not None}

    def ok(self, name, value):
        """Is value a number within name's range (True for a name with none)? NaN, the
        infinities, booleans and text in a figure's place are not."""
        r = self.of.get(name)
        if r is None:
            return True
        if value.__class__ not in (int, float):
            return False
        return r[0] <= value <= r[1]

    def bad(self, values):
        """The names of the figures in `values` (a dict) outside their ranges; None and
        absent figures are not figures."""
        of = self.of
        return [k for k, v in values.items()
                if v is not None and k in of and not (v.__class__ in (int, float)
                                                      and of[k][0] <= v <= of[k][1])]

    def clean(self, values):
        """Leave out (set to None) every figure of `values` outside its range; returns
        their names."""
        bad = self.bad(values)
        for k in bad:
            values[k] = None
        return bad
