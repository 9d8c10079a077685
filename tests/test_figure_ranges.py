"""Every figure has a valid range (docs/metrics.md, "Valid ranges"). Forged figures --
±1e300, the infinities (1e999 parses as one), NaN, huge integers (1e18 as an integer
field) and plausible negatives -- through the real shipper into the real InfluxDB 1.6.7,
written straight into it (a point from before the ranges, or another writer), and into
the embedded store: the shipper sets their lines aside, counted against the user who
wrote them; `jobmon query`, `list`, `report`, `rollup`, `pilot` and `act` never let one
into a figure and never fail on one."""
import json
import math
import os
import subprocess
import time
import urllib.request

import pytest

from helpers import JOBMON, PYTHON, TEST_USER, as_user, needs_test_user

pytestmark = [pytest.mark.root, needs_test_user]

ACCOUNT = "phys"
# what a forged end-of-job record says (InfluxDB cannot store NaN or the infinities: the
# shipper's own tests carry those)
FORGED_SUMMARY = {"used_core_hours": -1e300, "wall_seconds": 1e300, "cpu_user_seconds": -5.0,
                  "cpu_system_seconds": 1e300, "provisioned_core_hours": 1e300,
                  "idle_core_hours": -3.0, "idle_canonical_core_hours": -1e300,
                  "rss_peak_bytes": 10**18, "procs_max": 10**18, "end_time": 1e300,
                  "energy_joules": 1e300, "cpu_efficiency_percent": -50.0,
                  "gpu_hours": 1e300, "idle_gpu_hours": -2.0, "co2e_grams": -1.0}
# what the report sums
SUMS = ("used_core_hours", "wall_hours", "provisioned_core_hours", "idle_core_hours",
        "idle_canonical_core_hours", "gpu_hours", "idle_gpu_hours", "energy_kwh", "co2e_kg")
# what a forged sample says: a stretch of idle cores no run can have had, GPUs unused
# for 31,700 years
FORGED_SAMPLE = {"cpu_idle_seconds": 1e300, "gpu_unused_seconds": 1e18, "elapsed_seconds": 5000.0,
                 "cpu_cores": 0.0, "gpu_count": 1}


def write(site, text):
    req = urllib.request.Request(f"{site.influx.url}/write?db={site.db}", data=text.encode())
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 204


def good_record(site):
    """A real job of the test user, account phys, run and shipped; its stored record."""
    site.prepare()
    site.run_small_job("good", TEST_USER, 8, tags=(f"account={ACCOUNT}",))
    site.ship()
    from jobmon.stores.influx import InfluxStore
    from jobmon.stores.ids import JobRef
    [rec] = InfluxStore(site.influx.url, site.db).records(JobRef("good", ["good"]))
    return rec


def forged_lines(rec, job, summary=None, sample=None, at=None):
    """Line protocol of a record like `rec`, with id `job`, the figures given, written the
    way jobmon writes them (jobmon.influx.schema), tagged as the shipper tags them."""
    from jobmon.influx import schema
    start = at or rec["start_time"] + 1
    info = dict(rec, job=job, start_time=start, scheduler="slurm" if sample else rec["scheduler"])
    tags = dict(schema.job_tags(info), user=TEST_USER, host=rec["host"])
    out = ""
    if summary is not None:
        s = dict(rec["summary"], **summary, start_time=start)
        from jobmon.ship.lines import unsettled    # as the shipper sends an end point
        out += unsettled(schema.job_line(info, s, 0, tags).encode()).decode()
    if sample is not None:
        out += schema.sample_line(tags, dict(sample, time=int(start * 1e9) + 10**9,
                                             method="procfs"))
    return out


def jm(site, *args, rc=0, **kw):
    r = site.jobmon(*args, check=False, **kw)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == rc, (args, r.returncode, r.stdout, r.stderr)
    return r


