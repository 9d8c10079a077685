"""The per-process breakdown's fields (docs/live.md), each with its valid range, declared
beside the code that takes it (core/probes/breakdown.py)."""
from .declared import PROCS
from ..probes.breakdown import TOP_KEYS

# name, unit, range, kind, meaning: the per-process breakdown, one record per job every
# [procs] every_seconds (docs/live.md); its groups travel as one JSON text, `procs_top`
PROCS_FIELDS = tuple(m.row() for m in PROCS)
# key, unit, meaning: one group of `procs_top`
PROCS_TOP_KEYS = TOP_KEYS
