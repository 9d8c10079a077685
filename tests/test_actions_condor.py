"""`jobmon act` on HTCondor jobs: idle jobs run through jobmon-condor-wrapper under the
starter's contract (tests/test_condor_wrapper.py: the starter's argv, environment, user,
scratch dir and ads), spooled and shipped to a real InfluxDB; the schedd is the real
htcondor2 bindings down to the call that would reach it (tests/schedd_recorder.py), so the
tests see the exact constraint and hold reason the schedd would get. One pass of the
actor at a time (jobmon.actions.actor.run_pass, as `jobmon act` runs it, with the
recorded schedd in place of the site's)."""
import json
import os
import re
import signal
import subprocess
import tempfile
import time

import pytest

from helpers import JOBMON, PYTHON, TEST_USER, needs_test_user, root, shared_tmpdir
from schedd_recorder import HOLD, RecordedSchedd, job_ad
from test_report_card import fake_mailer

pytestmark = [root, needs_test_user]

# the write and read path also as configured for InfluxDB 3 (conftest: site_flavour)
SITE_FLAVOURS = ("1.x", "3.x")

IDLE = 1.0          # [actions] idle_seconds and grace_seconds of these tests
JOBS = {"5.0": "vm#5.0#1795333940", "6.0": "vm#6.0#1795333941", "7.0": "vm#7.0#1795333942"}
SLEEP = "import time; time.sleep(300)"


@pytest.fixture(scope="module")
def pool(influx_server, tmp_path_factory):
    """Three idle HTCondor jobs of the test user on one execute node, their samples in
    InfluxDB; the site's config with [actions] on."""
    yield from idle_pool(influx_server, tmp_path_factory, "actions_condor")


@pytest.fixture(scope="module")
def acted(influx_server, tmp_path_factory):
    """A pool of its own (its own database), on which `jobmon act` has done exactly this,
    for the tests that count it -- whichever tests ran before: a dry run warned 6.0 and
    7.0 and then held 6.0; then 5.0, 6.0 and 7.0 were each warned and held for real."""
    for site in idle_pool(influx_server, tmp_path_factory, "actions_condor_counted"):
        with pytest.MonkeyPatch.context() as mp:
            schedd = schedd_of(site, mp, ["6.0", "7.0"])
            assert decisions(act(site, schedd, mode="dry-run")) == {
                "5.0": "gone", "6.0": "warn", "7.0": "warn"}
            later(site)
            schedd = schedd_of(site, mp, ["6.0"])    # 7.0 not running meanwhile
            assert decisions(act(site, schedd, mode="dry-run")) == {
                "5.0": "gone", "6.0": "act", "7.0": "gone"}
            schedd = schedd_of(site, mp, list(JOBS))
            assert decisions(act(site, schedd)) == dict.fromkeys(JOBS, "warn")
            later(site)
            assert decisions(act(site, schedd)) == dict.fromkeys(JOBS, "act")
            assert len(schedd.acts()) == 3
        yield site


def idle_pool(influx_server, tmp_path_factory, name):
    from influx_site import Site
    from test_condor_wrapper import Starter
    site = Site(influx_server, tmp_path_factory.mktemp("act"), name)
    site.prepare()
    mailer, mail = fake_mailer(shared_tmpdir("jobmon-act-mail-"))
    with open(site.config) as f:
        config = f.read()
    config += ("[condor]\ninterval = 0.2\nmin_interval = 0.05\n"
               f'[report]\nmailer = "{mailer} -t"\n'
               f'[actions]\nmode = "on"\nresources = "cores"\nidle_seconds = {IDLE}\n'
               f'grace_seconds = {IDLE}\nmax_per_hour = 100\n')
    starters, procs = {}, {}
    for job, gid in JOBS.items():
        cluster = job.split(".")[0]
        s = Starter(site=config, Owner=f'"{TEST_USER}"', ClusterId=cluster,
                    GlobalJobId=f'"{gid}"')
        s.prepare()
        s.env.pop("JOBMON_STORE")
        s.env["PATH"] = "/usr/bin:/bin"
        starters[job], procs[job] = s, s.popen_prepared([PYTHON, "-c", SLEEP])
    site.act_config = starters["5.0"].config
    site.mail = mail
    site.starters, site.procs = starters, procs
    try:
        wait_idle(site, list(JOBS))
        yield site
    finally:
        for p in procs.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        site.close()


