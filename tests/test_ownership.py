"""A job belongs to whom the scheduler says. A job id is anybody's to type: user B ran
the HTCondor wrapper by hand with a copy of user A's job ad (a second run of A's 4711.0,
tags Owner=A and account=group_physics), or `jobmon run --job-id 4711.0 --tag
account=group_physics`, or the same under the id of A's Slurm job. `jobmon query 4711.0`
showed B's run as the job, and `jobmon report --by account` and the dashboards counted it
in A's account. Played here as two real users, through the real shipper into the real
InfluxDB 1.6.7 (and the embedded store), against HTCondor's history (the starter's
contract, the captured history made A's) and the real Slurm cluster's sacct: the scheduler
says the job is A's, so B's run is a claim -- marked in its stored record, listed apart by
`jobmon query`, counted nowhere by `jobmon report`, `jobmon pilot` or the dashboards."""
import json
import os
import shutil
import subprocess
import time

import pytest

import grafana_model as gm
from helpers import JOBMON, PYTHON, fixture, jobmon, needs_test_user, owned_by, shared_tmpdir
from test_condor_wrapper import FAST
from test_scheduler_ends import SpoolingStarter

# the write and read path also as configured for InfluxDB 3 (conftest: site_flavour)
SITE_FLAVOURS = ("1.x", "3.x")

pytestmark = [pytest.mark.root, needs_test_user]

A, B = "jobmon-test", "jobmon-test2"
GID = "ap01.example.org#4711.0#1760000000"      # the history's 4711.0 (made A's)
AD = {"ClusterId": "4711", "ProcId": "0", "GlobalJobId": f'"{GID}"', "Owner": f'"{A}"',
      "AcctGroup": '"group_physics"', "RequestCpus": "1", "CpusProvisioned": "1",
      "RequestMemory": "2048", "MemoryProvisioned": "2048"}


def busy(seconds):
    return [PYTHON, "-c", f"import time\nwhile time.process_time() < {seconds}: pass"]


def condor_run(site, history, user, seconds):
    """One run of 4711.0 through jobmon-condor-wrapper under the starter's contract, as
    `user`, with A's job ad, on a node spooling to the site's InfluxDB."""
    with open(site.config) as f:
        st = SpoolingStarter(site=f.read() + FAST + f'history = "{history}"\n', user=user,
                             **AD)
    st.prepare()
    p = st.popen_prepared(busy(seconds), stdin=subprocess.DEVNULL)
    _out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    return st


def points(site):
    """{user: 4711.0's job point of that user}."""
    rows = site.rows('SELECT * FROM "jobmon_job" WHERE "job" = \'4711.0\'')
    return {r["user"]: r for r in rows}


def reconcile(env, rc=0):
    r = jobmon("reconcile", "--json", env=env, timeout=120)
    assert r.returncode == rc, r.stdout + r.stderr
    return json.loads(r.stdout)


def query(env, *args, rc=0):
    r = jobmon("query", "4711.0", *args, env=env)
    assert r.returncode == rc, r.stderr
    return r


def by_account(env):
    r = jobmon("report", "--json", "--by=account", "--since=1d", env=env)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    return m, {g["key"]: g for g in m["groups"]}


def panel(site, title, **values):
    """What the cluster dashboard's panel shows over the last hour: {column: value}."""
    dash = gm.load_dashboards()["jobmon-cluster.json"]
    variables = dash["templating"]["list"]
    picked = dict(dict.fromkeys(("cluster", "account", "group", "user"), gm.ALL), **values)
    [p] = [p for p in gm.panels(dash) if p["title"] == title]
    now_ms = int(time.time() * 1000)
    out = {}
    for t in p["targets"]:
        q = gm.substitute(t["query"], variables, picked, {}, now_ms - 3600_000,
                          now_ms + 60_000)
        [res] = site.influx.query(q, site.db)["results"]
        for s in res.get("series", []):
            out[s["columns"][1]] = s["values"][0][1]
    return out


