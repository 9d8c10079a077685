"""The interface of the schedulers' accounting sources (each in its plugin, found through
its scheduler's object), and the error a source raises when it cannot be asked."""


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