def store(site):
    from jobmon import config
    from jobmon.stores.influx import InfluxStore
    return InfluxStore.from_config(config.load(site.act_config))


def wait_idle(site, jobs, seconds=IDLE, timeout=60):
    """Ship until each job's latest sample says its cores were idle `seconds` at a stretch."""
    deadline = time.monotonic() + timeout
    while True:
        site.ship()
        idle = {r["job"]: r["sample"].get("cpu_idle_seconds", 0)
                for r in store(site).latest(time.time() - 600)}
        if all(idle.get(j, 0) >= seconds for j in jobs):
            return idle
        assert time.monotonic() < deadline, idle
        time.sleep(0.3)


def later(site, seconds=IDLE):
    """Samples for `seconds` more, shipped (a grace period passing)."""
    time.sleep(seconds + 0.3)
    site.ship()


def act(site, schedd, dry_run=False, **policy):
    """One pass of the actor with the site's config ([actions] changed by `policy`)."""
    from jobmon import config
    from jobmon.actions import actor
    from jobmon.plugins.condor.actions import Condor
    from jobmon.actions.records import InfluxWriter
    cfg = config.load(site.act_config)
    cfg.values["actions"].update(policy)
    sched = Condor(schedd=schedd.schedd, allow_opt_out=cfg["actions"]["allow_opt_out"])
    return actor.run_pass(cfg, store(site), {"htcondor": sched}, InfluxWriter(cfg),
                          dry_run=dry_run)


def schedd_of(site, monkeypatch, jobs, **attrs):
    """A schedd holding `jobs` (running, the test user's unless attrs say otherwise)."""
    return RecordedSchedd(monkeypatch, [job_ad(site.starters[j].job_ad_text, **dict(
        {"Owner": TEST_USER, "ClusterId": int(j.split(".")[0]), "GlobalJobId": JOBS[j]},
        **attrs)) for j in jobs])


def decisions(done):
    return {d.job: d.kind for d in done.decisions}


def recorded(site, job):
    return [a for a in store(site).actions(jobs=[job])]


def test_a_job_whose_owner_the_schedd_does_not_confirm_is_never_acted_on(pool, monkeypatch):
    # the schedd says 5.0 is alice's (the record is the test user's: a claim), and knows
    # a 6.0 of another submission (another schedd's job of that number)
    schedd = RecordedSchedd(monkeypatch, [
        job_ad(pool.starters["5.0"].job_ad_text, Owner="alice", ClusterId=5,
               GlobalJobId=JOBS["5.0"]),
        job_ad(pool.starters["6.0"].job_ad_text, Owner=TEST_USER, ClusterId=6,
               GlobalJobId="ap02.example.org#6.0#1795000000")])
    for _ in range(2):        # warned, then past the grace: each time, nothing
        done = act(pool, schedd)
        assert decisions(done) == {"5.0": "unconfirmed", "6.0": "unconfirmed", "7.0": "gone"}
        later(pool)
    assert not schedd.acts() and not done.recorded
    assert recorded(pool, "5.0") == recorded(pool, "6.0") == []
    [query] = [c for c in schedd.calls if c[0] == "query"][:1]
    assert query[2] == ("(ClusterId == 5 && ProcId == 0) || (ClusterId == 6 && ProcId == 0)"
                        " || (ClusterId == 7 && ProcId == 0)")


def test_a_job_that_opted_out_is_left_alone_where_the_site_allows_it(pool, monkeypatch):
    schedd = schedd_of(pool, monkeypatch, ["7.0"], JobMonitorActions=False)
    done = act(pool, schedd)
    assert decisions(done)["7.0"] == "opted-out" and not done.recorded
    done = act(pool, schedd, dry_run=True, allow_opt_out=False)   # the site says no
    assert decisions(done)["7.0"] == "warn"
    assert [(a["action"], a["dry_run"]) for a in recorded(pool, "7.0")] == [("warn", 1)]


