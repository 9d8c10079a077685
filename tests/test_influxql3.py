"""Every InfluxQL query jobmon and its Grafana dashboards send is one InfluxDB 3 runs:
each is parsed (tests/influxql3.py), and SLIMIT, SOFFSET, the cardinality meta-queries,
INTO, a database or retention policy in FROM ... are refused."""
import inspect
import os
import time

import pytest

import grafana_model as gm
from influxdb3_recorded import RecordedInfluxDB3
from influxql3 import Refused, parse
from jobmon.stores import Store
from jobmon.stores.ids import parse as job_ref
from jobmon.stores.influx import InfluxStore
from test_influxdb3 import TOKEN, Node

REFUSED = [
    'SELECT mean("cpu_cores") FROM "jobmon_sample" GROUP BY "job" SLIMIT 10',
    'SELECT mean("cpu_cores") FROM "jobmon_sample" GROUP BY "job" SLIMIT 10 SOFFSET 10',
    'SHOW SERIES CARDINALITY',
    'SHOW TAG VALUES CARDINALITY FROM "jobmon_job" WITH KEY = "job"',
    'SHOW TAG KEY EXACT CARDINALITY',
    'SHOW MEASUREMENT CARDINALITY',
    'SHOW FIELD KEY CARDINALITY ON "jobmon"',
    'SHOW SERIES FROM "jobmon_job"',
    'SHOW TAG KEYS ON "jobmon" FROM "jobmon_job"',
    'SELECT * INTO "jobmon"."long"."jobmon_job" FROM "jobmon_job" GROUP BY *',
    'SELECT "wall_seconds" FROM "jobmon"."autogen"."jobmon_job"',
    'SELECT "wall_seconds" FROM "raw"."jobmon_job"',
    'SELECT sample("procs", 3) FROM "jobmon_sample"',
    'SELECT holt_winters(mean("cpu_cores"), 10, 4) FROM "jobmon_sample" GROUP BY time(1m)',
    'CREATE DATABASE "jobmon"',
    'DROP MEASUREMENT "jobmon_sample"',
    'DELETE FROM "jobmon_sample" WHERE time < now() - 30d',
    'SHOW CONTINUOUS QUERIES',
]
RUNS = [   # from InfluxDB 3's InfluxQL documentation
    'SELECT * FROM home WHERE time >= now() - 30d',
    'SELECT MEAN(temp) AS avg FROM home WHERE room = \'Kitchen\' GROUP BY time(1h), room '
    'fill(linear) ORDER BY time DESC LIMIT 10 OFFSET 2 tz(\'America/Chicago\')',
    'SELECT count(n) FROM (SELECT last("x") AS n FROM m GROUP BY time(5s), "h") '
    'WHERE time > 0 GROUP BY time(5s)',
    'SHOW TAG VALUES FROM "home" WITH KEY =~ /^r/ WHERE "room" != \'\' LIMIT 3',
    'SHOW TAG VALUES WITH KEY IN ("room", "host")',
    'SHOW MEASUREMENTS WITH MEASUREMENT =~ /jobmon_.*/',
    'SHOW FIELD KEYS FROM "jobmon_job"; SHOW RETENTION POLICIES; SHOW DATABASES',
    'EXPLAIN ANALYZE SELECT "x"::field, "h"::tag FROM /^jobmon_/ WHERE "h"::tag =~ /a\\/b/',
]


@pytest.mark.parametrize("q", REFUSED)
def test_what_influxdb3_lacks_is_refused(q):
    with pytest.raises(Refused):
        parse(q)


@pytest.mark.parametrize("q", RUNS)
def test_what_influxdb3_runs_parses(q):
    assert parse(q)


@pytest.mark.parametrize("q", ['SELECT FROM "m"', 'SELECT "x" FROM "m" WHERE',
                               'SELECT "x" FROM "m" GROUP BY time(5)', "SELECT 'x FROM m"])
