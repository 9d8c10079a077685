"""`jobmon report` over a time range, end to end: summaries written through the real sinks
(the embedded store; the spool and the real shipper into InfluxDB 1.6), read back with the
stores' summaries() and the command, and real `jobmon run` jobs."""
import json
import time

import pytest

from helpers import TEST_USER, jobmon, jobmon_run, needs_test_user
from influx_site import Site
from jobmon.stores.ids import JobRef
from servers import Influx
from jobmon.sinks.spool import SpoolSink
from jobmon.stores.influx import InfluxStore
from jobmon.stores.local import LocalStore

# the write and read path also as configured for InfluxDB 3 (conftest: site_flavour)
SITE_FLAVOURS = ("1.x", "3.x")

DAY, MiB = 86400.0, 1 << 20
NOW = time.time()
FIT = {"JobBatchName": "fit", "RequestCpus": "2", "RequestMemory": "2048", "account": "physics"}
ARRAY = {"array_job_id": "20", "request_cpus": "1", "request_memory": "1GiB",
         "partition": "gpu"}
JOBS = [   # job, user, started (days ago), CPU s of 3600 wall, peak MiB, exit code, tags
    ("old.0", "ann", 10, 3600.0, 100, 0, FIT),
    ("10.0", "ann", 2, 3600.0, 512, 0, FIT),
    ("10.1", "ann", 2, 3600.0, 768, 0, FIT),
    ("10.2", "ann", 2, 3600.0, 1024, 0, FIT),
    ("20_1", "ben", 1, 3600.0, 300, 0, ARRAY),
    ("20_2", "ben", 1, 3600.0, 400, 1, ARRAY),
    ("20_3", "ben", 1, 3600.0, 500, 0, ARRAY),
]


def write_job(sink, job_id, user, days, cpu, peak_mib, exit_code, tags, ended=True):
    start = NOW - days * DAY
    job = {"job": job_id, "host": "wn1", "user": user, "method": "procfs", "start_time": start,
           "tags": tags, "command": ["work"], "interval": 1200.0, "scheduler": "test"}
    sink.open(job)
    for k in range(3):
        sink.write({"time": int((start + 1200 * (k + 1)) * 1e9), "elapsed_seconds": 1200.0 * k,
                    "method": "procfs", "cpu_user_seconds": cpu * (k + 1) / 3,
                    "mem_resident_bytes": peak_mib * MiB, "procs": 1})
    if ended:
        sink.close({"job": job_id, "host": "wn1", "method": "procfs", "start_time": start,
                    "end_time": start + 3600, "exit_code": exit_code, "signal": None,
                    "wall_seconds": 3600.0, "cpu_user_seconds": cpu, "cpu_system_seconds": 0.0,
                    "rss_peak_bytes": peak_mib * MiB, "samples": 3, "tags": tags})


def fill(sink_for):
    for args in JOBS:
        write_job(sink_for(), *args)
    write_job(sink_for(), "30.0", "ben", 0.01, 0.0, 10, None, {}, ended=False)   # running


@pytest.fixture(params=["local", "influxdb"])
def filled(request, tmp_path):
    """(store, `jobmon report` arguments, env) for a store holding JOBS."""
    if request.param == "local":
        path = str(tmp_path / "s.db")
        fill(lambda: LocalStore(path))
        yield LocalStore(path), [f"--store={path}"], None
        return
    site = request.getfixturevalue("site")
    site.prepare()
    fill(lambda: SpoolSink(site.spool))
    site.ship()
    yield site.store(), [], site.env