def numbers(doc):
    """Every number anywhere in a JSON document."""
    if isinstance(doc, dict):
        for v in doc.values():
            yield from numbers(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from numbers(v)
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield doc


def sane(doc):
    """No number of the document is one no run shows (the forged ones are all beyond)."""
    bad = [x for x in numbers(doc) if not math.isfinite(x) or abs(x) >= 1e17]
    assert not bad, bad[:5]


def by_account(site, *args):
    doc = json.loads(jm(site, "report", "--by=account", "--json", "--since=1d", *args).stdout)
    sane(doc)
    return doc


def test_the_readers_leave_forged_figures_out_influxdb(site):
    rec = good_record(site)
    before = by_account(site)
    write(site, forged_lines(rec, "forged", summary=FORGED_SUMMARY))
    # query and list: the record is there, without the forged figures
    doc = json.loads(jm(site, "query", "forged", "--json").stdout)
    sane(doc)
    text = json.dumps(doc)
    assert "forged" in text
    sane(json.loads(jm(site, "list", "--json").stdout)) if "--json" in jm(
        site, "list", "--help").stdout else jm(site, "list")
    # report: the forged record adds no core-hour to phys, nor to the total
    after = by_account(site)
    assert _core_hours(after) == _core_hours(before), (after, before)
    # rollup, then the report from the rollups
    since = time.strftime("%Y-%m-%dT%H:00:00", time.gmtime(rec["start_time"] - 3600))
    until = time.strftime("%Y-%m-%dT%H:00:00", time.gmtime(time.time() - 3600 + 3600))
    jm(site, "rollup", f"--since={since}", f"--until={until}")
    assert _core_hours(by_account(site)) == _core_hours(before)
    # pilot: the forged record as a pilot, and as a payload of the good one
    for pilot in ("forged", "good"):
        r = site.jobmon("pilot", pilot, "--json", check=False)
        assert "Traceback" not in r.stderr and r.returncode in (0, 1, 2), r.stderr
        if r.returncode == 0:
            sane(json.loads(r.stdout))


def _core_hours(doc):
    """The sums of phys and of all."""
    [phys] = [g for g in doc["groups"] if g["key"] == ACCOUNT]
    return {k: (phys[k], doc["total"][k]) for k in SUMS}


def test_act_finishes_its_pass_over_a_forged_sample_influxdb(site):
    rec = good_record(site)
    now = time.time()
    write(site, forged_lines(rec, "9999", sample=FORGED_SAMPLE, at=now - 5))
    # and a job idle for a plausible stretch: the pass decides on it all the same
    write(site, forged_lines(rec, "8888", sample=dict(FORGED_SAMPLE, cpu_idle_seconds=4000.0,
                                                      gpu_unused_seconds=4000.0), at=now - 4))
    env = dict(site.env, JOBMON_ACTIONS_MODE="dry-run", JOBMON_ACTIONS_RESOURCES="cores,gpus")
    r = subprocess.run([JOBMON, "act", "--json"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode in (0, 75), r.stdout + r.stderr
    doc = json.loads(r.stdout)
    decided = {d["job"] for d in doc["decisions"]}
    assert "8888" in decided and "9999" not in decided, doc


PLANT = r"""
import os, sys
spool, name, data = sys.argv[1], sys.argv[2], sys.stdin.buffer.read()
fd = os.open(os.path.join(spool, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
os.write(fd, data)
os.close(fd)
"""


def test_the_shipper_sets_out_of_range_lines_aside_against_their_writer(site):
    """A job user's spool file with lines no run can write, among good ones: those lines
    are set aside and counted against that user; the rest of the file arrives."""
    from jobmon.influx import schema
    site.prepare()
    t = time.time()
    job = {"job": "mixed", "host": "wn1", "user": TEST_USER, "method": "procfs",
           "start_time": t, "tags": {}, "command": ["x"], "interval": 1.0,
           "scheduler": "slurm", "run": None}
    tags = schema.job_tags(job)
    good = [schema.job_line(job, tags=tags)] + [
        schema.sample_line(tags, {"time": int((t + i) * 1e9), "elapsed_seconds": float(i),
                                  "method": "procfs", "cpu_user_seconds": 0.5 * i,
                                  "cpu_cores": 0.5, "procs": 2, "cpu_idle_seconds": 0.0})
        for i in range(1, 4)]
    ns = int((t + 5) * 1e9)
    bad = [f"jobmon_sample,job=mixed,scheduler=slurm cpu_idle_seconds={v},elapsed_seconds=5,"
           f"cpu_cores=0 {ns + i}\n" for i, v in enumerate(["1e300", "-1e300", "1e999",
                                                             "-1e999", "-5", "1e18"])]
    bad += [f"jobmon_sample,job=mixed,scheduler=slurm procs=1000000000000000000i {ns + 10}\n",
            f"jobmon_sample,job=mixed,scheduler=slurm cpu_cores=-0.5 {ns + 11}\n",
            f"jobmon_sample,job=mixed,scheduler=slurm gpu_unused_seconds=1e18 {ns + 12}\n",
            f"jobmon_sample,job=mixed,scheduler=slurm mem_resident_bytes=-4096i {ns + 13}\n"]
    end = schema.job_line(job, {"used_core_hours": -1e300, "wall_seconds": 1e300}, 0, tags)
    # good and bad interleaved, the forged end-of-job record last
    data = good[0] + bad[0] + good[1] + "".join(bad[1:]) + good[2] + good[3] + end
    subprocess.run(as_user([PYTHON, "-c", PLANT, site.spool, f"{int(t)}.0.1.mixed.lp"]),
                   input=data.encode(), check=True)
    r = site.ship()
    samples = site.rows('SELECT * FROM "jobmon_sample" WHERE "job" = \'mixed\'')
    assert len(samples) == 3, samples                   # the good ones, none of the bad
    assert all(s["user"] == TEST_USER for s in samples)
    [point] = site.rows('SELECT * FROM "jobmon_job" WHERE "job" = \'mixed\'')
    assert point.get("used_core_hours") is None and point.get("wall_seconds") is None, point
    with open(os.path.join(site.state, "ship-state.json")) as f:
        state = json.load(f)
    assert state["counters"]["out_of_range_points"] == len(bad) + 1, state["counters"]
    assert state["counters"]["quarantined_files"] == 0
    assert state["losses"][TEST_USER]["out_of_range"]["points"] == len(bad) + 1, state
    assert r.stderr.count("set aside") == 1, r.stderr    # said once for the file


def test_the_readers_leave_forged_figures_out_embedded(tmp_path):
    """The same through the embedded store, whose JSON also holds NaN and the infinities."""
    import sqlite3
    store = str(tmp_path / "jobs.db")
    (tmp_path / "jobmon.toml").write_text("")   # the defaults: the embedded store
    env = dict(os.environ, JOBMON_STORE=store, JOBMON_CONFIG=str(tmp_path / "jobmon.toml"),
               JOBMON_ACTIONS_MODE="dry-run", JOBMON_ACTIONS_RESOURCES="cores,gpus")
    run = subprocess.run([JOBMON, "run", f"--store={store}", "--job-id=good", "--interval=0.1",
                          f"--tag=account={ACCOUNT}", "--", PYTHON, "-c",
                          "import time\nwhile time.process_time() < 0.3: pass"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr

    def jm(*args, rc=(0,)):
        r = subprocess.run([JOBMON, *args], env=env, capture_output=True, text=True, timeout=120)
        assert "Traceback" not in r.stderr, r.stderr
        assert r.returncode in rc, (args, r.returncode, r.stdout, r.stderr)
        return r

    def by_account():
        doc = json.loads(jm("report", f"--store={store}", "--by=account", "--json",
                            "--since=1d").stdout)
        sane(doc)
        return _core_hours(doc)

    before = by_account()
    db = sqlite3.connect(store)
    info, summary = db.execute("SELECT info, summary FROM runs WHERE job = 'good'").fetchone()
    info, summary = json.loads(info), json.loads(summary)
    now = time.time()
    for job, s, sample in (("forged", dict(summary, **FORGED_SUMMARY, job="forged"), None),
                           ("nan", dict(summary, job="nan", used_core_hours=math.nan,
                                        wall_seconds=math.inf, cpu_user_seconds=-math.inf,
                                        provisioned_core_hours=math.nan), None),
                           ("9999", None, dict(FORGED_SAMPLE, cpu_idle_seconds=math.inf,
                                               gpu_unused_seconds=math.nan)),
                           ("8888", None, dict(FORGED_SAMPLE, cpu_idle_seconds=4000.0)),
                           ("7777", None, dict(FORGED_SAMPLE, cpu_idle_seconds=4000.0,
                                               time="yesterday")),
                           ("6666", None, [1, 2])):
        i = dict(info, job=job, scheduler="slurm" if sample else info["scheduler"],
                 start_time=round(now - 10, 3))   # (as jobmon writes it)
        rid = db.execute("INSERT INTO runs (job, host, user, method, start_time, end_time, "
                         "info, summary) VALUES (?,?,?,?,?,?,?,?)",
                         (job, i["host"], i["user"], i["method"], i["start_time"], None,
                          json.dumps(i), json.dumps(s) if s else None)).lastrowid
        if sample:
            t = time.time_ns()
            data = dict({"time": t}, **sample, method="procfs") if isinstance(
                sample, dict) else sample           # (6666: not even an object)
            db.execute("INSERT INTO samples (run, time, data) VALUES (?,?,?)",
                       (rid, t, json.dumps(data)))
    db.commit()
    db.close()
    for job in ("forged", "nan"):
        sane(json.loads(jm("query", job, f"--store={store}", "--json").stdout))
    jm("list", f"--store={store}")
    assert by_account() == before
    jm("rollup", f"--store={store}", "--since=1d")
    assert by_account() == before
    r = jm("act", f"--store={store}", "--json", rc=(0, 75))
    doc = json.loads(r.stdout)
    decided = {d["job"] for d in doc["decisions"]}
    # 7777's sample is timed by its row; 6666's says nothing: not idle
    assert {"8888", "7777"} <= decided and not decided & {"9999", "6666"}, r.stdout
    # a pilot (what it held in its tags) whose payloads are the forged and the NaN records
    db = sqlite3.connect(store)
    pilot = dict(info, job="pilot1", start_time=info["start_time"] - 60,
                 tags=dict(info["tags"], alloc_cpus="4"))
    db.execute("INSERT INTO runs (job, host, user, method, start_time, info, summary) VALUES "
               "(?,?,?,?,?,?,?)", ("pilot1", pilot["host"], pilot["user"], pilot["method"],
                                   pilot["start_time"], json.dumps(pilot), json.dumps(dict(
                                       summary, job="pilot1", start_time=pilot["start_time"],
                                       end_time=now + 60, wall_seconds=now + 60 -
                                       pilot["start_time"]))))
    for rid, i in db.execute("SELECT id, info FROM runs WHERE job IN ('forged', 'nan')"
                             ).fetchall():
        i = json.loads(i)
        db.execute("UPDATE runs SET info = ? WHERE id = ?",
                   (json.dumps(dict(i, tags=dict(i["tags"], pilot="pilot1"))), rid))
    db.commit()
    db.close()
    sane(json.loads(jm("pilot", "pilot1", f"--store={store}", "--json",
                       f"--validated-at={pilot['start_time'] + 1}").stdout))


def test_the_dashboards_leave_forged_points_out(site):
    """The cluster and user dashboards' sums over job points, as Grafana 11.6 sends them,
    give on the database with a forged record what they give without it."""
    import grafana_model as gm
    rec = good_record(site)
    dashboards = gm.load_dashboards()
    to_ms = int(time.time() * 1000) + 60000
    from_ms = to_ms - 86400000

    def sums():
        out = {}
        for name, values in (("jobmon-cluster.json", {}), ("jobmon-user.json",
                                                           {"user": TEST_USER})):
            dash = dashboards[name]
            variables = dash["templating"]["list"]
            values = dict({v["name"]: gm.ALL for v in variables if v["type"] == "query"},
                          **values)
            for where, t in gm.queries(dash):
                q = t["query"]
                if "jobmon_job" not in q or "sum(" not in q and "mean(" not in q:
                    continue
                q = gm.substitute(q, variables, values, {}, from_ms, to_ms)
                out[where] = site.influx.query(q, site.db)["results"]
        return out

    before = sums()
    assert any("series" in r[0] for r in before.values()), before   # the good job is in
    write(site, forged_lines(rec, "forged", summary=FORGED_SUMMARY))
    assert sums() == before


def test_the_dashboards_bounds_are_the_metrics():
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))), "deploy", "grafana", "generator"))
    import dashlib
    from jobmon.metrics import bounds
    from jobmon.metrics.ranges import DEFAULTS
    of = bounds(DEFAULTS).of
    assert {k: v for k, v in dashlib.BOUNDS.items()} == {k: of[k][1] for k in dashlib.BOUNDS}


def test_the_read_service_leaves_forged_figures_out(site):
    """`jobmon query`, `list` and `report` through `jobmon serve`, as the user whose
    forged record it is: the service reads through the same stores."""
    from serve_site import Munged, Service
    rec = good_record(site)
    write(site, forged_lines(rec, "forged", summary=FORGED_SUMMARY))
    munged = Munged()
    service = Service(site, munged).start()
    try:
        for args in (("query", "forged", "--json", "--no-scheduler"),
                     ("report", "--by=account", "--json", "--since=1d")):
            r = service.jobmon(*args, user=TEST_USER)
            assert "Traceback" not in r.stderr, r.stderr
            sane(json.loads(r.stdout))
        assert "forged" in service.jobmon("list", "-n", "50", user=TEST_USER).stdout
        assert "Traceback" not in service.logged()
    finally:
        service.close()
        munged.close()
