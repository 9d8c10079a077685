"""Every metric jobmon records, with its unit and meaning.

This table is the single source of truth: samples, the summary, the embedded store's
columns, the InfluxDB schema and docs/metrics.md (checked by a test) all come from it.
The tables are samples.py, summary.py and procs.py (declared.py: metrics declared beside
their probe); index.py derives the look-ups, site_ranges.py the site's valid ranges.
"""
from .index import COUNTERS, RANGES, SAMPLE_COLUMNS, SAMPLE_NAMES, UNITS
from .procs import PROCS_FIELDS, PROCS_TOP_KEYS
from .samples import NODE_COUNTERS, SAMPLE_FIELDS, STALL_COUNTERS
from .site_ranges import bounds, site_limits
from .summary import SUMMARY_FIELDS

__all__ = ("SAMPLE_FIELDS", "SUMMARY_FIELDS", "PROCS_FIELDS", "PROCS_TOP_KEYS", "NODE_COUNTERS",
           "STALL_COUNTERS", "SAMPLE_NAMES", "COUNTERS", "SAMPLE_COLUMNS", "UNITS", "RANGES",
           "bounds", "site_limits")