def report(args, env, *more):
    r = jobmon("report", *args, "--json", *more, env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_summaries_over_a_range_by_user(filled):
    store, _args, _env = filled
    got = store.summaries(NOW - 7 * DAY, NOW)
    assert [r["job"] for r in got] == ["10.0", "10.1", "10.2", "20_1", "20_2", "20_3", "30.0"]
    assert got[0]["summary"]["rss_peak_bytes"] == 512 * MiB and got[0]["tags"] == FIT
    assert got[-1]["summary"] is None                            # still running
    assert [r["job"] for r in store.summaries(None, NOW - 5 * DAY)] == ["old.0"]
    assert [r["job"] for r in store.summaries(NOW - 7 * DAY, None, user="ann")] == \
        ["10.0", "10.1", "10.2"]
    assert store.summaries(NOW + DAY, None) == []
    if isinstance(store, InfluxStore):   # streamed: 7 rows in chunks of 3, then of 7
        for rows in (3, 7):
            store.CHUNK_ROWS = rows
            assert [r["job"] for r in store.summaries(NOW - 7 * DAY, NOW)] == \
                [r["job"] for r in got]
    # a caller may name the summary fields it needs: those come back
    [one] = store.summaries(NOW - 1.5 * DAY, None, user="ben", fields=("rss_peak_bytes",))[:1]
    assert one["summary"]["rss_peak_bytes"] == 300 * MiB and one["tags"] == ARRAY


def test_a_server_row_limit_cuts_no_read_short(tmp_path):
    """An InfluxDB 1.x with max-row-limit (10,000 by default in early 1.x releases) cuts
    every answer at that many rows and says only "partial": summaries, a job's samples and
    its breakdowns are streamed (chunked), which the limit does not apply to."""
    srv = Influx()
    with open(srv.conf) as f:
        conf = f.read().replace("max-body-size = 0", "max-body-size = 0\n  max-row-limit = 2")
    with open(srv.conf, "w") as f:
        f.write(conf)
    srv.start()
    site = Site(srv, tmp_path, "row_limit")
    try:
        site.prepare()
        fill(lambda: SpoolSink(site.spool))
        site.ship()
        store = InfluxStore(srv.url, site.db)
        assert len(store.rows('SELECT * FROM "jobmon_job" WHERE time >= 0')) == 2
        assert [r["job"] for r in store.summaries(NOW - 7 * DAY, NOW)] == \
            ["10.0", "10.1", "10.2", "20_1", "20_2", "20_3", "30.0"]
        [one] = store.records(JobRef("10.0", ["10.0"], [], None))
        assert len(store.samples(one)) == 3
    finally:
        site.close()
        srv.close()


def test_report_command_groups_and_rightsizes(filled):
    _store, args, env = filled
    m = report(args, env, "--since=7d")
    assert (m["jobs"], m["running"], m["by"]) == (6, 1, "user")
    ann, ben = sorted(m["groups"], key=lambda g: g["key"])
    # ann: 2 cores + 2 GiB each for 1 h, 1 core busy: 50 % CPU; idle 1 core + >= 1 GiB:
    # 0 whole units (memory-limited); ben: 1 core + 1 GiB, all busy: 100 %
    assert (ann["key"], ann["jobs"], ann["goodput"]) == ("ann", 3, 3)
    assert ann["cpu_efficiency_percent"]["p50"] == pytest.approx(50.0)
    assert ann["mem_efficiency_percent"]["p50"] == pytest.approx(768 / 2048 * 100)
    assert ann["idle_core_hours"] == pytest.approx(3.0)
    assert (ben["jobs"], ben["goodput"], ben["badput"]) == (3, 2, 1)
    batches = {(b["kind"], b["name"]): b for b in m["batches"]}
    fit = batches[("batch", "fit")]
    # 1024 MiB + 10 % = 1126.4 MiB, exactly 1.1 GiB (0.1 GiB steps from 1 GiB)
    assert fit["tasks"] == 3 and fit["memory_bytes"] == int(1.1 * (1 << 30))
    assert fit["advice"][0] == "request 1.1 GiB: covers 100 % of the tasks' peaks " \
                               "(requested 2 GiB)"
    assert batches[("array", "20")]["cores"] == 1
    by_acct = report(args, env, "--since=7d", "--by=account")
    assert {g["key"]: g["jobs"] for g in by_acct["groups"]} == {"physics": 3, "(none)": 3}
    by_part = report(args, env, "--since=7d", "--by=partition")
    assert {g["key"]: g["jobs"] for g in by_part["groups"]} == {"gpu": 3, "(none)": 3}
    assert report(args, env, "--since=7d", "--user=ben")["jobs"] == 3
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(NOW - 1.5 * DAY))
    assert report(args, env, "--since=30d", f"--until={iso}")["jobs"] == 4   # old.0, 10.*


