"""Sinks receive what the sampler measured: the job once, each sample, the summary at the end.

Data flows one way, probe -> sample -> sink; a sink never asks anything back. Sinks that
run inside the job (all of these) import only the standard library.
"""


class Sink:
    def open(self, job):
        """job: {"job", "host", "user", "start_time", "method", "tags", "command", ...}."""

    def write(self, sample):
        """sample: {"time": ns, "elapsed_seconds", "method", <metric fields>}."""

    def close(self, summary):
        """summary: the end-of-job record (jobmon.metrics.SUMMARY_FIELDS)."""


def store_path(env=None):
    """Where the embedded store lives: $JOBMON_STORE, else the XDG data dir."""
    import os
    env = os.environ if env is None else env
    if env.get("JOBMON_STORE"):
        return env["JOBMON_STORE"]
    base = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "jobmon", "jobmon.db")
