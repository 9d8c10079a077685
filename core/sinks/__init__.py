"""Sinks receive what the sampler measured: the job once, each sample, the summary at the end.

Data flows one way, probe -> sample -> sink; a sink never asks anything back. Sinks that
run inside the job (all of these) import only the standard library. The interface is
Sink (interface.py).
"""
from .interface import Sink

__all__ = ("Sink",)
