"""Every metric jobmon records, with its unit and meaning.

This table is the single source of truth: samples, the summary, the embedded store's
columns, the InfluxDB schema and docs/metrics.md (checked by a test) all come from it.
"""
from .procs import PROCS_FIELDS, PROCS_TOP_KEYS
from .samples import NODE_COUNTERS, SAMPLE_FIELDS, STALL_COUNTERS
from .summary import SUMMARY_FIELDS

__all__ = ("SAMPLE_FIELDS", "SUMMARY_FIELDS", "PROCS_FIELDS", "PROCS_TOP_KEYS", "NODE_COUNTERS",
           "STALL_COUNTERS", "SAMPLE_NAMES", "COUNTERS", "SAMPLE_COLUMNS", "UNITS", "RANGES")

SAMPLE_NAMES = tuple(f[0] for f in SAMPLE_FIELDS)
COUNTERS = tuple(f[0] for f in SAMPLE_FIELDS if f[3] == "counter")
# columns of a sample in CSV (`jobmon run --format csv`, `jobmon query --csv`)
SAMPLE_COLUMNS = ("time", "elapsed_seconds", "method") + SAMPLE_NAMES
UNITS = {f[0]: f[1] for f in SAMPLE_FIELDS}
UNITS.update({f[0]: f[1] for f in SUMMARY_FIELDS})
# every figure's kind of valid range (jobmon.metrics.ranges), from its declaration; a name
# in two tables has one kind in both
RANGES = {f[0]: f[2] for f in SAMPLE_FIELDS + PROCS_FIELDS}
RANGES.update({f[0]: f[2] for f in SUMMARY_FIELDS})
RANGES.update(elapsed_seconds="wall", interval="wall", ended="flag")   # with every record
_site = {}


def bounds(limits=None):
    """The valid range of every figure (jobmon.metrics.ranges.Bounds): for `limits`, else
    for the site's ([limits] and shipper.max_job_days of the site file; the defaults where
    it cannot be read). The site's are read once per process."""
    from .ranges import Bounds
    if limits is not None:
        return Bounds(RANGES, limits)
    if "bounds" not in _site:
        _site["bounds"] = Bounds(RANGES, site_limits())
    return _site["bounds"]


def site_limits():
    """The site's limits for jobmon.metrics.ranges.kinds."""
    try:
        from .. import config
        cfg = config.load()
        return dict(cfg["limits"], max_job_days=cfg["shipper"]["max_job_days"])
    except Exception:   # a reader goes on with the defaults (config check says what is wrong)
        return None
