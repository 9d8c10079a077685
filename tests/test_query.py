"""`jobmon query`: job ids as users type them (clusters, arrays, GlobalJobIds), several runs of
one job, and multi-node runs -- from the embedded store and from InfluxDB through the real
spool and shipper."""
import json
import time

import pytest

from helpers import jobmon
from jobmon.sinks.spool import SpoolSink
from jobmon.stores.ids import parse
from jobmon.stores.local import LocalStore


def write_job(sink, job_id, host, start, cpu, run=None, tags=None, n=3, exit_code=0):
    """One record of a finished job through a real sink (store or spool)."""
    job = {"job": job_id, "host": host, "user": "u", "method": "procfs", "start_time": start,
           "tags": tags or {}, "command": ["work"], "interval": 1.0, "scheduler": "test",
           "run": run}
    sink.open(job)
    for k in range(n):
        sink.write({"time": int((start + k + 1) * 1e9), "elapsed_seconds": k + 1.0,
                    "method": "procfs", "cpu_user_seconds": cpu * (k + 1) / n,
                    "mem_resident_bytes": 1000 * (k + 1), "procs": 1})
    sink.close({"job": job_id, "host": host, "method": "procfs", "start_time": start,
                "end_time": start + n, "exit_code": exit_code, "signal": None,
                "wall_seconds": float(n), "cpu_user_seconds": cpu, "cpu_system_seconds": 0.0,
                "rss_peak_bytes": 1000 * n, "samples": n, "tags": tags or {}})


def fill(sink_for, host_done=lambda host: None):
    """The same jobs in any store; host_done(host) after each node's records (InfluxDB:
    that node's shipper sends them, setting its own host tag)."""
    by_host = {}
    for args in JOBS:
        by_host.setdefault(args[2], []).append(args)
    t = time.time() - 1000
    for host, jobs in sorted(by_host.items()):
        for job_id, start, _host, cpu, kw in jobs:
            write_job(sink_for(), job_id, host, t + start, cpu, **kw)
        host_done(host)


JOBS = [   # job, start offset, host, CPU s, more
    ("4711.0", 0, "wn1", 1.0, dict(run=1, exit_code=None)),   # evicted
    ("4711.0", 100, "wn2", 2.0, dict(run=2)),
    ("4711.1", 10, "wn1", 3.0, dict(run=1)),
    ("47110.0", 20, "wn1", 4.0, dict(run=1)),                 # not of cluster 4711
    ("12345_0", 30, "wn1", 5.0, {}),
    ("12345_1", 40, "wn1", 6.0, {}),
    ("777", 50, "wn1", 1.5, dict(run=0, tags={"node": "wn1", "nodes": "3"})),   # 3 nodes
    ("777", 50, "wn2", 1.5, dict(run=0, tags={"node": "wn2", "nodes": "3"})),
    ("777", 50, "wn3", 1.5, dict(run=0, tags={"node": "wn3", "nodes": "3"})),
    ("9.0", 60, "wn1", 7.0, dict(run=1, tags={"GlobalJobId": "ap1#9.0#1700000000"})),
    ("9.0", 70, "wn2", 8.0, dict(run=1, tags={"GlobalJobId": "ap2#9.0#1700000099"})),
]


def query(args, **kw):
    r = jobmon("query", *args, "--json", **kw)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(params=["local", "influxdb"])
def store_args(request, tmp_path):
    """`jobmon query` arguments and env for a store filled with the same jobs."""
    if request.param == "local":
        path = str(tmp_path / "s.db")
        fill(lambda: LocalStore(path))
        yield {"args": [f"--store={path}"], "env": None}
        return
    site = request.getfixturevalue("site")
    site.prepare()
    fill(lambda: SpoolSink(site.spool),
         lambda host: site.ship(env=dict(site.env, JOBMON_SHIPPER_HOST=host)))
    yield {"args": [], "env": site.env}


def test_runs_of_one_job(store_args):
    rep = query(["4711.0"] + store_args["args"], env=store_args["env"])
    assert [r["run"] for r in rep["runs"]] == ["1", "2"]
    assert rep["job"]["run"] == "2" and rep["job"]["host"] == "wn2"   # the latest by default
    assert rep["summary"]["cpu_user_seconds"] == 2.0
    assert rep["runs"][0]["status"] != "exit code 0"    # the evicted run shows
    first = query(["4711.0", "--run", "1"] + store_args["args"], env=store_args["env"])
    assert first["job"]["host"] == "wn1" and first["summary"]["cpu_user_seconds"] == 1.0
    r = jobmon("query", "4711.0", "--run", "7", *store_args["args"], env=store_args["env"])
    assert r.returncode == 1 and "no run '7'" in r.stderr and "Traceback" not in r.stderr


