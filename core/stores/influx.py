"""Read jobs back from InfluxDB with InfluxQL over `/query` (1.x natively, 2.x through
its v1 API with a DBRP mapping, 3.x natively). Same read interface as the embedded
store, so `jobmon query` / `jobmon list` render the same report from either. The raw
samples may live in a database of their own (`influxdb.samples_database`); the queries
never name a database or retention policy in FROM, which InfluxDB 3 refuses.

Queries name every column they read, tags as `"k"::tag` and fields as `"k"::field` (never
`SELECT *`, where a field named like a tag would take its place), and look ids and users
up the way the writer stored them (jobmon.influx.lineprotocol.clean_tag)."""
import codecs
import http.client
import json
import urllib.error
import urllib.parse
import urllib.request

from ..influx import auth
from ..influx import lineprotocol as lp
from ..influx import schema
from .interface import HOUR, Store
from .ids import JobRef

DAY = 86400   # a shard's length as deploy/create-influxdb.sh makes them


class InfluxError(Exception):
    pass


def quote_string(value):
    """An InfluxQL string literal: nothing in `value` can end it early."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def regex_literal(text):
    """`text` matched literally inside an InfluxQL /regex/."""
    return "".join("\\" + c if c in "\\/.^$*+?()[]{}|" else c for c in text)


def tag_literal(value):
    """The literal matching a tag value as the writer stored it."""
    return quote_string(lp.clean_tag(value))


def json_objects(stream):
    """Each JSON object of a chunked answer as it arrives: InfluxDB 1.x ends each with a
    newline, 3.x sends them one after another with nothing between. A decode is tried only
    where what has come so far ends an object ("}"), so a large chunk is parsed once."""
    decoder, text = json.JSONDecoder(), ""
    utf8 = codecs.getincrementaldecoder("utf-8")()
    while True:
        data = stream.read1(1 << 16)
        text += utf8.decode(data, final=not data)
        while text.rstrip().endswith("}") or (text.strip() and not data):
            text = text.lstrip()
            try:
                obj, end = decoder.raw_decode(text)
            except ValueError:
                if not data:
                    raise
                break                  # a "}" inside the object: read on
            yield obj
            text = text[end:]
        if not data:
            return


def answer_rows(answer, url):
    """The rows of every series of an InfluxQL answer, as dicts with the tags merged in;
    InfluxError where the answer reports an error, or does not have InfluxDB's shape
    (something else answers at that URL)."""
    def not_influx(what):
        return InfluxError(f"{url}: the answer is not InfluxDB's ({what})")
    results = answer.get("results", []) if isinstance(answer, dict) else None
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise not_influx("no list of results")
    out = []
    for res in results:
        if "error" in res:
            raise InfluxError(f"InfluxDB: {res['error']}"[:1000])
        series = res.get("series", [])
        if not isinstance(series, list) or not all(map(_is_series, series)):
            raise not_influx("a series without its columns, time and values")
        for s in series:
            tags = s.get("tags") or {}
            for v in s.get("values", []):
                row = dict(zip(s["columns"], v))
                if not isinstance(row.get("time"), int):
                    raise not_influx(f"a time that is not in ns: {row.get('time')!r}"[:200])
                row.update(tags)
                if not all(isinstance(row.get(t, ""), (str, type(None))) for t in schema.ALL_TAGS):
                    raise not_influx("a tag that is not text")
                out.append(row)
    return out


def _is_series(s):
    values = s.get("values", []) if isinstance(s, dict) else None
    return (isinstance(values, list) and all(isinstance(v, list) for v in values)
            and isinstance(s.get("tags") or {}, dict) and isinstance(s.get("columns"), list)
            and all(isinstance(c, str) for c in s["columns"]) and "time" in s["columns"])


class InfluxStore(Store):
    def __init__(self, url, database, authorization="", timeout=10.0, samples_database=""):
        """authorization: the Authorization header's value (influx.auth), "" for none."""
        self.url = url.rstrip("/") + "/query"
        self.database = database
        self.samples_database = samples_database or database
        self.timeout = timeout
        self.headers = {"Accept": "application/json"}
        if authorization:
            self.headers["Authorization"] = authorization

    @classmethod
    def from_config(cls, cfg):
        c = cfg["influxdb"]
        summaries, samples = cfg.databases
        return cls(c["url"], c["query_database"] or summaries, auth.from_config(cfg),
                   c["timeout_seconds"], samples)

    CHUNK_ROWS = 10000     # rows per chunk of a streamed answer

    def rows(self, q, database=None):
        """Rows of every series of the answer, as dicts with the tags merged in."""
        return [row for answer in self._answers(q, database) for row in answer]

    def streamed(self, q, database=None):
        """The rows of q as the server streams them, CHUNK_ROWS at a time (chunked): one
        query however many rows (pages by LIMIT and OFFSET ran it again for each), held a
        chunk at a time, and a server's max-row-limit does not apply to it."""
        for answer in self._answers(q, database, chunk=self.CHUNK_ROWS):
            yield from answer

    def _answers(self, q, database, chunk=None):
        """The rows of each JSON answer the server sends (one; one a chunk with `chunk`)."""
        params = {"db": database or self.database, "q": q, "epoch": "ns"}
        if chunk:
            params.update(chunked="true", chunk_size=str(chunk))
        req = urllib.request.Request(self.url, data=urllib.parse.urlencode(params).encode(),
                                     headers=self.headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                for answer in json_objects(r) if chunk else [json.loads(r.read())]:
                    yield answer_rows(answer, self.url)
        except urllib.error.HTTPError as e:
            raise InfluxError(f"{self.url}: HTTP {e.code}: {e.read()[:300].decode('utf-8', 'replace')}")
        except (OSError, http.client.HTTPException) as e:   # (cut short: IncompleteRead)
            raise InfluxError(f"{self.url}: {e}")
        except ValueError as e:    # not JSON: not an InfluxDB (a proxy's error page ...)
            raise InfluxError(f"{self.url}: the answer is not InfluxDB's ({e})")

    # --- read interface ---
    def jobs(self, limit=20, user=None):
        if int(limit) < 1:
            raise InfluxError(f"cannot list {limit} jobs: give 1 or more")
        where = f' WHERE "user"::tag = {tag_literal(user)}' if user else ""
        rows = self.rows(f'SELECT {schema.columns(schema.JOB)} FROM "{schema.JOB}"{where} '
                         f'ORDER BY time DESC LIMIT {int(limit)}')
        return [schema.job_from_row(r) for r in rows]

    def records(self, ref, user=None):
        ref = JobRef(ref.text, [lp.clean_tag(j) for j in ref.exact],   # as the writer stored them
                     [lp.clean_tag(p) for p in ref.prefixes], ref.global_id)
        ids = [f'"job"::tag = {quote_string(j)}' for j in ref.exact]
        ids += [f'"job"::tag =~ /^{regex_literal(p)}/' for p in ref.prefixes]
        where = "(" + " OR ".join(ids) + ")"
        if user:
            where += f' AND "user"::tag = {tag_literal(user)}'
        rows = self.rows(f'SELECT {schema.columns(schema.JOB)} FROM "{schema.JOB}" '
                         f'WHERE {where} ORDER BY time DESC')
        out = []
        for row in rows:
            info = _record(row)
            if ref.matches(info):
                out.append(info)
        return out

    def summaries(self, since=None, until=None, user=None, fields=None):
        return sorted(self._summaries(since, until, user, fields), key=_order)

    def summaries_by_hour(self, since, until, user=None, fields=None):
        """A day in one query (streamed), split into its hours: a 1.x server's query
        costs it every series of the shards it touches, whatever its time range in them (a
        job is a series), and its shards are a day long (deploy/create-influxdb.sh): an
        hour per query paid for each day's series 24 times."""
        t = since
        while t < until:
            end = min((t // DAY + 1) * DAY, until)
            hour, held = int(t // HOUR) * HOUR, []
            for r in self._summaries(t, end, user, fields):
                start = r["_point"]["time"] // 10**9 // HOUR * HOUR
                while hour < start:
                    yield hour, sorted(held, key=_order)
                    hour, held = hour + HOUR, []
                held.append(r)
            while hour < end:
                yield hour, sorted(held, key=_order)
                hour, held = hour + HOUR, []
            t = end

    def _summaries(self, since, until, user, fields):
        """Job points only (timestamped at the job's start), without the command line, in
        time order; the server's time grows with the columns read, so a caller may name
        the fields it uses."""
        known = set(schema.STORED_TYPES[schema.JOB]) - {"command"}
        if fields is not None:
            known &= set(fields) | {"ended", "tags", "start_time", "method", "interval"}
        fields = sorted(known)
        cols = ", ".join([f'"{f}"::field' for f in fields] +
                         [f'"{t}"::tag' for t in schema.ALL_TAGS])
        where = []
        if since is not None:
            where.append(f"time >= {int(since * 1e9)}")
        if until is not None:
            where.append(f"time < {int(until * 1e9)}")
        if user:
            where.append(f'"user"::tag = {tag_literal(user)}')
        cond = " WHERE " + " AND ".join(where) if where else ""
        return map(_record, self.streamed(
            f'SELECT {cols} FROM "{schema.JOB}"{cond} ORDER BY time'))

    def alike(self, user, key, value, until):
        """The job points of `user` before `until` whose `key` field (the writer copies
        the job's hashes into fields of their own: jobmon.influx.schema.job_line) is
        `value`, newest first: selected by the server."""
        if key not in schema.HASHES:
            raise InfluxError(f"no hash field {key!r}")
        rows = self.streamed(
            f'SELECT {schema.columns(schema.JOB)} FROM "{schema.JOB}" WHERE '
            f'"user"::tag = {tag_literal(user)} AND "{key}"::field = {quote_string(value)} '
            f'AND time < {int(until * 1e9)} ORDER BY time DESC')
        return [_record(row) for row in rows]

    def unreconciled(self, since=None, host=None):
        """Job points not reconciled yet (`jobmon reconcile`: every end-of-job point, and
        the shipper's mark for a run whose end-of-job record never came, has
        "reconciled" = 0), of `host` (None: every host), started at or after `since`,
        oldest first."""
        where = ['"reconciled" = 0']
        if host:
            where.append(f'"host"::tag = {tag_literal(host)}')
        if since is not None:
            where.append(f"time >= {int(since * 1e9)}")
        return [_record(row) for row in self.streamed(
            f'SELECT {schema.columns(schema.JOB)} FROM "{schema.JOB}" '
            f'WHERE {" AND ".join(where)} ORDER BY time')]

    # the sample fields `jobmon act` reads of each running record
    LATEST = ("cpu_idle_seconds", "gpu_unused_seconds", "gpu_count", "elapsed_seconds",
              "sample_gap_seconds")

    def latest(self, since):
        # one row per series (a record: its tags), its newest in the range
        cols = ", ".join(f'"{f}"::field' for f in self.LATEST)
        rows = self.rows(f'SELECT {cols} FROM "{schema.SAMPLE}" WHERE time >= '
                         f'{int(since * 1e9)} GROUP BY * ORDER BY time DESC LIMIT 1',
                         self.samples_database)
        return [dict({t: r.get(t) for t in schema.ALL_TAGS}, sample=schema.sample_in_range(
                     {k: r[k] for k in ("time",) + self.LATEST if r.get(k) is not None}))
                for r in rows]

    def actions(self, since=None, jobs=None):
        where = [f"time >= {int(since * 1e9)}"] if since is not None else []
        if jobs is not None:
            if not jobs:
                return []
            where.append("(" + " OR ".join(f'"job"::tag = {tag_literal(j)}'
                                           for j in sorted(set(jobs))) + ")")
        cond = " WHERE " + " AND ".join(where) if where else ""
        rows = self.rows(f'SELECT {schema.columns(schema.ACTION)} FROM "{schema.ACTION}"'
                         f'{cond} ORDER BY time')
        return [schema.action_from_row(r) for r in rows]

    # a day of rollups per query (3.x Core reads at most ~72 hours of a table in one)
    ROLLUP_WINDOW = 86400

    def rollups(self, parts, since, until, keys=None):
        cond = "(" + " OR ".join(f'"part"::tag = {quote_string(p)}' for p in parts) + ")"
        if keys is not None:
            cond += " AND (" + " OR ".join(f'"key"::tag = {quote_string(k)}' for k in keys) + ")"
        t = since
        while t < until:
            end = min(t + self.ROLLUP_WINDOW, until)
            pieces = {}
            for row in self.streamed(f'SELECT "state"::field, "chunks"::field, "part"::tag, '
                                     f'"key"::tag, "chunk"::tag FROM "{schema.ROLLUP}" WHERE '
                                     f'{cond} AND time >= {int(t * 1e9)} AND time < '
                                     f'{int(end * 1e9)} ORDER BY time'):
                got = pieces.setdefault((row["time"], row["part"], row["key"]), {})
                got[int(row["chunk"])] = row
            for (ns, part, key), chunks in sorted(pieces.items()):
                n = chunks.get(0, {}).get("chunks")   # the rest of a longer text is stale
                if n and all(c in chunks for c in range(n)):
                    yield ns // 10**9, part, key, "".join(chunks[c]["state"] for c in range(n))
            t = end

    CHUNK = 20000     # characters of a rollup's text per point (1.x: strings to 64 KiB)

    @classmethod
    def rollup_lines(cls, hour, parts):
        """Line protocol for an hour's rollup parts ([(part, key, text)])."""
        out = []
        for part, key, text in parts:
            pieces = [text[i:i + cls.CHUNK] for i in range(0, len(text), cls.CHUNK)] or [""]
            for n, piece in enumerate(pieces):
                out.append(lp.point(schema.ROLLUP, {"part": part, "key": key, "chunk": str(n)},
                                    {"state": piece, "chunks": len(pieces)}, hour * 10**9))
        return "".join(out)

    def breakdowns(self, record, last=None):
        point = record["_point"]
        where = " AND ".join(f'"{k}"::tag = {quote_string(point[k])}'
                             for k in schema.SHIPPER_TAGS + schema.JOB_TAGS
                             if point.get(k) is not None)
        order = f" ORDER BY time DESC LIMIT {int(last)}" if last else " ORDER BY time"
        rows = self.streamed(f'SELECT {schema.columns(schema.PROCS)} FROM "{schema.PROCS}" '
                             f'WHERE {where} AND time >= {point["time"] - 10**6}{order}',
                             self.samples_database)
        out = [schema.procs_from_row(r) for r in rows]
        return out[::-1] if last else out

    def samples(self, record):
        point = record["_point"]
        where = " AND ".join(f'"{k}"::tag = {quote_string(point[k])}'
                             for k in schema.SHIPPER_TAGS + schema.JOB_TAGS
                             if point.get(k) is not None)
        end, end_time = "", (record["summary"] or {}).get("end_time")
        if isinstance(end_time, (int, float)) and (end_time + 60) * 1e9 < 2**63:
            end = f" AND time <= {int((end_time + 60) * 1e9)}"   # (a forged 1e308: none)
        rows = self.streamed(f'SELECT {schema.columns(schema.SAMPLE)} FROM "{schema.SAMPLE}" '
                             f'WHERE {where} AND time >= {point["time"] - 10**6}{end} '
                             f'ORDER BY time', self.samples_database)  # the start is µs-rounded
        return [schema.sample_from_row(r) for r in rows]


def _order(record):
    return record["_point"]["time"], record["job"] or ""   # ties: by id


def _record(row):
    """A job dict from a job point's row, with where it is ("_point": its time and every
    tag as stored, the series key a correction writes to)."""
    info = schema.job_from_row(row)
    info["cluster"] = row.get("cluster")   # the pool, as the shipper names it
    info["_point"] = {k: row.get(k) for k in ("time",) + schema.ALL_TAGS}
    return info