def check_the_job_is_As(site, env, claim_cpu):
    """After `jobmon reconcile`: B's run is a claim everywhere, A's run is the job."""
    got = points(site)
    assert (got[A]["ownership"], got[A]["scheduler_user"], got[A]["reconciled"]) == \
        ("own", A, 1)
    assert (got[B]["ownership"], got[B]["scheduler_user"], got[B]["reconciled"]) == \
        ("claim", A, 1)
    rep = json.loads(query(env, "--json").stdout)             # the job: A's run, not B's
    assert rep["job"]["user"] == A and rep["ownership"]["verdict"] == "own"
    [claim] = rep["claims"]
    assert claim["user"] == B and f"is {A}'s" in claim["why"]
    text = query(env).stdout
    assert "claims by other users" in text and B in text
    mine = json.loads(query(env, "--json", f"--user={B}").stdout)   # asked for by name
    assert mine["ownership"]["verdict"] == "claim" and mine["job"]["user"] == B
    assert mine["summary"]["cpu_user_seconds"] + mine["summary"]["cpu_system_seconds"] >= \
        claim_cpu
    m, groups = by_account(env)                          # the account counts A's run only
    assert groups["group_physics"]["jobs"] == 1 and m["jobs"] == 1
    assert m["claim_count"] == 1 and m["claims"][0]["user"] == B
    assert panel(site, "Goodput / badput (jobs)", account=["group_physics"]) == {"goodput": 1}


def test_a_copied_job_ad_run_by_another_user_is_a_claim(site):
    """B runs the wrapper by hand with a copy of A's job ad. While HTCondor's record cannot
    be read, both runs count, provisionally, marked unconfirmed; once it can, B's run is a
    claim: stored as such, listed apart by `jobmon query`, in no account's figures."""
    where = shared_tmpdir("jobmon-history-")
    history = os.path.join(where, "history")      # not there yet: HTCondor unreachable
    site.prepare()
    condor_run(site, history, A, 0.2)
    time.sleep(0.2)
    st = condor_run(site, history, B, 0.5)        # later: the latest run of 4711.0
    site.ship()
    env = dict(site.env, JOBMON_CONFIG=st.config)
    try:
        down = reconcile(env, rc=75)
        assert down["unavailable"] == 2 and down["claims"] == 0
        got = points(site)
        assert {u: (p["ownership"], p["reconciled"]) for u, p in got.items()} == \
            {A: ("unconfirmed", 0), B: ("unconfirmed", 0)}
        m, groups = by_account(env)       # counted, provisionally, and marked so
        assert groups["group_physics"]["jobs"] == 2 and m["total"]["unconfirmed"] == 2
        shutil.copy(owned_by(A, "htcondor", "history"), history)
        done = reconcile(env)
        assert (done["claims"], done["settled"]) == (1, 1)
        check_the_job_is_As(site, env, 0.5)
        assert reconcile(env)["records"] == 0             # settled once and for all
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_jobmon_run_under_anothers_job_id_and_account_is_a_claim(site):
    """B's `jobmon run --job-id 4711.0 --tag account=group_physics --tag Owner=A`: a run
    without a scheduler under the id of A's HTCondor job is a claim on it."""
    history = owned_by(A, "htcondor", "history")
    site.prepare()
    st = condor_run(site, history, A, 0.2)
    time.sleep(0.2)
    site.jobmon("run", "--job-id=4711.0", "--interval=0.2", "--tag=account=group_physics",
                f"--tag=Owner={A}", "--", *busy(0.5), user=B, cwd=shared_tmpdir())
    site.ship()
    env = dict(site.env, JOBMON_CONFIG=st.config)
    # before `jobmon reconcile` ran: the readers settle it themselves
    rep = json.loads(query(env, "--json").stdout)
    assert rep["job"]["user"] == A and [c["user"] for c in rep["claims"]] == [B]
    assert reconcile(env)["claims"] == 1
    got = points(site)
    assert got[B]["scheduler"] == "local"
    check_the_job_is_As(site, env, 0.5)


