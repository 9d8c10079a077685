"""Write transports: send one batch of line protocol, return only once the server has
acknowledged it, raise SendError otherwise. One interface, two implementations:

  v1  /write: InfluxDB 1.x (database, retention policy, user/password), and 2.x/3.x's
      v1-compatible endpoint with a token
  v2  /api/v2/write through influxdb-client's synchronous API (org, bucket, token):
      InfluxDB 1.8+, 2.x, 3.x. Synchronous, so no failure can vanish into a callback.

and Split, which sends the raw samples to their own database (a short retention) and the
rest to the summaries' (a long one).
"""
from ...influx import auth, schema


class SendError(Exception):
    def __init__(self, message, status=None, retry=True):
        super().__init__(message)
        self.status = status
        self.retry = retry          # False: the data itself was refused (HTTP 400/422)


class Transport:
    def send(self, body):
        """body: line protocol bytes (compressed on the way when gzip is configured)."""
        raise NotImplementedError

    def close(self):
        pass


def brief(text, limit=600):
    """A server's message, bounded for a log line; its end is kept, since InfluxDB quotes
    the refused line first and gives the reason last."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    return f"{text[:limit // 3]} ... ({len(text) - limit} characters) ... {text[-2 * limit // 3:]}"


# InfluxDB 3 answers 422 when a write would cross the server's schema limits (databases,
# tables, columns per table): the data is good, the server must be changed, so the batch
# stays spooled and is retried (influxdb3_server's http.rs, docs/influxdb3.md)
SCHEMA_LIMIT = ("Update to schema would exceed", "Adding a new database would exceed")


def failure(status, text):
    """The SendError for an HTTP answer that is not a success."""
    message = f"HTTP {status}: {brief(text)}"
    if status in (401, 403):
        message += " (check the token or password the config names)"
    if status == 422 and any(s in text for s in SCHEMA_LIMIT):
        return SendError(f"{message} (the server's schema limit: raise it or free room; "
                         f"the data stays spooled)", status, retry=True)
    return SendError(message, status, retry=status not in (400, 422))


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


def open_transport(cfg):
    c = cfg["influxdb"]
    token = cfg.secret("token_file")

    def to(database):
        if c["api"] == "v2":
            from .v2 import V2Transport
            return V2Transport(c["url"], c["org"], database, token, c["timeout_seconds"],
                               c["verify_tls"], cfg["shipper"]["gzip"])
        from .v1 import V1Transport
        return V1Transport(c["url"], database, c["retention_policy"], auth.from_config(cfg),
                           c["timeout_seconds"], c["verify_tls"], cfg["shipper"]["gzip"])

    summaries, samples = cfg.databases
    return to(summaries) if samples == summaries else Split(to(summaries), to(samples))