def test_a_dry_run_records_what_it_would_do_and_does_nothing(pool, monkeypatch):
    schedd = schedd_of(pool, monkeypatch, ["6.0"])
    mail_before = _read(pool.mail)
    done = act(pool, schedd, mode="dry-run")
    assert decisions(done)["6.0"] == "warn"
    later(pool)
    done = act(pool, schedd, mode="dry-run")
    assert decisions(done)["6.0"] == "act"
    assert not schedd.acts() and _read(pool.mail) == mail_before
    dry = recorded(pool, "6.0")
    assert [(a["action"], a["dry_run"], a["outcome"]) for a in dry] == [
        ("warn", 1, "dry run: not sent (mail)"), ("hold", 1, "dry run: not done")]
    # a dry run's warning is no warning: the live policy starts from the beginning
    assert decisions(act(pool, schedd, mode="on", max_per_hour=0))["6.0"] == "warn"


def test_an_idle_job_is_warned_then_held_through_the_schedd(pool, monkeypatch):
    schedd = schedd_of(pool, monkeypatch, ["5.0"])
    done = act(pool, schedd)
    assert decisions(done)["5.0"] == "warn", done.decisions
    mail = _read(pool.mail)
    assert f"To: {TEST_USER}" in mail and "your job 5.0" in mail and \
        "JobMonitorActions" in mail and "condor_release 5.0" in mail, mail
    assert decisions(act(pool, schedd))["5.0"] == "grace"     # no new samples yet
    later(pool)
    done = act(pool, schedd)
    assert decisions(done)["5.0"] == "act", done.decisions
    [call] = schedd.acts()
    _act, addr, constraint, action, reason, subcode = call
    assert action == HOLD and subcode == "0"
    assert constraint == (f'GlobalJobId == "{JOBS["5.0"]}" && Owner == "{TEST_USER}" && '
                          f"JobStatus == 2 && JobMonitorActions =!= false")
    assert re.fullmatch(r"jobmon: idle allocation: its cores at ~0 CPU for 0:0\d:\d\d, still "
                        r"0:00:0\d after the warning; site policy: hold after 0:00:01 idle and "
                        r"a grace of 0:00:01", reason), reason
    # jobmon's next pass reads the hold back from the schedd: this job, not running
    [after] = [d for d in act(pool, schedd).decisions if d.job == "5.0"]
    assert (after.kind, after.why) == ("gone", "the scheduler says it does not run"), after
    assert after.live.act_id == JOBS["5.0"] and after.live.user == TEST_USER
    assert len(schedd.acts()) == 1
    rows = recorded(pool, "5.0")
    live = [(a["action"], a["outcome"]) for a in rows if not a["dry_run"]]
    assert live == [("warn", f"mailed to {TEST_USER}"), ("hold", f"done: held {JOBS['5.0']}")]
    hold = [a for a in rows if a["action"] == "hold"][0]
    assert hold["user"] == hold["scheduler_user"] == TEST_USER and hold["reason"] == reason
    assert hold["scheduler_job"] == JOBS["5.0"] and hold["actor"].startswith("root@")
    assert hold["warned_at"] and hold["idle_seconds"] >= 2 * IDLE - 0.5
    # the schedd's hold, at the starter: the soft kill to the wrapper, forwarded to the job
    p = pool.procs["5.0"]
    status = pool.starters["5.0"].hard_kill(p, vacate=10)
    assert status == -signal.SIGTERM, status
    pool.ship()
    r = pool.jobmon("query", "5.0", "--no-scheduler", "--json")
    doc = json.loads(r.stdout)
    assert [a["action"] for a in doc["actions"] if not a["dry_run"]] == ["warn", "hold"]
    text = pool.jobmon("query", "5.0", "--no-scheduler").stdout
    assert "actions on this idle job" in text and "hold" in text and "jobmon: idle" in text
    # docs/actions.md's query: the last day's actions (not warnings, not dry runs) by user
    rows = pool.rows('SELECT count("outcome") FROM "jobmon_action" WHERE time > now() - 1d '
                     'AND "dry_run" = 0 AND "action" != \'warn\' GROUP BY "user"')
    assert [(r["user"], r["count"]) for r in rows] == [(TEST_USER, 1)], rows


