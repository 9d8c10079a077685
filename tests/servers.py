"""Real database servers for the tests: Debian's influxdb 1.6.7 and victoria-metrics.

Each runs with its own config on a free loopback port, data in a temp dir, and is stopped
at the end of the session. Nothing here uses the packaged config or systemd.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request


def _die_with_parent():
    """In the server's child process: the kernel sends SIGTERM when the test process dies,
    so no server outlives an interrupted or crashed test run."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url, proc, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server not ready at {url}")


INFLUX_CONF = """\
reporting-enabled = false
bind-address = "127.0.0.1:{rpc}"
[meta]
  dir = "{d}/meta"
  logging-enabled = false
[data]
  dir = "{d}/data"
  wal-dir = "{d}/wal"
  query-log-enabled = false
  index-version = "inmem"
  max-series-per-database = 0
  max-values-per-tag = 0
[monitor]
  store-enabled = false
[http]
  bind-address = "127.0.0.1:{port}"
  log-enabled = false
  auth-enabled = {auth}
  shared-secret = "{secret}"
  max-body-size = 0
[continuous_queries]
  enabled = false
[retention]
  enabled = false
"""


class Influx:
    """influxd 1.6.7: v1 /write and InfluxQL /query. Can be stopped and started again on
    the same port and data (the 'database down, then up' tests)."""

    def __init__(self, auth=False, port=None):
        self.dir = tempfile.mkdtemp(prefix="jobmon-influx-")
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.auth = auth
        # the key 1.x checks a bearer token's signature with (see token())
        self.secret = os.urandom(16).hex()
        self.admin = None             # "user:password" query() sends when none is given
        self.conf = os.path.join(self.dir, "influxdb.conf")
        with open(self.conf, "w") as f:
            f.write(INFLUX_CONF.format(d=self.dir, port=self.port, rpc=free_port(),
                                       auth="true" if auth else "false", secret=self.secret))
        self.proc = None

    def start(self, timeout=20):
        self.log = open(os.path.join(self.dir, "influxd.log"), "ab")
        self.proc = subprocess.Popen(["influxd", "-config", self.conf], stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=_die_with_parent)
        _wait_http(self.url + "/ping", self.proc, timeout)
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def make_admin(self, user="admin", password="adminpw"):
        """The server's first user, with all privileges; the tests' own queries use it."""
        self.query(f"CREATE USER {user} WITH PASSWORD '{password}' WITH ALL PRIVILEGES")
        self.admin = f"{user}:{password}"
        return self

    def query(self, q, db=None, auth=None):
        auth = auth or self.admin
        params = {"q": q, "epoch": "ns"}
        if db:
            params["db"] = db
        req = urllib.request.Request(self.url + "/query", data=urllib.parse.urlencode(params).encode())
        if auth:
            import base64
            req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)

    def token(self, username, seconds=86400):
        """A bearer token this server takes for `username` (a user made on it): 1.x checks
        `Authorization: Bearer` as a JSON web token signed with its shared secret, which
        gives a real server that authenticates the scheme InfluxDB 3 documents."""
        import base64
        import hashlib
        import hmac

        def part(raw):
            return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
        head = part(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        body = part(json.dumps({"username": username,
                                "exp": int(time.time()) + seconds}).encode())
        sig = hmac.new(self.secret.encode(), f"{head}.{body}".encode(), hashlib.sha256)
        return f"{head}.{body}.{part(sig.digest())}"

    def write(self, db, body):
        """Line protocol into db (ns), as the admin where the server has one."""
        req = urllib.request.Request(f"{self.url}/write?db={urllib.parse.quote(db)}"
                                     f"&precision=ns", data=body)
        if self.admin:
            import base64
            req.add_header("Authorization",
                           "Basic " + base64.b64encode(self.admin.encode()).decode())
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()

    def create_db(self, db):
        self.query(f'DROP DATABASE "{db}"')
        self.query(f'CREATE DATABASE "{db}"')

    def rows(self, q, db):
        """[dict] for every row of every series (tags merged in)."""
        out = []
        for res in self.query(q, db)["results"]:
            if "error" in res:
                raise RuntimeError(res["error"])
            for s in res.get("series", []):
                for v in s["values"]:
                    row = dict(zip(s["columns"], v))
                    row.update(s.get("tags") or {})
                    out.append(row)
        return out


class Victoria:
    """victoria-metrics: serves /api/v2/write (influxdb-client's write path); read back
    through /api/v1/export after a forced flush."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="jobmon-vm-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(self.dir, "vm.log"), "ab")
        self.proc = subprocess.Popen(
            ["victoria-metrics", f"-httpListenAddr=127.0.0.1:{self.port}",
             f"-storageDataPath={self.dir}/data", "-search.latencyOffset=0s",
             "-retentionPeriod=100y", "-loggerLevel=ERROR"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=_die_with_parent)
        _wait_http(self.url + "/health", self.proc)

    def export(self, match='{__name__=~"jobmon.*"}'):
        """[(metric labels, values, timestamps ms)] of every series."""
        with urllib.request.urlopen(self.url + "/internal/force_flush", timeout=10):
            pass
        q = urllib.parse.urlencode({"match[]": match, "start": "0"})
        with urllib.request.urlopen(f"{self.url}/api/v1/export?{q}", timeout=30) as r:
            return [json.loads(line) for line in r.read().splitlines() if line.strip()]

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class HoldingProxy:
    """An HTTP proxy in front of a server that can hold back its answer to one write
    (the first whose body contains a given pattern) until the test releases it: the
    shipper then waits on that batch while the test acts (say, rewrites a spool file).
    The write itself has reached the server before the answer is held."""

    def __init__(self, target):
        import gzip
        import http.server
        import threading
        self.target = target
        self.pattern = None
        self.held, self.release = threading.Event(), threading.Event()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _forward(self, body=None):
                if body is not None and self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                req = urllib.request.Request(proxy.target + self.path, data=body,
                                             method=self.command)
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        status, answer = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, answer = e.code, e.read()
                if body is not None and proxy.pattern and proxy.pattern in body:
                    proxy.pattern = None
                    proxy.held.set()
                    proxy.release.wait(60)
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def do_GET(self):
                self._forward()

            def do_POST(self):
                self._forward(self.rfile.read(int(self.headers.get("Content-Length", 0))))

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def hold(self, pattern):
        """Hold the answer to the next write whose (uncompressed) body holds pattern."""
        self.held.clear()
        self.release.clear()
        self.pattern = pattern

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
