"""The interface every sink has: the job once, each sample, the per-process breakdowns,
the summary at the end. A sink never asks anything back."""


class Sink:
    # True for a sink whose summary dashboards read as stored (the spool: InfluxDB)
    ships = False

    def open(self, job):
        """job: {"job", "host", "user", "start_time", "method", "tags", "command", ...}."""

    def write(self, sample):
        """sample: {"time": ns, "elapsed_seconds", "method", <metric fields>}."""

    def procs(self, record):
        """record: the per-process breakdown (jobmon.probes.breakdown), at its own rate."""

    def close(self, summary):
        """summary: the end-of-job record (jobmon.metrics.SUMMARY_FIELDS)."""