def test_no_more_than_the_sites_number_of_actions_an_hour(pool, monkeypatch):
    from jobmon.actions.policy import acted_last_hour
    schedd = schedd_of(pool, monkeypatch, ["6.0", "7.0"])
    # both warned (none acted on: 0 an hour), then past their grace
    done = act(pool, schedd, max_per_hour=0)
    assert {d.job for d in done.decisions if d.kind in ("warn", "grace", "limited")} >= {
        "6.0", "7.0"} and not schedd.acts(), done.decisions
    later(pool)
    before = acted_last_hour(store(pool).actions(since=time.time() - 3600), time.time(), False)
    done = act(pool, schedd, max_per_hour=before + 1)
    kinds = sorted(decisions(done)[j] for j in ("6.0", "7.0"))
    assert kinds == ["act", "limited"], done.decisions
    assert len(schedd.acts()) == 1
    limited = [d for d in done.decisions if d.kind == "limited"][0]
    assert f"max_per_hour is {before + 1}" in limited.why
    assert not [a for a in recorded(pool, limited.job) if a["action"] == "hold"
                and not a["dry_run"]]
    done = act(pool, schedd, max_per_hour=before + 2)          # room for one more
    assert decisions(done)[limited.job] == "act" and len(schedd.acts()) == 2


def _read(path):
    return open(path).read() if os.path.exists(path) else ""


def test_jobmon_report_counts_the_warnings_and_actions_of_its_range(acted):
    """5.0, 6.0 and 7.0 each warned once and held once for real; a dry run warned 7.0,
    and warned and held 6.0 (the `acted` pool: nothing else was done there)."""
    pool = acted
    doc = json.loads(pool.jobmon("report", "--since", "1h", "--json").stdout)
    acted = doc["actions"]
    assert (acted["warnings"], acted["actions"], acted["failed"], acted["dry_runs"]) == \
        (3, 3, 0, 3), acted
    assert acted["groups"] == [{"key": TEST_USER, "warnings": 3, "actions": 3, "failed": 0}]
    assert [a["action"] for a in acted["latest"]][:1] == ["hold"]
    assert {a["job"] for a in acted["latest"]} == set(JOBS)
    later_range = json.loads(pool.jobmon("report", "--since", "now", "--json").stdout)
    assert later_range["actions"]["warnings"] == later_range["actions"]["actions"] == 0
    text = pool.jobmon("report", "--since", "1h").stdout
    assert "idle allocations: 3 warned, 3 held or cancelled; dry runs: 3" in text, text


def test_the_read_service_shows_a_user_the_actions_on_their_jobs_alone(acted):
    """`jobmon serve` (as its unprivileged user, the site's config) answers jobmon query and
    report of the test user with the actions on their jobs, and another user with none."""
    pool = acted
    from helpers import have_user
    from serve_site import Munged, Service
    if not have_user("jobmon-test2"):
        pytest.skip("needs user jobmon-test2 (tests/setup.sh)")
    munged = Munged()
    service = Service(pool, munged).start()
    try:
        r = service.jobmon("query", "5.0", "--json", "--no-scheduler", user=TEST_USER)
        assert [a["action"] for a in json.loads(r.stdout)["actions"]
                if not a["dry_run"]] == ["warn", "hold"]
        mine = json.loads(service.jobmon("report", "--since", "1h", "--json",
                                         user=TEST_USER).stdout)["actions"]
        theirs = json.loads(service.jobmon("report", "--since", "1h", "--json",
                                           user="jobmon-test2").stdout)["actions"]
        assert (mine["warnings"], mine["actions"], mine["dry_runs"]) == (3, 3, 3)
        assert (theirs["warnings"], theirs["actions"], theirs["dry_runs"]) == (0, 0, 0)
    finally:
        service.close()
        munged.close()


def test_jobmon_act_leaves_jobs_it_cannot_ask_about_alone_and_exits_75(pool):
    """[condor] schedd names a schedd no collector knows: every idle job is left alone and
    said so, and the exit status (75) asks the site's timer to try again."""
    env = dict(pool.env, JOBMON_CONFIG=pool.act_config, JOBMON_CONDOR_SCHEDD="ap09.example.org")
    r = pool.jobmon("act", check=False, env=env)
    assert r.returncode == 75, r.stdout + r.stderr
    assert re.search(r"^jobmon act: \d idle job\(s\): \d with their scheduler unavailable$",
                     r.stdout, re.M), r.stdout
    assert "  job 6.0: unavailable: schedd ap09.example.org: " in r.stdout, r.stdout
    assert r.stderr.startswith("jobmon act: schedd ap09.example.org: "), r.stderr
    r = pool.jobmon("act", "--dry-run", "--json", check=False, env=env)
    doc = json.loads(r.stdout)
    assert r.returncode == 75 and doc["mode"] == "dry-run" and not doc["recorded"], doc
    assert {d["decision"] for d in doc["decisions"]} == {"unavailable"}, doc