def test_cluster_and_array_cover_their_members_only(store_args):
    rep = query(["4711"] + store_args["args"], env=store_args["env"])
    assert sorted(j["job"]["job"] for j in rep["jobs"]) == ["4711.0", "4711.1"]
    rep = query(["12345"] + store_args["args"], env=store_args["env"])
    assert sorted(j["job"]["job"] for j in rep["jobs"]) == ["12345_0", "12345_1"]
    table = jobmon("query", "4711", *store_args["args"], env=store_args["env"])
    assert table.returncode == 0 and "4711.0" in table.stdout and "47110" not in table.stdout


def test_multi_node_run_is_joined(store_args):
    rep = query(["777"] + store_args["args"], env=store_args["env"])
    assert rep["job"]["host"] == "wn1, wn2, wn3"
    assert rep["job"]["tags"] == {"node": "wn1,wn2,wn3", "nodes": "3"}   # not the first's
    assert sorted(h["host"] for h in rep["hosts"]) == ["wn1", "wn2", "wn3"]
    assert rep["summary"]["cpu_user_seconds"] == pytest.approx(4.5)     # summed over nodes
    assert rep["summary"]["rss_peak_bytes"] == 3000                     # the largest node's
    assert len(rep["samples"]) == 9 and {s["host"] for s in rep["samples"]} == {"wn1", "wn2", "wn3"}
    csv_out = jobmon("query", "777", "--csv", "--samples", *store_args["args"], env=store_args["env"])
    assert csv_out.stdout.splitlines()[0].startswith("host,") and len(csv_out.stdout.splitlines()) == 10


def test_global_job_id_picks_its_schedds_job(store_args):
    rep = query(["ap2#9.0#1700000099"] + store_args["args"], env=store_args["env"])
    assert rep["job"]["host"] == "wn2" and rep["summary"]["cpu_user_seconds"] == 8.0


def test_job_ref_parsing():
    assert parse("4711").matches({"job": "4711.3"}) and parse("4711").matches({"job": "4711"})
    assert not parse("4711").matches({"job": "47110.0"})
    assert parse("12345").matches({"job": "12345_7"}) and not parse("12345_7").matches({"job": "12345_70"})
    g = parse("s#1.0#5")
    assert g.matches({"job": "1.0", "tags": {"GlobalJobId": "s#1.0#5"}})
    assert not g.matches({"job": "1.0", "tags": {"GlobalJobId": "t#1.0#5"}})
    assert parse("a.b").exact == ("a.b",) and not parse("a.b").group


WRONG_SHAPES = [b"[]", b'{"results": "x"}', b'{"results": [5]}',
                b'{"results": [{"series": {"columns": []}}]}',
                b'{"results": [{"series": [{"columns": ["time", "job"], "values": 5}]}]}',
                b'{"results": [{"series": [{"columns": ["time", "job"], "values": [["x", 1]]}]}]}',
                b'{"results": [{"series": [{"columns": ["time", "job"], "values": [[1, 2]]}]}]}']


@pytest.mark.parametrize("body", WRONG_SHAPES)
def test_an_answer_that_is_not_influxdbs_is_one_line_not_a_traceback(tmp_path, body):
    """Something else answers at the configured URL, with JSON of another shape: `jobmon
    query`, `list` and `report` say so in one line and exit 1."""
    import http.server
    import threading

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        config = tmp_path / "jobmon.toml"
        config.write_text(f'[store]\nkind = "influxdb"\n[influxdb]\n'
                          f'url = "http://127.0.0.1:{server.server_address[1]}"\n')
        env = {"JOBMON_CONFIG": str(config), "PATH": "/usr/bin:/bin"}
        for argv in (["query", "4711.0"], ["list"], ["report", "--by", "user"]):
            r = jobmon(*argv, env=env)
            assert r.returncode == 1, (argv, r.stdout, r.stderr)
            assert r.stderr.startswith("jobmon: http://127.0.0.1:") and \
                "the answer is not InfluxDB's" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    finally:
        server.shutdown()
        server.server_close()
