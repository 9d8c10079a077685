"""An HTTP server that answers as InfluxDB 3 Core/Enterprise's v1-compatible API does,
from the exchanges in tests/fixtures/influxdb3/ (built from InfluxDB 3's documentation
and source; no InfluxDB 3 server can be installed here).

It holds jobmon to what the recording says a client must do -- a valid token on every
request, `db` and a known precision on writes, `q` on queries -- and answers with the
recorded bodies, applying the server's documented write rules to what it is sent: a line
whose tag value is empty is refused, a column keeps the type (tag, or a field type) it was
created with, a table holds at most `column_limit` columns (422), and the valid lines of a
batch are kept while the others are reported (a partial write). Queries are answered from
recorded result bodies the test picks; anything else gets the recorded empty result, or
"database not found" for a database nobody wrote to.

Every request is kept (`requests`), so a test can read exactly what jobmon sent.
"""
import base64
import gzip
import http.server
import json
import os
import re
import threading
import urllib.parse

from helpers import REPO

FIXTURE = os.path.join(REPO, "tests", "fixtures", "influxdb3", "exchanges.json")
with open(FIXTURE, encoding="utf-8") as _f:
    RECORDED = json.load(_f)


class Request:
    def __init__(self, method, path, params, headers, body):
        self.method, self.path, self.params = method, path, params
        self.headers, self.body = headers, body

    def lines(self):
        return [line for line in self.body.decode().split("\n") if line]


def split_unescaped(text, sep, limit=-1):
    """text split at `sep` where no backslash escapes it and no string quotes it."""
    out, cur, quoted, i = [], [], False, 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            cur.append(text[i:i + 2])
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        if c == sep and not quoted and (limit < 0 or len(out) < limit):
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    out.append("".join(cur))
    return out


def column_type(value):
    if value.startswith('"'):
        return "iox::column_type::field::string"
    if value in ("t", "T", "true", "True", "TRUE", "f", "F", "false", "False", "FALSE"):
        return "iox::column_type::field::boolean"
    if value.endswith("i"):
        return "iox::column_type::field::integer"
    if value.endswith("u"):
        return "iox::column_type::field::uinteger"
    return "iox::column_type::field::float"


class RecordedInfluxDB3:
    def __init__(self, token, column_limit=500):
        self.token, self.column_limit = token, column_limit
        self.requests = []
        self.tables = {}              # database -> table -> {column: type}
        self.points = {}              # database -> [line]
        self.answers = []             # (regex on q, database or None, recorded name)
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                self.handle_any()

            def do_POST(self):
                self.handle_any()

            def handle_any(self):
                url = urllib.parse.urlsplit(self.path)
                params = dict(urllib.parse.parse_qsl(url.query))
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.headers.get("Content-Type", "").startswith(
                        "application/x-www-form-urlencoded"):
                    params.update(urllib.parse.parse_qsl(body.decode()))
                req = Request(self.command, url.path, params, dict(self.headers), body)
                with server.lock:
                    server.requests.append(req)
                    status, ctype, text = server.answer(req)
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    # --- what the recording says ---------------------------------------------------------

    @staticmethod
    def recorded(answer, line_number=None, **subst):
        """(status, content type, body) of a recorded answer, its {placeholders} filled;
        JSON as serde_json writes it (compact)."""
        body = answer["body"]
        if not isinstance(body, str):
            body = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
            for k, v in subst.items():
                body = body.replace("{" + k + "}", json.dumps(v, ensure_ascii=False)[1:-1])
            if line_number is not None:
                obj = json.loads(body)
                obj["data"][0]["line_number"] = line_number
                body = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        return answer["status"], answer.get("content_type", "text/plain"), body

    def authenticated(self, req):
        """None when the request carries the token, else the recorded refusal."""
        auth = RECORDED["auth"]
        if req.path in ("/query", "/write") and "p" in req.params:
            given = req.params["p"]
        elif "Authorization" in req.headers:
            parts = req.headers["Authorization"].split(" ")
            if len(parts) != 2 or parts[0] not in auth["schemes"]:
                return self.recorded(auth["malformed"])
            given = parts[1]
            if parts[0] == "Basic":
                given = base64.b64decode(given).decode().rpartition(":")[2]
        else:
            return self.recorded(auth["unauthenticated"])
        return None if given == self.token else self.recorded(auth["unauthenticated"])

    def answer(self, req):
        refused = self.authenticated(req)
        if refused:
            return refused
        if req.path == "/write" and req.method == "POST":
            return self.write(req)
        if req.path == "/query":
            return self.query(req)
        return 404, "text/plain", ""

    def write(self, req):
        w = RECORDED["write"]
        assert "db" in req.params, f"/write without db: {req.params}"
        assert req.params.get("precision", "ns") in w["request"]["precision"], req.params
        db = req.params["db"]
        rp = req.params.get("rp", "")
        if rp and rp != "autogen":         # 3.x: a named policy is part of the database name
            db = f"{db}/{rp}"
        refused = []
        for number, line in enumerate(req.lines(), 1):
            problem = self.check(db, line)
            if problem:
                refused.append((number, line, problem))
            else:
                self.points.setdefault(db, []).append(line)
        if not refused:
            return self.recorded(w["accepted"])
        # every refused line (the server lists up to 100); 422 when one hit a limit
        entries = [(w[name], json.loads(self.recorded(w[name], n, line=line, **subst)[2]))
                   for n, line, (name, subst) in refused[:100]]
        answer, body = max(entries, key=lambda e: e[0]["status"])
        body["data"] = [b["data"][0] for _a, b in entries]
        return answer["status"], answer["content_type"], json.dumps(
            body, ensure_ascii=False, separators=(",", ":"))

    def check(self, db, line):
        """None for a line this database takes, else (the recorded refusal, what its
        message names)."""
        head, fields, _time = split_unescaped(line, " ")
        measurement, *tags = split_unescaped(head, ",")
        columns = {}
        for tag in tags:
            key, _, value = tag.partition("=")
            if not value:
                at = line.index("," + tag) + len(tag) + 1      # where its value should be
                return "partial_write_empty_tag_value", {"rest": line[at:]}
            columns[key] = "iox::column_type::tag"
        for field in split_unescaped(fields, ","):
            key, _, value = field.partition("=")
            columns[key] = column_type(value)
        table = self.tables.setdefault(db, {}).setdefault(measurement, {"time": "timestamp"})
        for key, kind in columns.items():
            if table.get(key, kind) != kind:
                return "partial_write_type_conflict", {"column": key, "expected": table[key],
                                                       "got": kind}
        if len(set(table) | set(columns)) > self.column_limit:
            return "column_limit", {"limit": str(self.column_limit)}
        table.update(columns)
        return None

    def query(self, req):
        q = RECORDED["query"]
        if "q" not in req.params:
            return self.recorded(q["missing_q"])
        db = req.params.get("db")
        for pattern, database, name in self.answers:
            if re.search(pattern, req.params["q"]) and database in (None, db):
                return self.recorded(q[name], db=db or "")
        if db not in self.tables:
            return self.recorded(q["database_not_found"], db=db or "")
        return self.recorded(q["empty"])

    # --- for the tests ---------------------------------------------------------------

    def writes(self):
        return [r for r in self.requests if r.path == "/write"]

    def queries(self):
        return [r for r in self.requests if r.path == "/query"]
