"""InfluxDB 3 as a configured target, proven against the exchanges recorded from its
documentation and source (tests/fixtures/influxdb3/, served by influxdb3_recorded.py):
the real shipper and the real `jobmon query` send the token on every request, write the
raw samples and the summaries to their two databases, and take 3.x's answers -- its
partial writes, its schema limits, its refusals and its query results -- as they are."""
import json
import os
import shutil
import tempfile
import time

import pytest

from helpers import JOBMON
from influxdb3_recorded import RecordedInfluxDB3
from jobmon import config
from test_influx_ship import spool_job

TOKEN = "apiv3_recorded-token"


class Node:
    """A node whose config names an InfluxDB 3 server: token file, two databases."""

    def __init__(self, server, token=TOKEN, **influxdb):
        self.server = server
        self.dir = tempfile.mkdtemp(prefix="jobmon-influx3-")
        self.spool = os.path.join(self.dir, "spool")
        self.token = os.path.join(self.dir, "token")
        with open(os.open(self.token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(token + "\n")
        self.config = os.path.join(self.dir, "jobmon.toml")
        keys = dict(version=3, url=server.url, database="jobmon",
                    samples_database="jobmon_raw", token_file=self.token, **influxdb)
        with open(self.config, "w") as f:
            f.write('[store]\nkind = "influxdb"\n[influxdb]\n')
            f.write("".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items()))
            f.write(f'[spool]\ndir = "{self.spool}"\n[shipper]\nstate_dir = '
                    f'"{self.dir}/state"\nhost = "wn1"\ncluster = "c1"\n'
                    f'retry_initial_seconds = 0.05\nretry_max_seconds = 0.2\n')
        from jobmon.ship.spooldir import prepare_spool
        prepare_spool(self.spool)

    def jobmon(self, *args, check=True):
        import subprocess
        env = dict(os.environ, JOBMON_CONFIG=self.config)
        env.pop("JOBMON_STORE", None)
        r = subprocess.run([JOBMON, *args], env=env, capture_output=True, text=True,
                           timeout=120)
        assert not check or r.returncode == 0, f"jobmon {args}: {r.returncode}\n{r.stderr}"
        return r

    def files(self):
        return sorted(f for f in os.listdir(self.spool) if f.endswith(".lp"))

    def status(self):
        return json.loads(self.jobmon("ship", "--status", "--json").stdout)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def server():
    s = RecordedInfluxDB3(TOKEN)
    yield s
    s.close()


@pytest.fixture
def node(server):
    n = Node(server)
    yield n
    n.close()


def measurements(lines):
    return {line.split(",", 1)[0] for line in lines}


# --- the configuration ----------------------------------------------------------------

def test_influxdb3_needs_a_token_and_has_no_retention_policies(tmp_path):
    p = tmp_path / "jobmon.toml"
    p.write_text('[store]\nkind = "influxdb"\n[influxdb]\nversion = 3\n')
    with pytest.raises(config.ConfigError, match=r"influxdb.token_file must name the token"):
        config.load(str(p), env={})
    p.write_text('[influxdb]\nversion = 3\ntoken_file = "/t"\nretention_policy = "raw"\n')
    with pytest.raises(config.ConfigError, match=r":4: influxdb.retention_policy must be "
                       r"empty: InfluxDB 3 has no retention policies"):
        config.load(str(p), env={})
    p.write_text('[influxdb]\nversion = 4\n')
    with pytest.raises(config.ConfigError, match=r"version must be one of 1, 2, 3"):
        config.load(str(p), env={})
    p.write_text('[influxdb]\nversion = 3\ntoken_file = "/t"\nsamples_database = "raw"\n')
    assert config.load(str(p), env={}).databases == ("jobmon", "raw")
    p.write_text('[influxdb]\napi = "v2"\nbucket = "b"\n')      # the 1.x/2.x layouts stay
    assert config.load(str(p), env={}).databases == ("b", "b")


# --- writes ------------------------------------------------------------------------------

def test_the_shipper_sends_the_token_and_each_measurement_to_its_database(server, node):
    """Every request carries the token; the raw samples go to the samples database, the
    job points and the shipper's own to the summaries'; ns precision, no retention
    policy (3.x would make it part of the database name); nothing is lost."""
    spool_job(node.spool, "4242", 30, start=time.time() - 100)
    spool_job(node.spool, "4243", 5, start=time.time() - 50)
    node.jobmon("ship")
    assert node.files() == []
    writes = server.writes()
    assert writes and all(r.headers["Authorization"] == f"Bearer {TOKEN}" for r in writes)
    assert all(r.params.get("precision") == "ns" and "rp" not in r.params for r in writes)
    by_db = {}
    for r in writes:
        by_db.setdefault(r.params["db"], []).extend(r.lines())
    assert set(by_db) == {"jobmon", "jobmon_raw"}
    assert measurements(by_db["jobmon_raw"]) == {"jobmon_sample"}
    assert measurements(by_db["jobmon"]) == {"jobmon_job", "jobmon_shipper"}
    assert len(server.points["jobmon_raw"]) == 35           # every sample, once
    assert all(",host=wn1," in line and ",cluster=c1," in line and ",user=" in line
               for line in by_db["jobmon_raw"])


def test_a_refused_token_keeps_the_data_and_says_so(server, tmp_path):
    node = Node(server, token="apiv3_revoked")
    try:
        spool_job(node.spool, "4242", 3)
        r = node.jobmon("ship", "--timeout=0.5", check=False)
        assert r.returncode == 75 and node.files()
        assert "HTTP 401" in r.stderr and "the request was not authenticated" in r.stderr
        assert "check the token" in node.status()["last_error"]
    finally:
        node.close()


def test_the_servers_schema_limit_keeps_the_data_spooled(node):
    """3.x answers 422 when a write would cross its schema limits (here a table of 5
    columns): the data is good, the server must change. On 1.x's terms (a 4xx: the data is
    bad) the shipper would quarantine every file of every user."""
    node.server.column_limit = 5
    spool_job(node.spool, "4242", 3)
    r = node.jobmon("ship", "--timeout=0.5", check=False)
    assert r.returncode == 75, r.stderr
    assert node.files() and not os.listdir(os.path.join(node.spool, ".quarantine"))
    st = node.status()
    assert "schema limit" in st["last_error"] and "limit of 5 columns" in st["last_error"]
    assert st["quarantined_files"] == 0 and st["pending_points"] == 5
    node.server.column_limit = 500           # the admin raised it: everything arrives
    node.jobmon("ship")
    assert node.files() == [] and len(node.server.points["jobmon_raw"]) == 3


def test_a_line_the_server_refuses_quarantines_only_its_file(node):
    """3.x's partial write (400, the refused lines listed): the file whose line the
    server refused is quarantined with the server's reason, the rest arrives."""
    # another writer made `threads` a float column in the samples' table
    node.server.tables["jobmon_raw"] = {"jobmon_sample": {
        "threads": "iox::column_type::field::float"}}
    good = spool_job(node.spool, "ok", 2)
    bad = spool_job(node.spool, "typed", 2)
    with open(bad, "a") as f:
        f.write(f"jobmon_sample,job=typed threads=3i {time.time_ns()}\n")
    r = node.jobmon("ship")
    assert "invalid column type for column 'threads'" in r.stderr and bad in r.stderr
    assert os.path.exists(os.path.join(node.spool, ".quarantine", os.path.basename(bad)))
    assert not os.path.exists(good)
    assert {line.split(",job=")[1].split(",")[0] for line in node.server.points["jobmon_raw"]
            } >= {"ok"}


def test_no_line_with_an_empty_tag_value_reaches_the_server(node):
    """InfluxDB refuses a tag with an empty value (3.x: "Expected tag value"); the
    shipper refuses it first, so the file is quarantined without a round trip and no
    such line is ever sent."""
    bad = os.path.join(node.spool, f"{time.time_ns()}.0.1.x.lp")
    with open(bad, "w") as f:
        f.write(f"jobmon_sample,job=7,partition= procs=1i {time.time_ns()}\n")
    spool_job(node.spool, "4242", 2)
    node.jobmon("ship")
    sent = [line for r in node.server.writes() for line in r.lines()]
    assert sent and not [line for line in sent if "=," in line or "= " in line]
    assert os.path.exists(os.path.join(node.spool, ".quarantine", os.path.basename(bad)))


# --- reads --------------------------------------------------------------------------------

def test_jobmon_query_reads_both_databases_with_the_token(node):
    """`jobmon query` asks the summaries' database for the job and the samples' for its
    series, token on each request, and takes 3.x's answer: ns epochs, absent tags null."""
    node.server.tables.update(jobmon={}, jobmon_raw={})    # made by the admin (docs)
    node.server.answers += [(r'FROM "jobmon_job"', "jobmon", "job_rows"),
                            (r'FROM "jobmon_sample"', "jobmon_raw", "sample_rows")]
    rep = json.loads(node.jobmon("query", "--json", "4242").stdout)
    assert [s["cpu_user_seconds"] for s in rep["samples"]] == [0.5, 1.0]
    assert rep["summary"]["cpu_user_seconds"] == 3.5 and rep["job"]["user"] == "alice"
    assert rep["job"].get("run") is None
    queries = node.server.queries()
    assert queries and all(q.headers["Authorization"] == f"Bearer {TOKEN}" for q in queries)
    dbs = {q.params["q"].split('FROM "')[1].split('"')[0]: q.params["db"] for q in queries}
    assert dbs["jobmon_job"] == "jobmon" and dbs["jobmon_sample"] == "jobmon_raw"
    assert all(q.params["epoch"] == "ns" for q in queries)


@pytest.mark.parametrize("answer, said", [
    ("database_not_found", "database not found: jobmon"),
    ("not_implemented", "This feature is not implemented"),
    ("core_file_limit", "increase the limit with --query-file-limit"),
])
def test_a_statement_error_is_reported_not_a_traceback(node, answer, said):
    """3.x reports a statement's error in a 200 answer (`results[].error`)."""
    node.server.answers.append((r"", None, answer))
    r = node.jobmon("query", "4242", check=False)
    assert r.returncode != 0 and said in r.stderr and "Traceback" not in r.stderr


def test_a_refused_token_on_a_query_is_reported(server):
    node = Node(server, token="apiv3_revoked")
    try:
        r = node.jobmon("query", "4242", check=False)
        assert r.returncode != 0 and "Traceback" not in r.stderr
        assert "HTTP 401" in r.stderr and "the request was not authenticated" in r.stderr
    finally:
        node.close()
