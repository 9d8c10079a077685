"""Probes measure a job; the sampler picks the best one that works at start.

Every probe has the same small interface (interface.py). `read()` returns the sample fields
it can measure now (a subset of jobmon.metrics.SAMPLE_NAMES, counters cumulative since the
job began); fields it cannot measure are left out, never guessed. selection.py picks a
job's probe and wraps it with what the node reader publishes.
"""
from .interface import NoProbe, Probe
from .selection import GPU_DIR, NODE_DIR, node_dir, select, with_gpus, with_node

__all__ = ("Probe", "NoProbe", "select", "NODE_DIR", "GPU_DIR", "node_dir", "with_node",
           "with_gpus")
