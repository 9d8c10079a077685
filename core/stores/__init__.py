"""Stores hold jobs and their samples for `jobmon query`, `jobmon list` and reports.

A store holds *records*: one per job run per host (a job the scheduler ran twice has two
runs; a multi-node job one record per node). Read interface (every store, see Store in
interface.py); where the embedded store lives: location.py. The embedded store is also a
sink for the per-job sampler, so this package is standard library only.
"""
from .interface import HOUR, JobRecord, Store
from .location import store_path

__all__ = ("Store", "JobRecord", "HOUR", "store_path")
