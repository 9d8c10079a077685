"""Read jobs back from InfluxDB with InfluxQL over `/query` (1.x natively, 2.x through
its v1 API with a DBRP mapping, 3.x natively). Same read interface as the embedded
store, so `jobmon query` / `jobmon list` render the same report from either."""
import base64
import json
import urllib.error
import urllib.parse
import urllib.request

from ..influx import schema
from . import JobRecord, Store


class InfluxError(Exception):
    pass


def quote_string(value):
    """An InfluxQL string literal: nothing in `value` can end it early."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


class InfluxStore(Store):
    def __init__(self, url, database, username="", password="", token="", timeout=10.0):
        self.url = url.rstrip("/") + "/query"
        self.database = database
        self.timeout = timeout
        self.headers = {"Accept": "application/json"}
        if token:
            self.headers["Authorization"] = "Token " + token
        elif username or password:
            cred = base64.b64encode(f"{username}:{password}".encode()).decode()
            self.headers["Authorization"] = "Basic " + cred

    @classmethod
    def from_config(cls, cfg):
        c = cfg["influxdb"]
        db = c["query_database"] or (c["bucket"] if c["api"] == "v2" else c["database"])
        return cls(c["url"], db, c["username"], cfg.secret("password_file"),
                   cfg.secret("token_file"), c["timeout_seconds"])

    def rows(self, q):
        """Rows of every series of the answer, as dicts with the tags merged in."""
        body = urllib.parse.urlencode({"db": self.database, "q": q, "epoch": "ns"}).encode()
        req = urllib.request.Request(self.url, data=body, headers=self.headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                answer = json.load(r)
        except urllib.error.HTTPError as e:
            raise InfluxError(f"{self.url}: HTTP {e.code}: {e.read()[:300].decode('utf-8', 'replace')}")
        except OSError as e:
            raise InfluxError(f"{self.url}: {e}")
        out = []
        for res in answer.get("results", []):
            if "error" in res:
                raise InfluxError(f"InfluxDB: {res['error']}")
            for s in res.get("series", []):
                tags = s.get("tags") or {}
                cols = s["columns"]
                for v in s["values"]:
                    row = dict(zip(cols, v))
                    row.update(tags)
                    out.append(row)
        return out

    # --- read interface ---
    def jobs(self, limit=20):
        rows = self.rows(f'SELECT * FROM "{schema.JOB}" ORDER BY time DESC LIMIT {int(limit)}')
        return [schema.job_from_row(r) for r in rows]

    def job(self, job_id, user=None):
        """The latest run of job_id (by `user`, when given), with its samples."""
        where = f'"job" = {quote_string(job_id)}'
        if user:
            where += f' AND "user" = {quote_string(user)}'
        runs = self.rows(f'SELECT * FROM "{schema.JOB}" WHERE {where} ORDER BY time DESC LIMIT 1')
        if not runs:
            return None
        run = runs[0]
        info = schema.job_from_row(run)
        info["users"] = sorted({r["value"] for r in self.rows(
            f'SHOW TAG VALUES FROM "{schema.JOB}" WITH KEY = "user" '
            f'WHERE "job" = {quote_string(job_id)}')})
        where = " AND ".join(f'"{k}" = {quote_string(run[k])}' for k in ("job", "host", "user")
                             if run.get(k) is not None)
        end = ""
        if info["summary"] and info["summary"].get("end_time"):
            end = f" AND time <= {int((info['summary']['end_time'] + 60) * 1e9)}"
        samples = self.rows(f'SELECT * FROM "{schema.SAMPLE}" WHERE {where} '
                            f'AND time >= {run["time"] - 10**6}{end} ORDER BY time')  # start is µs-rounded
        return JobRecord(info, [schema.sample_from_row(r) for r in samples])
