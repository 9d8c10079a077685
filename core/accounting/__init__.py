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

    def lookup_many(self, job_ids):
        """{job id: its records} for many jobs (`jobmon reconcile`); a source that can ask
        for many in one call does so, this one asks for each."""
        return {j: self.lookup(j) for j in job_ids}


class AccountingError(Exception):
    pass


def load(name):
    return importlib.import_module(SOURCES[name], __name__)


# --- shared by the comparisons (condor_compare, sacct_compare) ---------------------------

def disagreement(source, field, unit, jobmon, theirs, reason):
    """One row where jobmon's figure and the scheduler's (keyed by `source`) differ."""
    numbers = all(isinstance(v, (int, float)) for v in (jobmon, theirs))
    return {"field": field, "unit": unit, "jobmon": jobmon, source: theirs,
            "difference": theirs - jobmon if numbers else None, "reason": reason}


def total(a, b):
    return None if a is None or b is None else a + b


def status_text(code, sig):
    return f"signal {sig}" if sig is not None else f"exit {code}"
