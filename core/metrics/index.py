"""Look-ups derived from the metric tables: every sample field's name, the counters, a
sample's CSV columns, each figure's unit and its kind of valid range."""
from .procs import PROCS_FIELDS
from .samples import SAMPLE_FIELDS
from .summary import SUMMARY_FIELDS

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
