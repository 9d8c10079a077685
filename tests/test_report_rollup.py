"""Hourly rollups (jobmon.report.rollup): a report merged from stored hours and hours read
live is the report of all the records at once -- groups of every dimension, distributions,
top wasters, suspects, right-sizing -- in the embedded store (which keeps the hours it
read) and in a real InfluxDB 1.6.7 (rolled up by `jobmon rollup`), written through the real
writers; a report never holds more than an hour of records; an hour whose runs were still
running is made again."""
import json
import random
import time

import pytest

from helpers import jobmon
from jobmon import config
from jobmon.report import aggregate, rightsize, rollup
from jobmon.report.job_efficiency import INPUTS
from jobmon.sinks.spool import SpoolSink
from jobmon.stores.influx import InfluxStore
from jobmon.stores.local import LocalStore

# the write and read path also as configured for InfluxDB 3 (conftest: site_flavour)
SITE_FLAVOURS = ("1.x", "3.x")

HOUR, MiB = 3600, 1 << 20
T0 = (int(time.time()) // HOUR) * HOUR - 40 * HOUR    # whole hours, past (and shippable)
LIMITS = dict(aggregate.DEFAULTS, top=5)


def varied(n=240, seed=3, t0=T0, span=30 * HOUR):
    """(job, summary or None) of n job records over `span` (30 hours) from t0: 5 users, accounts, queues,
    Slurm arrays (one task run again hours later), HTCondor clusters, Slurm steps, a two-node
    run, jobs still running, idle and GPU jobs (wasters, suspects), equal wastes (ties)."""
    rnd = random.Random(seed)
    out = []
    for k in range(n):
        start = t0 + rnd.uniform(0, span - 5)
        user = f"u{k % 5}"
        cores = rnd.choice((1, 2, 4))
        tags = {"request_cpus": str(cores), "request_memory": f"{cores * 2}GiB",
                "account": rnd.choice(("phys", "chem", "")), "queue": rnd.choice(("a", "b"))}
        job = f"{k}"
        if k % 3 == 0:                                   # an array task
            job, tags["array_job_id"] = f"{900 + k % 4}_{k}", str(900 + k % 4)
        elif k % 7 == 0:                                 # an HTCondor cluster's proc
            job = f"{4000 + k % 2}.{k}"
        wall = rnd.choice((600.0, 3600.0, 7200.0))
        busy = 0.0 if k % 11 == 0 else rnd.uniform(0.05, 1.0) * cores
        summary = {"job": job, "end_time": start + wall, "exit_code": rnd.choice((0, 0, 1)),
                   "signal": None, "wall_seconds": wall, "cpu_user_seconds": busy * wall,
                   "cpu_system_seconds": 1.0, "rss_peak_bytes": rnd.randint(50, 4000) * MiB,
                   "samples": 60, "cpu_idle_samples": 40 if k % 11 == 0 else 0,
                   "mem_rising": int(k % 13 == 0)}
        if k % 17 == 0:
            summary.update(gpu_count=1, gpu_util_avg_percent=5.0, gpu_idle_samples=55)
            tags["request_gpus"] = "1"
        if k % 19 == 0:
            summary = None                               # still running
        out.append(({"job": job, "user": user, "host": f"wn{k % 3}", "start_time": start,
                     "tags": tags, "scheduler": "slurm", "method": "cgroup-v1",
                     "command": ["fit"], "interval": 10.0}, summary))
    again = dict(out[3][0], start_time=out[3][0]["start_time"] + 5 * HOUR, run=2)
    out[3] = (dict(out[3][0], run=1), out[3][1])         # task 903_3 run again, hours later
    out.append((again, dict(out[3][1] or {}, rss_peak_bytes=9000 * MiB)))
    two = dict(out[1][0], run=1, start_time=t0 + 2 * HOUR + 10)    # a two-node run
    out.append((two, dict(out[1][1] or out[2][1], job=two["job"])))
    out.append((dict(two, host="wn9", start_time=two["start_time"] + 2), out[-1][1]))
    step = dict(two, job=two["job"] + ".batch", tags=dict(two["tags"], parent_job=two["job"]))
    out.append((step, dict(out[-1][1], job=step["job"])))
    tie = dict(out[5][0], job="tie-b", start_time=out[5][0]["start_time"] + 1)
    out.append((tie, out[5][1] and dict(out[5][1], job="tie-b")))
    for k, (job, summary) in enumerate(out):
        if summary is not None and k % 23 == 4:     # the node's reader had its energy
            summary.update(energy_joules=3.6e6 * k / 100, co2e_grams=30.0 * k)
            if k % 46 == 4:                         # and its bound (the others: older)
                summary.update(energy_error_joules=3.6e4 * k / 100, co2e_error_grams=0.3 * k)
    # a job the scheduler confirmed as u1's (reconciled), and another user's record under
    # its id in the same hour: a claim, counted nowhere and listed apart
    own = dict(out[0][0], job="7777", user="u1", start_time=t0 + 6 * HOUR + 60, tags={})
    done = dict(out[0][1] or out[2][1], job="7777", reconciled=1, ownership="own",
                scheduler_user="u1")
    out += [(own, done), (dict(own, user="mallory", start_time=own["start_time"] + 30),
                          dict(done, reconciled=None, ownership=None, scheduler_user=None))]
    return out


def write(sink_for, jobs):
    for job, summary in jobs:
        sink = sink_for()
        sink.open(job)
        sink.write({"time": int((job["start_time"] + 1) * 1e9), "elapsed_seconds": 1.0,
                    "method": "cgroup-v1", "procs": 1, "cpu_user_seconds": 0.5})
        if summary is not None:
            sink.close(dict(summary, host=job["host"], start_time=job["start_time"],
                            tags=job["tags"]))


def direct(store, by, since, until):
    """The report of every record at once (what `jobmon report` did before rollups)."""
    records = store.summaries(since, until, fields=INPUTS)
    m = aggregate.aggregate(records, by, since, until, LIMITS)
    m["batches"] = rightsize.rightsize(aggregate.counted(records)[0], LIMITS, LIMITS["top"])
    return m


def same(got, want, where="model"):
    if isinstance(want, dict):
        assert set(got) == set(want), (where, set(got) ^ set(want))
        for k in want:
            same(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), (where, got, want)
        for k, (g, w) in enumerate(zip(got, want)):
            same(g, w, f"{where}[{k}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9), where
    else:
        assert got == want, where


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(t))


def check(store, since, until, expect_stored, save=False, claims=("mallory",)):
    for by in aggregate.GROUP_KEYS:
        report = rollup.Report(store, by, LIMITS, save=save).read(since, until)
        got = report.model(since, until, LIMITS["top"])
        assert (got.pop("hours")["stored"] > 0) == expect_stored, by
        want = direct(store, by, since, until)
        same(got, want)
    # what the rollups carry beside the runs: claims, unconfirmed runs, energy
    assert [c["user"] for c in want["claims"]] == list(claims) == \
        ["mallory"] * want["claim_count"]
    assert 0 < want["total"]["unconfirmed"] <= want["jobs"] - len(claims)
    assert want["total"]["energy_jobs"] > 0 and want["total"]["energy_kwh"] > 0
    # the runs' bounds add up as their energy does; runs without one are counted apart
    assert 0 < want["total"]["energy_error_kwh"] < want["total"]["energy_kwh"]
    assert 0 < want["total"]["co2e_error_kg"] < want["total"]["co2e_kg"]
    assert 0 < want["total"]["energy_unbounded_jobs"] < want["total"]["energy_jobs"]


def test_merged_hours_give_the_report_of_every_record_embedded(tmp_path):
    path = str(tmp_path / "s.db")
    write(lambda: LocalStore(path), varied())
    store = LocalStore(path)
    since, until = T0 - 1234.5, T0 + 31 * HOUR + 99     # partial hours at both ends
    check(store, since, until, expect_stored=False)      # read live
    rollup.Report(store, "user", LIMITS, save=True).read(since, until)    # the hours kept
    assert len(list(store.rollups(("run",), since, until))) == 31
    check(store, since, until, expect_stored=True)       # ... and merged
    check(store, since, until, expect_stored=True, save=True)   # running ones read again
    # a correction (jobmon reconcile's) drops the rollups of its run's hour and day
    [rec] = [r for r in store.summaries(since, until) if (r["job"], r["user"]) == ("7777", "u1")]
    store.correct([(rec, dict(rec["summary"], exit_code=9, outcome_reason="corrected"))])
    hour = int(rec["start_time"]) // HOUR * HOUR
    assert [t for t, *_ in store.rollups(("run",), hour, hour + HOUR)] == []
    assert len(list(store.rollups(("run",), since, until))) == 30
    check(store, since, until, expect_stored=True, save=True)
    assert len(list(store.rollups(("run",), since, until))) == 31


def test_merged_hours_give_the_report_of_every_record_influxdb(site, tmp_path):
    site.prepare()
    write(lambda: SpoolSink(site.spool), varied())
    site.ship()
    store = site.store()
    since, until = T0 - 1800, T0 + 31 * HOUR + 1800
    # the shipper writes every end point unconfirmed (only jobmon reconcile confirms one):
    # no claim here
    check(store, since, until, expect_stored=False, claims=())    # a reader writes nothing
    argv = ("rollup", f"--since={iso(T0 - HOUR)}", f"--until={iso(T0 + 31 * HOUR)}")
    assert "rolled up 32 hours (" in site.jobmon(*argv).stderr
    check(store, since, until, expect_stored=True, claims=())
    runs = {h: json.loads(t) for h, _p, _k, t in store.rollups(("run",), since, until)}
    stale = sum(rollup.stale(h, run) for h, run in runs.items())
    assert 0 < stale < 32     # runs still running; under a day old: made again ...
    assert f"rolled up {stale} hours (" in site.jobmon(*argv).stderr
    check(store, since, until, expect_stored=True, claims=())   # ... to the same report


def test_influxdb_gives_a_day_of_summaries_in_one_query_hour_by_hour(site):
    """A 1.x server's query costs every series of the shards it touches (a job is a series),
    whatever its time range in them: the rollups read a day in one query, not 24, and get
    each hour's records as summaries() of that hour gives them."""
    site.prepare()
    write(lambda: SpoolSink(site.spool), varied())
    site.ship()
    asked = []

    class Counting(InfluxStore):
        CHUNK_ROWS = 50           # the answer streamed in chunks: still one query a day

        def streamed(self, q, database=None):
            asked.append(q)
            return super().streamed(q, database)
    store = Counting.from_config(config.load(site.config))
    since, until = T0 - 1800, T0 + 31 * HOUR + 1800      # partial hours at both ends
    hours = list(store.summaries_by_hour(since, until, fields=INPUTS))
    reads = len(asked)
    assert [h for h, _r in hours] == list(range(T0 - HOUR, T0 + 32 * HOUR, HOUR))
    assert reads == int(until) // 86400 - int(since) // 86400 + 1    # the days touched
    assert sum(len(r) for _h, r in hours) == len(store.summaries(since, until)) > 200
    for h, records in hours:
        assert records == store.summaries(max(h, since), min(h + HOUR, until), fields=INPUTS)


def test_a_report_reads_one_hour_of_records_at_a_time(tmp_path):
    path = str(tmp_path / "s.db")
    jobs = varied(600, seed=5)
    write(lambda: LocalStore(path), jobs)

    class Counting(LocalStore):
        most = 0

        def summaries(self, *a, **kw):
            got = super().summaries(*a, **kw)
            Counting.most = max(Counting.most, len(got))
            return got
    per_hour = max(sum(int((j["start_time"] - T0) // HOUR) == h for j, _s in jobs)
                   for h in range(31))
    rollup.Report(Counting(path), "user", LIMITS).read(T0, T0 + 31 * HOUR)
    assert 0 < Counting.most <= per_hour < len(jobs) / 10


def test_an_hour_that_had_runs_running_is_read_again(tmp_path):
    """The embedded store's report keeps the hours it read; one that counted a run still
    running is read again, so the run's end is counted once it came."""
    path = str(tmp_path / "s.db")
    job = {"job": "long", "user": "u", "host": "wn1", "start_time": T0 + 60, "tags": {},
           "method": "procfs", "command": ["x"], "interval": 10.0, "scheduler": "local"}
    sink = LocalStore(path)
    sink.open(job)
    store = LocalStore(path)

    def report():
        return rollup.Report(store, "user", LIMITS, save=True).read(T0, T0 + HOUR).model(
            T0, T0 + HOUR, 5)
    assert (report()["jobs"], report()["running"]) == (0, 1)
    sink.close({"job": "long", "end_time": T0 + 600, "exit_code": 0, "wall_seconds": 540.0,
                "cpu_user_seconds": 1.0, "samples": 3})
    m = report()
    assert (m["jobs"], m["running"], m["hours"]) == (1, 0, {"stored": 0, "live": 1})
    assert report()["hours"] == {"stored": 1, "live": 0}
    total = aggregate._Group("all").state()
    unconfirmed = aggregate._Group("all")
    unconfirmed.unconfirmed = 1

    def run(running=0, built=T0 + 3 * 86400, v=rollup.VERSION, group=None):
        return {"v": v, "running": running, "built": built,
                "total": group.state() if group else total}
    assert not rollup.stale(T0, run())
    assert rollup.stale(T0, run(running=1, built=T0 + 9 * 86400))
    assert rollup.stale(T0, run(built=T0 + 2 * HOUR))                   # late points
    assert rollup.stale(T0, run(v=rollup.VERSION - 1))
    # a run the scheduler has not vouched for: until reconciliation gives up on it
    assert rollup.stale(T0, run(built=T0 + 2 * 86400, group=unconfirmed))
    assert not rollup.stale(T0, run(built=T0 + 3 * 86400, group=unconfirmed))


def test_a_long_rollup_text_goes_in_pieces_and_comes_back_whole(site):
    """InfluxDB 1.x keeps a string field to 64 KiB: a long part is written in pieces and
    read back whole; pieces left from a longer text before are not read."""
    store = site.store()
    big = json.dumps([["k%d" % i, i] for i in range(9000)])
    assert len(big) > 3 * InfluxStore.CHUNK

    def put(parts):
        site.influx.write(site.db, InfluxStore.rollup_lines(T0, parts).encode())
    put([("run", "-", big), ("by:user", "-", "[]")])
    got = {(p, k): t for _h, p, k, t in store.rollups(("run", "by:user"), T0, T0 + HOUR)}
    assert got == {("run", "-"): big, ("by:user", "-"): "[]"}
    put([("run", "-", "{}")])                   # made again, shorter
    assert [t for _h, _p, _k, t in store.rollups(("run",), T0, T0 + HOUR)] == ["{}"]


def test_top_is_at_most_what_a_rollup_keeps(tmp_path):
    path = str(tmp_path / "s.db")
    write(lambda: LocalStore(path), varied(5))
    r = jobmon("report", f"--store={path}", f"--top={aggregate.KEPT + 1}")
    assert r.returncode == 2 and f"give 1 to {aggregate.KEPT}" in r.stderr


def test_right_sizing_reads_the_tasks_of_the_largest_batches_only(tmp_path):
    """40 arrays of 5 tasks each (a tie) over 10 hours: the report of the top 3 reads the
    stored tasks of 3 batches, not of 40 -- and gives what reading every record gives."""
    path = str(tmp_path / "s.db")
    jobs = []
    for a in range(40):
        for t in range(5):
            start = T0 + (a % 10) * HOUR + t
            jobs.append(({"job": f"{700 + a}_{t}", "user": "u", "host": "wn1",
                          "start_time": start, "tags": {"array_job_id": str(700 + a)},
                          "scheduler": "slurm", "method": "procfs", "command": ["x"],
                          "interval": 10.0},
                         {"job": f"{700 + a}_{t}", "end_time": start + 60, "exit_code": 0,
                          "wall_seconds": 60.0, "cpu_user_seconds": 30.0, "samples": 6,
                          "rss_peak_bytes": (a + t) * MiB}))
    write(lambda: LocalStore(path), jobs)
    store = LocalStore(path)
    rollup.Report(store, "user", LIMITS, save=True).read(T0, T0 + 10 * HOUR)   # kept

    class Counting(LocalStore):
        batch_reads = 0

        def rollups(self, parts, *a, **kw):
            Counting.batch_reads += parts == ("batch",)
            return super().rollups(parts, *a, **kw)
    got = rollup.Report(Counting(path), "user", LIMITS).read(T0, T0 + 10 * HOUR).model(
        T0, T0 + 10 * HOUR, 3)
    assert Counting.batch_reads == 3
    want = rightsize.rightsize(store.summaries(T0, T0 + 10 * HOUR, fields=INPUTS), LIMITS, 3)
    same(got["batches"], want)
    assert [b["name"] for b in want] == ["700", "701", "702"]


@pytest.mark.parametrize("kind", ["local", "influxdb"])
def test_whole_days_are_read_from_one_rollup_each(kind, tmp_path, request):
    """A day all of whose hours are kept gets a rollup of its own (its hours merged):
    a report over days reads those, and still gives what every record gives."""
    day0 = (int(time.time()) // 86400 - 4) * 86400
    jobs = varied(600, seed=9, t0=day0, span=3 * 86400)
    since, until = day0 - 2 * HOUR, day0 + 3 * 86400 + 5 * HOUR
    if kind == "local":
        path = str(tmp_path / "s.db")
        write(lambda: LocalStore(path), jobs)
        store = LocalStore(path)
        rollup.Report(store, "user", LIMITS, save=True).read(since, until)
    else:
        site = request.getfixturevalue("site")
        site.prepare()
        write(lambda: SpoolSink(site.spool), jobs)
        site.ship()
        store = site.store()
        site.jobmon("rollup", f"--since={iso(since)}", f"--until={iso(until)}")
    days = [t for t, _p, _k, _t in store.rollups(("d:run",), since, until)]
    assert days == [day0, day0 + 86400, day0 + 2 * 86400]
    if kind == "local":     # the hours of the days gone: the report can only read the days
        store.db.execute("DELETE FROM rollups WHERE part NOT LIKE 'd:%' AND part != 'batch' "
                         "AND hour >= ? AND hour < ?", (day0, day0 + 3 * 86400))
    check(store, since, until, expect_stored=True,
          claims=("mallory",) if kind == "local" else ())


def test_a_scheduler_whose_accounting_fails_is_said_once_and_not_asked_again(tmp_path):
    """A report reads and settles an hour at a time: where the scheduler's accounting
    fails (here its sacct program exits 1 and says nothing), it says so once, not for each
    of the 30 hours, and the report counts the runs as stored (unconfirmed)."""
    import os
    path = str(tmp_path / "s.db")
    write(lambda: LocalStore(path), varied())
    site = tmp_path / "site.toml"
    site.write_text('[slurm]\naccounting = "sacct"\nsacct = "/bin/false"\n')
    env = dict(os.environ, JOBMON_CONFIG=str(site))
    r = jobmon("report", f"--store={path}", f"--since={iso(T0)}",
               f"--until={iso(T0 + 31 * HOUR)}", "--json", env=env)
    assert r.returncode == 0, r.stderr
    said = [x for x in r.stderr.splitlines() if "the scheduler's accounting" in x]
    assert len(said) == 1 and "outcomes as stored" in said[0], r.stderr
    m = json.loads(r.stdout)
    assert m["total"]["unconfirmed"] == m["jobs"] - 1 > 200     # all but u1's confirmed job
