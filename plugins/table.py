"""The plugins' table (SCHEDULERS: a scheduler's tag -> its package) and what every
plugin's `job` module gives: a job's Identity. Standard library only, imported inside
every job."""

SCHEDULERS = {"htcondor": ".condor", "slurm": ".slurm"}   # name -> module (relative to this package)


class Identity:
    """Who a job is: its id, the scheduler's name, the run (a job can run several times)
    and the tags its samples carry."""

    __slots__ = ("job", "scheduler", "run", "tags")

    def __init__(self, job, scheduler="local", run=None, tags=None):
        self.job, self.scheduler, self.run, self.tags = job, scheduler, run, dict(tags or {})

    def __repr__(self):
        return f"Identity({self.job!r}, {self.scheduler!r}, run={self.run!r}, tags={self.tags!r})"


def load(name):
    # __import__, not importlib: importing importlib costs every job's start ~0.5 ms
    return __import__(__package__ + SCHEDULERS[name] + ".job", fromlist=["identify"])


def identify(environ, names=None):
    """The Identity the first plugin that recognises `environ` gives, or None."""
    for name in names or SCHEDULERS:
        plugin = load(name)
        if plugin.detect(environ):
            return plugin.identify(environ)
    return None
