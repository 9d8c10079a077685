"""Spool -> `jobmon ship` -> InfluxDB 1.6.7 (and VictoriaMetrics for the v2 API)."""
import json
import os
import pwd
import random
import signal
import subprocess
import time

import pytest

from helpers import JOBMON, REPO
from jobmon.influx.schema import MAX_LINE_BYTES
from jobmon.sinks.spool import SpoolSink
from servers import Influx

# the write and read path also as configured for InfluxDB 3 (conftest: site_flavour)
SITE_FLAVOURS = ("1.x", "3.x")


def spool_job(spool, job_id, n, start=None, tags=None, user=None):
    """A finished job of n samples written through the real spool writer (run by root for
    `user`'s job when given: the points then say whose job it is)."""
    start = start or time.time()
    job = {"job": job_id, "host": "h", "user": user, "method": "procfs", "start_time": start,
           "tags": tags or {}, "command": ["sleep", "1"], "interval": 1.0, "scheduler": "local"}
    sink = SpoolSink(spool)
    sink.open(job)
    t0 = int(start * 1e9)
    for k in range(n):
        sink.write({"time": t0 + (k + 1) * 10**9, "elapsed_seconds": k + 1.0, "method": "procfs",
                    "cpu_user_seconds": k * 0.5, "mem_resident_bytes": 1000 + k, "procs": 1})
    summary = {"job": job_id, "end_time": start + n, "exit_code": 0, "wall_seconds": float(n),
               "cpu_user_seconds": n * 0.5, "samples": n, "rss_peak_bytes": 1000 + n}
    sink.close(summary)
    return sink.path


def samples_per_job(site):
    rows = site.rows('SELECT count("elapsed_seconds") FROM jobmon_sample GROUP BY "job"')
    return {r["job"]: r["count"] for r in rows}


def test_run_ship_query_end_to_end(site, tmp_path):
    """`jobmon run` with an InfluxDB config spools; `jobmon ship` sends; `jobmon query`
    shows exactly the samples the job took."""
    site.prepare()
    out = tmp_path / "samples.jsonl"
    site.jobmon("run", "--interval=0.1", "--job-id=e2e 1", f"--out={out}", "--",
                "sh", "-c", "for i in 1 2 3 4 5 6; do sleep 0.1; done")
    assert [f for f in os.listdir(site.spool) if f.endswith(".lp")]
    site.ship()
    assert not [f for f in os.listdir(site.spool) if f.endswith(".lp")]  # acked -> deleted
    rep = json.loads(site.jobmon("query", "--json", "e2e 1").stdout)
    taken = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rep["samples"]) == len(taken) == rep["summary"]["samples"]
    for got, want in zip(rep["samples"], taken):
        assert got["time"] == want["time"]
        for k, v in want.items():
            assert got.get(k) == pytest.approx(v), k
    assert rep["job"]["status"] == "exit code 0"
    assert rep["job"]["command"][0] == "sh"
    listed = site.jobmon("list").stdout
    assert "e2e 1" in listed and "exit 0" in listed


def test_database_down_for_the_whole_job_then_started(influx_server, tmp_path, request):
    """Nothing is lost while the database is down: the follow-mode shipper retries with
    backoff and delivers every sample once it is back."""
    from influx_site import Site
    down = Influx()                     # configured, not started
    site = Site(influx_server, tmp_path, request.node.name)
    site.write_config(url=down.url, flush_seconds=0.2)
    site.prepare()
    site.jobmon("run", "--interval=0.05", "--job-id=outage", "--", "sleep", "1")
    r = site.ship("--timeout=1", check=False)
    assert r.returncode == 75
    st = json.loads(site.ship("--status", "--json").stdout)
    assert st["send_errors"] >= 1 and st["pending_points"] > 10 and st["shipped_points"] == 0
    follower = subprocess.Popen([JOBMON, "ship", "--follow"], env=site.env,
                                stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1)
        down.start()
        down.create_db(site.db)
        site.influx = down
        deadline = time.monotonic() + 30
        while [f for f in os.listdir(site.spool) if f.endswith(".lp")]:
            assert time.monotonic() < deadline, "spool not drained"
            time.sleep(0.1)
    finally:
        follower.send_signal(signal.SIGTERM)
        err = follower.communicate(timeout=10)[1]
        down.close()
        site.close()
    assert follower.returncode == 0, err
    assert "retrying in" in err


