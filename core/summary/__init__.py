"""What a job's end-of-job summary holds: the one fold from samples to totals and peaks
(fold.py), its exit (exit_status.py), what it was given and used (efficiency.py), idle
allocations (idle.py), OOM kills (oom.py), its batch (batches.py), what share of the run
its data covers (completeness.py) and advice (advice.py).
Written inside the job and recomputed by the report, so standard library only."""
from . import completeness
from .completeness import Coverage
from .exit_status import MAX_SIGNAL, exit_fields
from .fold import LAST, PEAKS, Fold, declared_shares, from_samples, stall_shares
from .idle import IDLE_CORES, Stretches   # IDLE_CORES: a sample is idle below it

__all__ = ("Fold", "PEAKS", "LAST", "from_samples", "declared_shares", "stall_shares",
           "exit_fields", "MAX_SIGNAL", "IDLE_CORES", "Stretches", "Coverage", "completeness")
