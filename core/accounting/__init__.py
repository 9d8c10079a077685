"""What the scheduler itself recorded about a job: one interface (Source), the
sources themselves in the schedulers' plugins.

Read side only (`jobmon query`, `jobmon report`): sources may load heavy bindings or run
the scheduler's commands, so nothing on the per-job path imports this package. A source
is found through its scheduler's object (jobmon.schedulers) and imported only when used.
"""


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
    """The accounting module of the scheduler tagged `name`: its `source(cfg)` gives a
    Source, or None when that scheduler's tools are not available on this host."""
    from .. import schedulers
    return schedulers.get(name).accounting()


# --- shared by the schedulers' comparisons -----------------------------------------------

def disagreement(source, field, unit, jobmon, theirs, reason):
    """One row where jobmon's figure and the scheduler's (keyed by `source`) differ."""
    numbers = all(isinstance(v, (int, float)) for v in (jobmon, theirs))
    return {"field": field, "unit": unit, "jobmon": jobmon, source: theirs,
            "difference": theirs - jobmon if numbers else None, "reason": reason}


def total(a, b):
    return None if a is None or b is None else a + b


def status_text(code, sig):
    return f"signal {sig}" if sig is not None else f"exit {code}"
