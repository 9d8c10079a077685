"""InfluxDB 1.x `POST /write`: one keep-alive HTTP connection, gzip bodies, ns precision."""
import base64
import http.client
import ssl
import urllib.parse
import zlib

from . import SendError, Transport, data_refused


class V1Transport(Transport):
    def __init__(self, url, database, rp="", username="", password="", timeout=10.0,
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
        if username or password:
            cred = base64.b64encode(f"{username}:{password}".encode()).decode()
            self.headers["Authorization"] = "Basic " + cred
        self.conn = None

    def _connect(self):
        if self.https:
            return http.client.HTTPSConnection(self.netloc, timeout=self.timeout, context=self.ctx)
        return http.client.HTTPConnection(self.netloc, timeout=self.timeout)

    def send(self, body):
        headers = dict(self.headers)
        if self.gzip:  # level 1: most of the size gain for a fraction of the CPU
            c = zlib.compressobj(1, zlib.DEFLATED, 31)
            body = c.compress(body) + c.flush()
            headers["Content-Encoding"] = "gzip"
        try:
            if self.conn is None:
                self.conn = self._connect()
            self.conn.request("POST", self.path, body=body, headers=headers)
            r = self.conn.getresponse()
            text = r.read().decode("utf-8", "replace")
        except (OSError, http.client.HTTPException) as e:
            self.close()
            raise SendError(f"{self.netloc}: {e}")
        if r.status == 204:
            return
        if r.status == 400 and "beyond retention policy" in text:
            return  # written, except points older than the retention policy keeps
        raise SendError(f"HTTP {r.status}: {text.strip()[:500]}", r.status,
                        retry=not data_refused(r.status))

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None