def test_database_down_then_started_query_returns_full_series(site):
    up = site.influx.url
    site.write_config(url="http://127.0.0.1:9")   # nothing listens there
    site.prepare()
    site.jobmon("run", "--interval=0.05", "--job-id=late", "--", "sleep", "0.6")
    assert site.ship("--timeout=0.3", check=False).returncode == 75
    site.write_config(url=up)
    site.ship()
    rep = json.loads(site.jobmon("query", "--json", "late").stdout)
    assert rep["summary"]["samples"] == len(rep["samples"]) >= 8
    assert [s["elapsed_seconds"] for s in rep["samples"]] == sorted(
        s["elapsed_seconds"] for s in rep["samples"])


def test_sigkill_mid_batch_20_times_loses_and_duplicates_nothing(site):
    site.write_config(batch_points=50)
    site.prepare()
    jobs = {f"k{n}": 1500 for n in range(100)}
    base = time.time() - 3600
    for n, (job, count) in enumerate(jobs.items()):
        spool_job(site.spool, job, count, start=base + n)
    state = os.path.join(site.state, "ship-state.json")

    def acknowledged():
        try:
            with open(state) as f:
                return json.load(f)["counters"]["shipped_points"]
        except (OSError, ValueError):
            return 0

    progress = []
    for _ in range(20):
        # kill each run just after the server acknowledged one of its batches, when the
        # next ones are in flight: however slow this machine is to start the shipper
        before = acknowledged()
        p = subprocess.Popen([JOBMON, "ship"], env=site.env, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while acknowledged() == before:
            assert p.poll() is None and time.monotonic() < deadline, "no batch acknowledged"
            time.sleep(0.002)
        time.sleep(random.uniform(0, 0.05))
        p.send_signal(signal.SIGKILL)
        assert p.wait() == -signal.SIGKILL
        st = json.loads(site.ship("--status", "--json").stdout)
        progress.append((st["shipped_points"], st["pending_points"]))
    assert progress[-1][1] > 0, f"killed too late to matter: {progress}"
    assert len({p[0] for p in progress}) == 20, f"kills did not land mid-run: {progress}"
    site.ship()
    assert samples_per_job(site) == jobs
    # no duplicate: every (job, time) once, and the series is the one written
    rows = site.rows("SELECT elapsed_seconds, mem_resident_bytes FROM jobmon_sample "
                     "WHERE job = 'k3' ORDER BY time")
    assert [r["mem_resident_bytes"] for r in rows] == [1000 + k for k in range(1500)]
    assert len(site.rows("SELECT * FROM jobmon_job")) == len(jobs)


def test_spool_limit_drops_oldest_and_counts_the_loss(site):
    site.write_config(url="http://127.0.0.1:9", max_bytes=150_000)
    site.prepare()
    base = time.time() - 3600
    paths = [spool_job(site.spool, f"j{n}", 200, start=base + n) for n in range(6)]
    sizes = [os.path.getsize(p) for p in paths]
    assert sum(sizes) > 150_000
    site.ship("--timeout=0.2", check=False)
    left = sorted(f for f in os.listdir(site.spool) if f.endswith(".lp"))
    dropped = [p for p in paths if os.path.basename(p) not in left]
    assert dropped == paths[:len(dropped)] and dropped, "oldest go first"
    st = json.loads(site.ship("--status", "--json").stdout)
    assert st["dropped_files"] == len(dropped)
    assert st["dropped_points"] == len(dropped) * 202     # samples + 2 job points each
    assert st["spool_bytes"] <= 150_000
    text = site.ship("--status").stdout
    assert f"{'dropped_points':21} {len(dropped) * 202}" in text
    site.write_config(url=site.influx.url, max_bytes=150_000)
    site.ship()
    assert samples_per_job(site) == {f"j{n}": 200 for n in range(len(dropped), 6)}


def test_spool_limit_drops_a_running_jobs_file_and_its_sampler_goes_on_in_a_new_one(site):
    """Nothing a job writes after its file was dropped is lost uncounted: the sampler
    notices (the file has no name any more) and starts a new file."""
    # room for the job's end-of-job reserve and ~12 samples: its file goes once
    site.write_config(url="http://127.0.0.1:9", max_bytes=MAX_LINE_BYTES + 6000)
    site.prepare()
    go = os.path.join(site.dir, "go")
    job = subprocess.Popen([JOBMON, "run", "--interval=0.05", "--job-id=dropped", "--", "sh",
                            "-c", f"while [ ! -e {go} ]; do sleep 0.05; done"], env=site.env)

    def job_lines():   # lines in the job's own file (not its reserve), or 0
        for name in os.listdir(site.spool):
            if name.endswith(".lp") and not name.endswith(".end.lp"):
                with open(os.path.join(site.spool, name), "rb") as f:
                    return f.read().count(b"\n")
        return 0

    def wait_for(lines):
        deadline = time.monotonic() + 60
        while job_lines() < lines:
            assert job.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)

    wait_for(15)       # over the limit: the next pass drops it
    site.ship("--timeout=0.1", check=False)
    dropped = json.loads(site.ship("--status", "--json").stdout)["dropped_points"]
    assert dropped >= 15, "the running job's file was not dropped"
    wait_for(11)       # its new file: the job's point and 10 samples
    open(go, "w").close()
    assert job.wait() == 0
    site.write_config()
    site.ship()
    rep = json.loads(site.jobmon("query", "--json", "dropped").stdout)
    assert rep["summary"]["exit_code"] == 0
    # dropped = the job's first point + the samples before the drop (the line written
    # just as the file was dropped may be counted there and also shipped)
    assert 0 <= (dropped - 1) + len(rep["samples"]) - rep["summary"]["samples"] <= 1
    assert len(rep["samples"]) >= 10
    # the report says what share of the run its stored data covers, and why
    lost = rep["summary"]["samples"] - len(rep["samples"])
    assert lost >= 13 and f"{lost} of its {rep['summary']['samples']} samples are not in " \
        "the store" in rep["verdict"]["data"]["reasons"], rep["verdict"]["data"]
    wall = rep["summary"]["wall_seconds"]
    assert rep["verdict"]["data"]["percent"] <= round(100 * (wall - lost * 0.05) / wall, 1)


