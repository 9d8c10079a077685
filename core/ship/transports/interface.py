"""The interface every transport has (Transport: send one batch, return only once the
server acknowledged it), and the error it raises otherwise (SendError), made from a
server's answer (failure)."""


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