def test_the_embedded_store_sets_a_claim_apart_at_read_time(tmp_path):
    """On an embedded store nobody reconciled, B's run of A's job (a copied job ad) is a
    claim for `jobmon query` and `jobmon report` as soon as HTCondor says whose job it is."""
    from test_condor_wrapper import Starter
    history = owned_by(A, "htcondor", "history")
    site = FAST + f'history = "{history}"\n'
    mine, theirs = Starter(site=site, user=A, **AD), Starter(site=site, user=B, **AD)
    theirs.store = mine.store
    from jobmon.stores.local import LocalStore
    LocalStore(mine.store).db.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(mine.store + suffix):
            os.chmod(mine.store + suffix, 0o666)
    for st, seconds in ((mine, 0.2), (theirs, 0.5)):
        st.prepare()
        st.env["JOBMON_STORE"] = mine.store
        p = st.popen_prepared(busy(seconds), stdin=subprocess.DEVNULL)
        assert p.wait(timeout=60) == 0
        time.sleep(0.2)
    env = dict(os.environ, JOBMON_CONFIG=mine.config, JOBMON_STORE=mine.store)
    rep = json.loads(query(env, "--json").stdout)
    assert rep["job"]["user"] == A and [c["user"] for c in rep["claims"]] == [B]
    m, groups = by_account(env)
    assert groups["group_physics"]["jobs"] == 1 and m["claim_count"] == 1


