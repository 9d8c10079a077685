"""Stores hold jobs and their samples for `jobmon query` and `jobmon list`.

Read interface (every store, see Store): jobs(limit) -> [job dict with summary],
job(job_id, user=None) -> JobRecord of the latest run (by that user) or None; its
info["users"] lists every user with a run of that job id. The embedded store is also a
sink for the per-job sampler, so this package is standard library only.
"""
import os


class Store:
    def jobs(self, limit=20):
        """The most recent job runs, newest first: job dicts with "summary" (or None)."""
        raise NotImplementedError

    def job(self, job_id, user=None):
        """The latest run of job_id (by `user`, when given) with its samples, or None."""
        raise NotImplementedError


class JobRecord:
    """One run of a job: its description + summary, and its samples in time order."""

    def __init__(self, info, samples):
        self.info = info          # job fields and "summary" (dict or None while running)
        self.samples = samples    # [sample dict]

    @property
    def summary(self):
        return self.info.get("summary") or {}


def store_path(env=None):
    """Where the embedded store lives: $JOBMON_STORE, else the XDG data dir."""
    env = os.environ if env is None else env
    if env.get("JOBMON_STORE"):
        return env["JOBMON_STORE"]
    base = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "jobmon", "jobmon.db")