def test_torn_last_line_is_skipped_not_shipped(site):
    site.prepare()
    path = spool_job(site.spool, "torn", 5)
    with open(path, "ab") as f:
        f.write(b"jobmon_sample,job=torn cpu_user_seconds=9,elapsed_seconds=6 1700000")
    r = site.ship()
    assert "torn line" in r.stderr and os.path.basename(path) in r.stderr
    assert samples_per_job(site) == {"torn": 5}
    st = json.loads(site.ship("--status", "--json").stdout)
    assert st["torn_lines"] == 1 and st["spool_files"] == 0


def test_malformed_file_is_quarantined_and_the_rest_ships(site):
    site.prepare()
    good = spool_job(site.spool, "good", 3)
    bad = spool_job(site.spool, "bad", 3)
    with open(bad, "ab") as f:
        f.write(b"jobmon_sample,job=bad x=1 1700000000000000000\nnot line protocol at all\n")
    r = site.ship()
    assert "quarantined spool file " + bad in r.stderr
    assert os.path.exists(os.path.join(site.spool, ".quarantine", os.path.basename(bad)))
    assert not os.path.exists(good)
    assert samples_per_job(site)["good"] == 3
    assert json.loads(site.ship("--status", "--json").stdout)["quarantined_files"] == 1


@pytest.mark.parametrize("batch_points", [5000, 2])
def test_a_point_the_server_refuses_quarantines_only_its_file(site, batch_points):
    """A point the server refuses (HTTP 400) is the file's fault, not the batch's -- also
    when it comes back while later batches are in flight."""
    site.write_config(batch_points=batch_points, senders=4)
    site.prepare()
    spool_job(site.spool, "first", 3)
    bad = spool_job(site.spool, "conflict", 2)
    with open(bad, "ab") as f:   # jobmon's grammar, but a series key beyond 64 KiB
        f.write(b"jobmon_sample,job=%s procs=1i %d\n" % (b"x" * 70000, time.time_ns()))
    spool_job(site.spool, "last", 4)
    r = site.ship()
    assert "refused by the server" in r.stderr and bad in r.stderr
    assert "max key length exceeded" in r.stderr     # the server's reason, not cut off
    got = samples_per_job(site)   # 1.x keeps the acceptable points of a refused batch
    assert got["first"] == 3 and got["last"] == 4
    assert os.path.exists(os.path.join(site.spool, ".quarantine", os.path.basename(bad)))


