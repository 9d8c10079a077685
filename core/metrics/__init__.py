"""Every metric jobmon records, with its unit and meaning.

Each field is declared once, beside the code that produces it (declared.py says how and
collects the probes' declarations); samples.py, summary.py and procs.py make the tables
from them in the fields' existing order. Samples, the summary, the embedded store's
columns, the InfluxDB schema and docs/metrics.md (checked by a test) all come from them.
index.py derives the look-ups, site_ranges.py the site's valid ranges.
"""
from .index import COUNTERS, RANGES, SAMPLE_COLUMNS, SAMPLE_NAMES, UNITS
from .procs import PROCS_FIELDS, PROCS_TOP_KEYS
from .samples import SAMPLE_FIELDS
from .site_ranges import bounds, site_limits
from .summary import SUMMARY_FIELDS

__all__ = ("SAMPLE_FIELDS", "SUMMARY_FIELDS", "PROCS_FIELDS", "PROCS_TOP_KEYS", "SAMPLE_NAMES",
           "COUNTERS", "SAMPLE_COLUMNS", "UNITS", "RANGES", "bounds", "site_limits")
