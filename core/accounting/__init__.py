"""What the scheduler itself recorded about a job: one interface, one module per source.

Read side only (`jobmon query`, `jobmon report`): sources may load heavy bindings
(htcondor2, pyslurm) or run commands (sacct), so nothing on the per-job path imports
this package. Sources are found by name through SOURCES and imported only when used.
"""
import importlib

# name -> module; each module has `source(cfg)` returning a Source, or None when that
# scheduler's tools are not available on this host
SOURCES = {"htcondor": ".condor_history", "slurm": ".sacct"}


class Source:
    name = ""

    def lookup(self, job_id):
        """The scheduler's records of job_id (every run of it), or [] if it has none.
        Raises AccountingError when the source cannot be asked."""
        raise NotImplementedError


class AccountingError(Exception):
    pass


def load(name):
    return importlib.import_module(SOURCES[name], __name__)