def test_what_no_influxql_parses_is_a_syntax_error(q):
    with pytest.raises(SyntaxError):
        parse(q)


def dashboard_queries():
    for name, dash in gm.load_dashboards().items():
        variables = dash["templating"]["list"]
        values = {v["name"]: gm.ALL if v.get("includeAll") else "x" for v in variables
                  if v["type"] == "query"}
        for where, t in gm.queries(dash):
            yield f"{name} {where}", gm.substitute(t["query"], variables, values, {},
                                                   0, 3600 * 1000)


@pytest.mark.parametrize("where,q", list(dashboard_queries()), ids=lambda x: x if " " in x
                         and not x.startswith(("SELECT", "SHOW")) else None)
def test_every_dashboard_query_runs_on_influxdb3(where, q):
    assert parse(q), where


# the store's read methods and how to call each: a method added to Store without a line
# here fails the test, so no query escapes the check
def store_calls(store):
    [record] = store.records(job_ref("4242"))
    return {
        "jobs": lambda: store.jobs(5),
        "records": lambda: store.records(job_ref("4242"), user="alice"),
        "summaries": lambda: (store.summaries(time.time() - 86400, time.time(), "alice"),
                              store.summaries(fields=["wall_seconds"])),
        "summaries_by_hour": lambda: list(store.summaries_by_hour(
            time.time() - 86400 - 1800, time.time(), "alice", fields=["wall_seconds"])),
        "samples": lambda: store.samples(record),
        "breakdowns": lambda: (store.breakdowns(record), store.breakdowns(record, last=3)),
        "job": lambda: store.job("4242", user="alice"),
        "unreconciled": lambda: (store.unreconciled(), store.unreconciled(0.0, "wn1")),
        "latest": lambda: store.latest(time.time() - 600),
        "alike": lambda: store.alike("alice", "command_hash", "0123456789abcdef", time.time()),
        "actions": lambda: (store.actions(), store.actions(0.0, ["4242"])),
        "rollups": lambda: (list(store.rollups(("run", "by:user"), time.time() - 3 * 86400,
                                               time.time())),
                            list(store.rollups(("batch",), 0, 3600, keys=["a1b2"]))),
    }


def test_every_query_jobmon_sends_runs_on_influxdb3(tmp_path):
    """The queries are captured where they leave jobmon: at a server, from every read
    method of the store and from the commands that read InfluxDB."""
    server = RecordedInfluxDB3(TOKEN)
    server.tables.update(jobmon={}, jobmon_raw={})
    server.answers += [(r'FROM "jobmon_job"', "jobmon", "job_rows"),
                       (r'FROM "jobmon_sample"', "jobmon_raw", "sample_rows")]
    node = Node(server)
    try:
        store = InfluxStore(server.url, "jobmon", "Bearer " + TOKEN, samples_database="jobmon_raw")
        calls = store_calls(store)
        methods = {n for n, f in vars(Store).items() if inspect.isfunction(f)}
        assert methods == set(calls), "a read method of Store has no call here"
        for call in calls.values():
            call()
        for argv in (["query", "--json", "4242"], ["query", "4242", "--user", "alice"],
                     ["list"], ["report", "--since", "2d", "--json"], ["rollup", "--since=1d"],
                     ["report", "4242", "--html", str(tmp_path / "r.html")],
                     ["pilot", "4242", "--json"], ["reconcile", "--json"]):
            node.jobmon(*argv, check=False)
        sent = [r.params["q"] for r in server.queries()]
        assert {q.split('FROM "')[1].split('"')[0] for q in sent} >= {
            "jobmon_job", "jobmon_sample", "jobmon_procs", "jobmon_rollup"}
        assert any(line.startswith("jobmon_rollup,") for r in server.writes()
                   for line in r.lines())
        for q in sent:
            parse(q)
    finally:
        node.close()
        server.close()
