"""Write transports: send one batch of line protocol, return only once the server has
acknowledged it, raise SendError otherwise. One interface, two implementations:

  v1  InfluxDB 1.x /write (database, retention policy, user/password)
  v2  /api/v2/write through influxdb-client's synchronous API (org, bucket, token):
      InfluxDB 1.8+, 2.x, 3.x. Synchronous, so no failure can vanish into a callback.
"""


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


def data_refused(status):
    """A status that says the batch itself is bad; anything else is worth a retry."""
    return status in (400, 422)


def open_transport(cfg):
    c = cfg["influxdb"]
    if c["api"] == "v2":
        from .v2 import V2Transport
        return V2Transport(c["url"], c["org"], c["bucket"], cfg.secret("token_file"),
                           c["timeout_seconds"], c["verify_tls"], cfg["shipper"]["gzip"])
    from .v1 import V1Transport
    return V1Transport(c["url"], c["database"], c["retention_policy"], c["username"],
                       cfg.secret("password_file"), c["timeout_seconds"], c["verify_tls"],
                       cfg["shipper"]["gzip"])