def test_csv_and_terminal_forms(filled):
    _store, args, env = filled
    r = jobmon("report", *args, "--since=7d", "--csv", env=env)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("by,key,jobs,goodput,badput")
    assert [x.split(",")[1:3] for x in lines[1:]] == [["ann", "3"], ["ben", "3"], ["all", "6"]] \
        or [x.split(",")[1:3] for x in lines[1:]] == [["ben", "3"], ["ann", "3"], ["all", "6"]]
    r = jobmon("report", *args, "--since=7d", env=dict(env or {}, COLUMNS="80",
                                                        PATH="/usr/bin:/bin"))
    assert r.returncode == 0, r.stderr
    assert "6 job runs" in r.stdout and "1 still running" in r.stdout
    assert "request 1.1 GiB: covers 100 % of the tasks' peaks" in r.stdout
    assert max(len(x) for x in r.stdout.splitlines()) <= 80


def test_bad_arguments_say_what_is_wrong(tmp_path):
    path = str(tmp_path / "s.db")
    fill(lambda: LocalStore(path))
    for more, text in ((["--since=yesterday"], "neither a duration"),
                       (["--by=host"], "one of user, group"),
                       (["--since=1d", "--until=2d"], "is not after")):
        r = jobmon("report", f"--store={path}", *more)
        assert r.returncode == 2 and text in r.stderr, (more, r.stderr)


def test_long_job_ids_are_never_cut_at_80_columns(tmp_path):
    path = str(tmp_path / "s.db")
    long_id = "submit-node.example.org#1234567.0#1700000000-x"
    write_job(LocalStore(path), long_id, "a-user-with-a-long-name", 1, 0.0, 10, 0,
              {"RequestCpus": "16", "RequestMemory": "65536"})
    r = jobmon("report", f"--store={path}", env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert long_id in r.stdout                      # in the top wasters, whole
    assert max(len(x) for x in r.stdout.splitlines()) <= 80


def test_real_jobs_in_the_embedded_store(tmp_path):
    path = str(tmp_path / "s.db")
    code = "import sys; x = bytearray(int(sys.argv[1]) << 20); sys.exit(int(sys.argv[2]))"
    for task, mib, status in ((1, 40, 0), (2, 60, 0), (3, 80, 3)):
        r = jobmon_run([f"--job-id=900_{task}", "--interval=0.1", "--tag=request_cpus=1",
                        "--tag=request_memory=1GiB"],
                       ["python3", "-c", code, str(mib), str(status)], store=path)
        assert r.returncode == status, r.stderr
    m = report([f"--store={path}"], None)
    assert (m["jobs"], m["total"]["goodput"], m["total"]["badput"]) == (3, 2, 1)
    [b] = m["batches"]
    assert (b["kind"], b["name"], b["tasks"]) == ("array", "900", 3)
    assert b["mem_requested_bytes"] == 1 << 30
    # the largest task held its 80 MiB: the suggestion covers it with room to spare
    assert 80 * MiB < b["peak_memory_bytes"]["max"] <= b["memory_bytes"] < (1 << 30)
    assert b["memory_covers_percent"] == 100.0


@needs_test_user
def test_real_jobs_of_two_users_through_the_shipper(site):
    site.prepare()
    site.jobmon("run", "--interval=0.1", "--job-id=mine", "--", "sleep", "0.3")
    site.jobmon("run", "--interval=0.1", "--job-id=theirs", "--tag=account=atlas", "--",
                "sleep", "0.3", user=TEST_USER)
    site.ship()
    m = report([], site.env)
    assert sorted(g["key"] for g in m["groups"]) == sorted(["root", TEST_USER])
    m = report([], site.env, f"--user={TEST_USER}", "--by=account")
    assert m["jobs"] == 1 and m["groups"][0]["key"] == "atlas"
    assert m["total"]["goodput"] == 1
