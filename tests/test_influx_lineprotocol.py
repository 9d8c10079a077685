"""Line protocol: equal to influxdb-client's encoding, and every tag/field value
round-trips through the real InfluxDB 1.6.7 (hypothesis)."""
import json
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from influxdb_client import Point

from jobmon.influx import lineprotocol as lp
from jobmon.stores.influx import InfluxStore, quote_string

text = st.text(min_size=1, max_size=40)
special = st.text(alphabet=st.sampled_from(list(',= "\\\'\n\r\tx\u00e9\u4e2d\U0001f600=')),
                  min_size=1, max_size=12)
any_text = st.one_of(text, special)
slow = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def write(influx, db, body):
    import urllib.request
    req = urllib.request.Request(f"{influx.url}/write?db={db}&precision=ns", data=body.encode())
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 204


@pytest.fixture(scope="module")
def db(influx_server):
    influx_server.create_db("lp")
    return "lp"


def _client_line(tags, fields, t):
    p = Point("m").time(t)
    for k, v in tags.items():
        p = p.tag(k, v)
    for k, v in fields.items():
        p = p.field(k, v)
    return p.to_line_protocol() + "\n"


@given(tags=st.dictionaries(st.sampled_from(["job", "host", "a b", "c,d", "e=f"]),
                            any_text, min_size=1, max_size=3),
       s=any_text, f=st.floats(allow_nan=False, allow_infinity=False), i=st.integers(-2**63, 2**63 - 1))
@settings(max_examples=300, deadline=None)
def test_encoder_equals_influxdb_client_for_values_influx_can_store(tags, s, f, i):
    """Where influxdb-client's output survives InfluxDB (no control characters, no
    backslash in front of , = space or at the end of a tag), ours is byte-identical."""
    clean = {k: lp.clean_tag(v) for k, v in tags.items()}
    s = s.replace("\n", "\ufffd").replace("\r", "\ufffd")
    fields = {"s": s, "f": f, "i": i}
    ours = lp.line("m", clean, {"s": lp.string(s), "f": lp.number(f, False),
                                "i": lp.number(i, True)}, 1)
    assert ours == _client_line(clean, fields, 1)
    if all(v == lp.clean_tag(v) for v in tags.values()):
        assert ours == _client_line(tags, fields, 1)


@given(value=any_text)
@settings(max_examples=500, deadline=None)
def test_a_hostile_value_is_one_point(value):
    line = lp.point("m", {"job": value, "host": value}, {"command": value, "x": 1.5}, 10 ** 18)
    assert line.count("\n") == 1 and line.endswith(" 1000000000000000000\n")


@given(values=st.lists(any_text, min_size=1, max_size=8))
@slow
def test_tag_values_round_trip_through_influxdb(influx_server, db, values):
    base = time.time_ns()
    body = "".join(lp.point("rt", {"k": v, "n": str(n)}, {"x": n}, base + n)
                   for n, v in enumerate(values))
    write(influx_server, db, body)
    rows = influx_server.rows(f"SELECT x, k FROM rt WHERE time >= {base} AND time < "
                              f"{base + len(values)} ORDER BY time", db)
    assert [r["k"] for r in rows] == [lp.clean_tag(v) for v in values]
    # and clean_tag only touches what InfluxDB cannot store
    for v in values:
        if "\\" not in v and not re.search(r"[\x00-\x1f\x7f]", v):
            assert lp.clean_tag(v) == v


@given(values=st.lists(any_text, min_size=1, max_size=8),
       nums=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=8),
       ints=st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=8))
@slow
def test_field_values_round_trip_through_influxdb(influx_server, db, values, nums, ints):
    base = time.time_ns()
    n = max(len(values), len(nums), len(ints))
    body = ""
    for k in range(n):
        v, f, i = values[k % len(values)], nums[k % len(nums)], ints[k % len(ints)]
        body += lp.point("rf", {"k": str(k)}, {"plain": v.replace("\n", " ").replace("\r", " "),
                                               "json": json.dumps([v]), "f": f, "i": i}, base + k)
    write(influx_server, db, body)
    rows = influx_server.rows(f"SELECT * FROM rf WHERE time >= {base} AND time < {base + n}", db)
    assert len(rows) == n
    for r in rows:
        k = int(r["k"])
        v = values[k % len(values)]
        assert r["plain"] == v.replace("\n", " ").replace("\r", " ")
        assert json.loads(r["json"]) == [v]
        assert float(r["f"]) == nums[k % len(nums)]  # JSON may print 1e16 as an integer
        assert r["i"] == ints[k % len(ints)]


@given(job=any_text)
@slow
def test_influxql_literal_cannot_be_escaped(influx_server, db, job):
    """A hostile job id in `jobmon query` selects exactly that job, nothing else."""
    t = time.time_ns()
    write(influx_server, db, lp.point("q", {"job": job}, {"x": 1}, t)
          + lp.point("q", {"job": "other"}, {"x": 2}, t))
    store = InfluxStore(influx_server.url, db)
    rows = store.rows(f"SELECT * FROM q WHERE job = {quote_string(lp.clean_tag(job))} AND time = {t}")
    assert [r["x"] for r in rows] == ([2] if lp.clean_tag(job) == "other" else [1])


@given(value=st.text(min_size=0, max_size=3000))
@settings(max_examples=200, deadline=None)
def test_tag_values_are_bounded_and_stay_distinct(value):
    """Every stored tag value fits the server's series-key limit with room to spare; a
    shortened one keeps its start and a checksum of the whole, so two long values that
    differ anywhere stay two values."""
    stored = lp.clean_tag(value)
    assert len(stored.encode()) <= lp.MAX_TAG_BYTES
    if len(lp.clean_tag(value + "x").encode()) > lp.MAX_TAG_BYTES:
        assert lp.clean_tag(value + "x") != lp.clean_tag(value + "y")


def test_the_longest_job_line_fits_the_reserve_and_passes_the_shippers_check():
    """The end-of-job line of a job with every tag, a huge command and huge free tags,
    values that are not UTF-8: within MAX_LINE_BYTES (the room the writer keeps for it),
    and jobmon line protocol by the shipper's check."""
    from jobmon.influx import grammar, schema
    from jobmon.metrics import SUMMARY_FIELDS
    huge = "\udcff\\ ,=\"" * 20000
    tags = {k: huge for k in schema.PROMOTED_TAGS}
    tags.update({f"free{n}": huge for n in range(50)})
    job = {"job": huge, "scheduler": huge, "method": huge, "start_time": 1.7e9, "interval": 1.0,
           "command": [huge] * 100, "tags": tags}
    summary = {n: 1 for n, _u, _r, _m in SUMMARY_FIELDS}
    summary["method"] = huge
    for line in (schema.job_line(job), schema.job_line(job, summary, 7)):
        data = line.encode()
        assert len(data) <= schema.MAX_LINE_BYTES
        assert grammar.Checker().first_bad(data) is None
    assert isinstance(json.loads(schema._command_text(job["command"])), list)
    assert isinstance(json.loads(schema._tags_text(tags)), dict)