@pytest.mark.site_flavours("1.x")     # its own config: the v2 API to VictoriaMetrics
def test_v2_api_through_influxdb_client_into_victoria_metrics(victoria_server, site, tmp_path):
    token = tmp_path / "token"
    token.write_text("not-checked-by-victoria\n")
    os.chmod(token, 0o600)
    site.prepare()
    text = open(site.config).read().replace(
        f'url = "{site.influx.url}"',
        f'url = "{victoria_server.url}"\napi = "v2"\norg = "o"\nbucket = "b"\n'
        f'token_file = "{token}"')
    open(site.config, "w").write(text)
    spool_job(site.spool, "vm-job", 7, start=time.time() - 60)
    site.ship()
    series = victoria_server.export('{__name__="jobmon_sample_mem_resident_bytes",job="vm-job"}')
    assert len(series) == 1
    labels = series[0]["metric"]
    # the shipper names the spool file's owner: whoever wrote it here, this process
    assert labels["user"] == pwd.getpwuid(os.geteuid()).pw_name
    assert sorted(series[0]["values"]) == [1000 + k for k in range(7)]
    # a server that refuses: the failure is reported, nothing is deleted
    site.write_config(url="http://127.0.0.1:9")
    text = open(site.config).read().replace('url = "http://127.0.0.1:9"',
                                            'url = "http://127.0.0.1:9"\napi = "v2"\n'
                                            f'bucket = "b"\norg = "o"\ntoken_file = "{token}"')
    open(site.config, "w").write(text)
    spool_job(site.spool, "vm-job2", 2)
    assert site.ship("--timeout=0.2", check=False).returncode == 75
    assert [f for f in os.listdir(site.spool) if f.endswith(".lp")]


def test_samples_in_their_own_database_on_1x(influx_server, tmp_path):
    """The layout InfluxDB 3 needs (one retention per database), on a real 1.6.7: the
    databases made by deploy/create-influxdb.sh with their policies, the raw samples
    shipped to the samples' database and only there, the job summaries and the shipper's
    points to the other, and `jobmon query` reading each from its own."""
    from influx_site import Site
    site = Site(influx_server, tmp_path, "apart", samples_apart=True)
    try:
        subprocess.run(["sh", os.path.join(REPO, "deploy", "create-influxdb.sh"),
                        influx_server.url, site.db, "730d", site.samples_db, "30d"],
                       check=True, capture_output=True)
        policies = {db: [r["name"] for r in site.influx.rows("SHOW RETENTION POLICIES", db)
                         if r["default"]] for db in (site.db, site.samples_db)}
        assert policies == {site.db: ["jobmon_730d"], site.samples_db: ["jobmon_30d"]}
        site.prepare()
        site.jobmon("run", "--interval=0.1", "--job-id=apart", "--", "sleep", "0.5")
        site.ship()
        got = {db: {r["name"] for r in site.influx.rows("SHOW MEASUREMENTS", db)}
               for db in (site.db, site.samples_db)}
        assert got == {site.db: {"jobmon_job", "jobmon_shipper"},
                       site.samples_db: {"jobmon_sample"}}
        rep = json.loads(site.jobmon("query", "--json", "apart").stdout)
        assert len(rep["samples"]) == rep["summary"]["samples"] >= 4
    finally:
        site.close()


def test_follow_survives_a_spool_that_becomes_unreadable(influx_server, tmp_path, request):
    """The follow-mode shipper (its service user, not root) finds its spool unreadable for
    a while (its mode changed under it): it says so once, keeps retrying without a
    traceback, and once it can read it again ships what was written meanwhile and after."""
    from influx_site import Site
    site = Site(influx_server, tmp_path, request.node.name)
    site.use_service_user()
    site.write_config(poll_seconds=0.1, flush_seconds=0.1)
    site.prepare()
    follower = subprocess.Popen(site.as_service([JOBMON, "ship", "--follow"]), env=site.env,
                                stderr=subprocess.PIPE, text=True)

    def shipped(job, timeout=30):
        deadline = time.monotonic() + timeout
        while not site.rows(f"SELECT * FROM jobmon_job WHERE \"job\" = '{job}'"):
            assert follower.poll() is None, follower.communicate()[1]
            assert time.monotonic() < deadline, f"{job} not shipped"
            time.sleep(0.1)

    try:
        site.jobmon("run", "--interval=0.1", "--job-id=before", "--", "sleep", "0.3")
        shipped("before")
        # its read bits taken away (root, the test, does it): the shipper cannot list it;
        # jobs can still write their files into it
        os.chmod(site.spool, 0o3333)
        time.sleep(2)                    # many passes
        assert follower.poll() is None, follower.communicate()[1]
        site.jobmon("run", "--interval=0.1", "--job-id=while", "--", "sleep", "0.3")
        os.chmod(site.spool, 0o3733)
        site.jobmon("run", "--interval=0.1", "--job-id=after", "--", "sleep", "0.3")
        shipped("while")
        shipped("after")
    finally:
        follower.send_signal(signal.SIGTERM)
        err = follower.communicate(timeout=30)[1]
        os.chmod(site.spool, 0o3733)
        site.close()
    assert follower.returncode == 0, err
    assert "Traceback" not in err, err
    said = [line for line in err.splitlines() if "cannot read the spool" in line]
    assert len(said) == 1 and "Permission denied" in said[0], err
    assert err.count("can be read again: shipping") == 1, err