def test_the_embedded_store_two_schedds_jobs_of_one_id(monkeypatch):
    """Two schedds' idle 4711.0 of the test user, sampled into one embedded store (no
    InfluxDB): `jobmon act --store` through the local schedd, which knows its own 4711.0
    alone, warns and holds that one; `jobmon query` shows each schedd's job its own."""
    from jobmon import config
    from jobmon.actions import actor
    from jobmon.plugins.condor.actions import Condor
    from jobmon.actions.records import LocalWriter
    from jobmon.stores.ids import JobRef
    from jobmon.stores.local import LocalStore
    from test_condor_wrapper import Starter
    site = ('[condor]\ninterval = 0.2\nmin_interval = 0.05\nwarnings = "stderr"\n'
            '[actions]\nmode = "on"\n'
            f'resources = "cores"\nidle_seconds = {IDLE}\ngrace_seconds = {IDLE}\n'
            'warn = "none"\n')
    gids = {s: f"{s}.example.org#4711.0#1795333950" for s in ("ap01", "ap02")}
    starters, procs, errs = {}, {}, {}

    def stderr():      # the wrappers' own words
        out = {}
        for s, f in errs.items():
            f.seek(0)
            out[s] = f.read().decode(errors="replace")
        return out
    for s, gid in gids.items():
        starters[s] = Starter(site=site, Owner=f'"{TEST_USER}"', ClusterId="4711",
                              GlobalJobId=f'"{gid}"').prepare()
        starters[s].env.update(PATH="/usr/bin:/bin", JOBMON_STORE=starters["ap01"].store)
        errs[s] = tempfile.TemporaryFile()
        procs[s] = starters[s].popen_prepared([PYTHON, "-c", SLEEP], stderr=errs[s])
    path = starters["ap01"].store
    cfg = config.load(starters["ap01"].config)
    schedd = RecordedSchedd(monkeypatch, [job_ad(starters["ap01"].job_ad_text, ClusterId=4711,
                                                 GlobalJobId=gids["ap01"], Owner=TEST_USER)])
    try:
        kinds, deadline = [], time.monotonic() + 60
        while not os.path.exists(path):   # made by the jobs' user: never first by root
            assert time.monotonic() < deadline
            time.sleep(0.1)
        whys = []
        while kinds[-1:] != ["act"]:
            assert time.monotonic() < deadline, (kinds, whys, stderr(), [   # (what the pass saw)
                (r.get("schedd"), r.get("user"), r.get("tags", {}).get("GlobalJobId"))
                for r in LocalStore(path).records(JobRef("4711.0", ["4711.0"]))])
            st = LocalStore(path)
            done = actor.run_pass(cfg, st, {"htcondor": Condor(schedd=schedd.schedd)},
                                  LocalWriter(st))
            kinds += [d.kind for d in done.decisions]
            whys = [d.why for d in done.decisions]
            time.sleep(0.3)
        assert "warn" in kinds and set(kinds) <= {"busy", "warn", "grace", "act"}, kinds
        [call] = schedd.acts()
        assert f'GlobalJobId == "{gids["ap01"]}"' in call[2]
    finally:
        for s, p in procs.items():
            starters[s].hard_kill(p, vacate=10)

    def shown(job):
        r = subprocess.run([JOBMON, "query", job, "--json", "--no-scheduler",
                            f"--store={path}"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (r.stderr, stderr(), [
            (j.get("job"), j.get("user"), j.get("tags", {}).get("GlobalJobId"))
            for j in LocalStore(path).jobs(limit=50)])
        return [(a["action"], a["schedd"]) for a in json.loads(r.stdout)["actions"]]
    assert shown("ap01.example.org#4711.0") == [("warn", "ap01.example.org"),
                                                ("hold", "ap01.example.org")]
    assert shown("ap02.example.org#4711.0") == []
    assert stderr() == {"ap01": "", "ap02": ""}