@pytest.mark.slow
def test_jobmon_run_under_the_id_of_anothers_slurm_job_is_a_claim(jobmon_slurm):
    """A's real Slurm job, sampled by jobmon's Prolog; B's `jobmon run --job-id JID --tag
    account=...` on the same node: sacct says the job is A's, so B's run is a claim."""
    from slurm.common import SBIN_PATH
    site = jobmon_slurm
    c = site.cluster
    jid = c.submit("/usr/bin/python3 -c 'import time\nwhile time.process_time() < 0.2: "
                   "pass'\n", user=A)
    c.wait(jid)
    site.wait_record(jid)
    env = dict(site.env(), PATH=SBIN_PATH, SLURM_CONF=c.conf)
    cwd = shared_tmpdir()
    r = subprocess.run(["setpriv", f"--reuid={B}", f"--regid={B}", "--clear-groups", JOBMON,
                        "run", f"--job-id={jid}", "--tag=account=jobmon", "--", *busy(0.3)],
                       env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert site.ship().returncode == 0
    deadline = time.monotonic() + 60
    while True:      # slurmdbd lists the job a few seconds after it ended
        done = subprocess.run([JOBMON, "reconcile", "--json"], env=env, capture_output=True,
                              text=True, timeout=300)
        rows = site.influx.rows(f'SELECT * FROM "jobmon_job" WHERE "job" = \'{jid}\'', site.db)
        verdicts = {row["user"]: row.get("ownership") for row in rows}
        if verdicts == {A: "own", B: "claim"} or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert verdicts == {A: "own", B: "claim"}, done.stdout + done.stderr
    q = subprocess.run([JOBMON, "query", str(jid), "--json"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert q.returncode == 0, q.stderr
    rep = json.loads(q.stdout)
    assert rep["job"]["user"] == A and [x["user"] for x in rep["claims"]] == [B]


# --- two schedds' 4711.0 -------------------------------------------------------------------

SCHEDDS = {"ap01.example.org": (GID, 0.3),                      # the history's 4711.0
           "ap02.example.org": ("ap02.example.org#4711.0#1760000001", 1.0)}


def start_two_schedds(config_text, store=None, job=None):
    """A's 4711.0 of each schedd started at once on one node (two slots), running `job`
    (default: busy 0.3 s and 1.0 s); (their wrappers, their starters)."""
    from test_condor_wrapper import Starter
    procs, starters = [], []
    for schedd, (gid, seconds) in SCHEDDS.items():
        st = (Starter if store else SpoolingStarter)(
            site=config_text, user=A, **dict(AD, GlobalJobId=f'"{gid}"'))
        st.prepare()
        if store:
            st.env["JOBMON_STORE"] = store
        procs.append(st.popen_prepared(job or busy(seconds), stdin=subprocess.DEVNULL))
        starters.append(st)
    return procs, starters


def two_schedds_runs(config_text, store=None):
    """A's 4711.0 of each schedd, at once on one node, run to their end."""
    procs, starters = start_two_schedds(config_text, store)
    for p in procs:
        _out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    return starters[0]


def check_two_jobs(env):
    """`jobmon query 4711.0` asks which schedd; each schedd's job has its own figures."""
    r = query(env, rc=1)
    assert "2 schedds have a job '4711.0': ap01.example.org, ap02.example.org" in r.stderr
    assert "jobmon query ap02.example.org#4711.0" in r.stderr
    for schedd, (gid, seconds) in SCHEDDS.items():
        for asked in (f"{schedd}#4711.0", gid):
            r = jobmon("query", asked, "--json", "--no-scheduler", env=env)
            assert r.returncode == 0, r.stderr
            rep = json.loads(r.stdout)
            cpu = rep["summary"]["cpu_user_seconds"] + rep["summary"]["cpu_system_seconds"]
            assert rep["job"]["tags"]["schedd"] == schedd and len(rep["runs"]) == 1
            assert seconds - 0.05 <= cpu <= seconds + 0.3, (asked, cpu)
            assert all(s["cpu_user_seconds"] + s["cpu_system_seconds"] <= cpu + 0.01
                       for s in rep["samples"])      # none of the other job's samples
    r = jobmon("report", "--json", "--since=1d", env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["jobs"] == 2, r.stderr
    r = jobmon("list", env=dict(env, COLUMNS="200"))     # each as `jobmon query` takes it
    assert r.returncode == 0, r.stderr
    assert sorted(w for line in r.stdout.splitlines()[2:] for w in line.split()[:1]
                  if "4711" in w) == sorted(f"{s}#4711.0" for s in SCHEDDS)


def test_two_schedds_4711_0_are_two_jobs(site):
    """Two schedds' 4711.0 of one user, at once on one node: two series in InfluxDB, two
    jobs to `jobmon query` (which asks which) and `jobmon report`; HTCondor's record of one
    schedd's 4711.0 settles that job only."""
    history = owned_by(A, "htcondor", "history")       # ap01's 4711.0 only
    site.prepare()
    with open(site.config) as f:
        st = two_schedds_runs(f.read() + FAST + f'history = "{history}"\n')
    site.ship()
    env = dict(site.env, JOBMON_CONFIG=st.config)
    counts = site.rows('SELECT count("cpu_user_seconds") AS n FROM "jobmon_sample" '
                       'WHERE "job" = \'4711.0\' GROUP BY "schedd"')
    assert sorted(r["schedd"] for r in counts) == sorted(SCHEDDS)
    check_two_jobs(env)
    reconcile(env)
    got = {r["schedd"]: r for r in
           site.rows('SELECT * FROM "jobmon_job" WHERE "job" = \'4711.0\'')}
    assert (got["ap01.example.org"]["scheduler_state"],
            got["ap01.example.org"]["ownership"]) == ("completed", "own")
    assert got["ap02.example.org"]["reconciled"] == 0      # ap01's record is not its


def test_two_schedds_4711_0_in_the_embedded_store():
    where = shared_tmpdir("jobmon-schedds-")
    try:
        store = os.path.join(where, "s.db")
        st = two_schedds_runs(FAST, store)
        check_two_jobs(dict(os.environ, JOBMON_CONFIG=st.config, JOBMON_STORE=store))
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_jobmon_watch_asks_which_schedds_running_4711_0():
    """While both schedds' 4711.0 run: `jobmon watch 4711.0` asks which (it showed the
    latest started), `jobmon watch SCHEDD#4711.0` shows that one (it was 'not running')."""
    where = shared_tmpdir("jobmon-schedds-")
    procs = []
    try:
        store = os.path.join(where, "s.db")
        procs, _ = start_two_schedds(FAST, store, [PYTHON, "-c", "import time; time.sleep(6)"])
        args = ("--once", "--spool=none", f"--store={store}")
        deadline = time.monotonic() + 30
        while any(jobmon("watch", f"{s}#4711.0", *args).returncode for s in SCHEDDS):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
            time.sleep(0.3)
        r = jobmon("watch", "4711.0", *args)
        assert r.returncode == 1 and "2 schedds have a job '4711.0'" in r.stderr
        assert "jobmon watch ap02.example.org#4711.0" in r.stderr
    finally:
        for p in procs:
            p.communicate(timeout=60)
        shutil.rmtree(where, ignore_errors=True)
