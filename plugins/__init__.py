"""Scheduler plugins, one package each, named in SCHEDULERS: its module `job` identifies
the job it runs in (`detect(environ) -> bool`, `identify(environ) -> Identity`: its id,
run and tags), `settings` holds what core needs of it inside every job (its site-file
keys, the tags that qualify its ids), `scheduler` its object (jobmon.schedulers), the
rest its entry points and read-side parts. Sampling, sinks and shipping are the core's.
Nothing is imported until a plugin is asked for: its entry points run inside every job
and must stay light.
"""
from .table import SCHEDULERS, Identity, identify, load

__all__ = ("SCHEDULERS", "Identity", "identify", "load")
