"""`POST /write`: InfluxDB 1.x, and the v1-compatible endpoint of 2.x and 3.x (which take a
token: influx.auth). A keep-alive HTTP connection per sender thread, gzip
bodies, ns precision."""
import http.client
import ssl
import threading
import urllib.parse
import zlib

from .interface import SendError, Transport, failure


class V1Transport(Transport):
    def __init__(self, url, database, rp="", authorization="", timeout=10.0,
                 verify_tls=True, gzip=True):
        self.gzip = gzip
        u = urllib.parse.urlsplit(url)
        self.https = u.scheme == "https"
        self.netloc = u.netloc
        self.timeout = timeout
        self.ctx = None if verify_tls or not self.https else ssl._create_unverified_context()
        q = {"db": database, "precision": "ns"}
        if rp:
            q["rp"] = rp
        self.path = u.path.rstrip("/") + "/write?" + urllib.parse.urlencode(q)
        self.headers = {"Content-Type": "text/plain; charset=utf-8"}
        if authorization:
            self.headers["Authorization"] = authorization
        self.local = threading.local()   # http.client connections are not thread-safe
        self.conns = set()

    def _conn(self):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            if self.https:
                conn = http.client.HTTPSConnection(self.netloc, timeout=self.timeout,
                                                   context=self.ctx)
            else:
                conn = http.client.HTTPConnection(self.netloc, timeout=self.timeout)
            self.local.conn = conn
            self.conns.add(conn)
        return conn

    def _drop(self, conn):
        conn.close()
        self.conns.discard(conn)
        self.local.conn = None

    def send(self, body):
        headers = dict(self.headers)
        if self.gzip:  # level 1: most of the size gain for a fraction of the CPU
            c = zlib.compressobj(1, zlib.DEFLATED, 31)
            body = c.compress(body) + c.flush()
            headers["Content-Encoding"] = "gzip"
        conn = self._conn()
        try:
            conn.request("POST", self.path, body=body, headers=headers)
            r = conn.getresponse()
            text = r.read().decode("utf-8", "replace")
        except (OSError, http.client.HTTPException) as e:
            self._drop(conn)
            raise SendError(f"{self.netloc}: {e}")
        if r.status == 204:
            return
        if r.status == 400 and "beyond retention policy" in text:
            return  # written, except points older than the retention policy keeps
        raise failure(r.status, text)

    def close(self):
        """Close every thread's connection (call with no send in progress)."""
        for conn in list(self.conns):
            conn.close()
        self.conns.clear()
