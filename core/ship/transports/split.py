"""Two databases for one spool: the raw samples to their own (a short retention), the rest
to the summaries' (a long one)."""
from ...influx import schema
from .interface import Transport


class Split(Transport):
    """The raw samples (and the process breakdowns) to one database, everything else
    (job summaries, the shipper's own points) to another: InfluxDB 3 has one retention
    period per database, where 1.x had retention policies."""

    PREFIXES = tuple(m.encode() + b"," for m in schema.SAMPLE_MEASUREMENTS)

    def __init__(self, summaries, samples):
        self.summaries, self.samples = summaries, samples

    def send(self, body):
        raw, rest = [], []
        for line in body.splitlines(keepends=True):
            (raw if line.startswith(self.PREFIXES) else rest).append(line)
        if raw:   # the samples first: a job's summary is never there before its samples
            self.samples.send(b"".join(raw))
        if rest:
            self.summaries.send(b"".join(rest))

    def close(self):
        self.samples.close()
        self.summaries.close()
