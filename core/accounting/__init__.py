"""What the scheduler itself recorded about a job: one interface (Source), the
sources themselves in the schedulers' plugins.

Read side only (`jobmon query`, `jobmon report`): sources may load heavy bindings or run
the scheduler's commands, so nothing on the per-job path imports this package. A source
is found through its scheduler's object (jobmon.schedulers) and imported only when used.
"""
from .comparison import disagreement, status_text, total
from .interface import AccountingError, Source, load

__all__ = ("Source", "AccountingError", "load", "disagreement", "total", "status_text")
