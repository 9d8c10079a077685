"""deploy/grafana against values chosen by job users. Job ids, accounts and groups are
whatever a job says; the dashboards must show the selected job of the selected user and
nothing else, whatever those values hold.

Each panel and variable query is substituted exactly as Grafana 11.6 substitutes it
(grafana_model: the InfluxDB datasource's interpolation and the backend's macros) and run
against a real InfluxDB 1.6.7 filled by real jobs of two users; its answer must be the one
it gives on a database that holds only the points its selections name (copied with an
exact `"tag" = '...'` per selection). A query that widens (an injection), merges two
users' runs of one id, or breaks (HTTP 400) gives a different answer."""
import urllib.error
from concurrent.futures import ThreadPoolExecutor

import pytest

import grafana_model as gm
from helpers import needs_test_user, root
from jobmon.influx.lineprotocol import clean_tag
from jobmon.stores.influx import quote_string

DASHBOARDS = gm.load_dashboards()
VICTIM, ATTACKER = "jobmon-test", "jobmon-test2"
SHARED = "4711.0"               # one id, run by both users
INJECTION = "x' OR \"job\" =~ /.*/ OR \"job\" = 'y"
HOSTILE_IDS = [
    INJECTION,                  # ends the quoted '$job' and matches every job
    "1/ OR \"job\" =~ /.*",     # ends a /regex/ where Grafana leaves "numbers" unescaped
    "a'b", 'q"q', "back\\slash", "back\\", ".*", "4711x0", "(", "[a-z]+|.*", "$__interval",
    "${job}", "a b,c=d",
]
# Grafana's server replaces its macros after the variables, inside a value too: an id
# holding one cannot be shown (its panels fail, as on the reference), nor show another's
BACKEND_MACROS = ("$timeFilter", "$interval", "$__interval")
# two schedds' 7.0, both the victim's: the MiB each holds
SCHEDDS = {"ap01.example.org": 16, "ap02.example.org": 96}
HOSTILE_ACCOUNT = "x' OR \"account\" =~ /.*/ OR \"account\" = 'y"
HOSTILE_GROUP = "g|.*"

@pytest.fixture(scope="module")
def filled(influx_server, tmp_path_factory):
    import time
    from influx_site import Site
    site = Site(influx_server, tmp_path_factory.mktemp("hostile"), "grafana_hostile")
    site.prepare()
    t0 = time.time()
    at_once(site, (SHARED, VICTIM, 16, ("account=phys",)),
            (SHARED, ATTACKER, 96, ("account=phys",)))
    at_once(site, *[("7.0", VICTIM, mib, (f"schedd={s}",)) for s, mib in SCHEDDS.items()])
    site.run_small_job("9300", VICTIM, 8)
    for job_id in HOSTILE_IDS:
        site.run_small_job(job_id, ATTACKER, 8)
    site.run_small_job("acct-1", ATTACKER, 8, (f"account={HOSTILE_ACCOUNT}",
                                               f"group={HOSTILE_GROUP}"))
    site.run_small_job("acct-2", VICTIM, 8, ("account=phys", "group=cms"))
    site.ship(env=dict(site.env, JOBMON_SHIPPER_HOST="wn1", JOBMON_SHIPPER_CLUSTER="alpha"))
    refs = {}
    yield site, refs, int(t0 * 1000) - 60000, int(time.time() * 1000) + 5000
    for db in refs.values():
        site.influx.query(f'DROP DATABASE "{db}"')
    site.influx.query(f'DROP DATABASE "{site.db}"')
    site.close()


def at_once(site, *jobs):
    """run_small_job of each (job id, user, MiB, tags), all at once on one node."""
    with ThreadPoolExecutor(len(jobs)) as pool:
        for done in [pool.submit(site.run_small_job, *job) for job in jobs]:
            done.result()


def answer(site, db, q):
    """The server's answer to the query, or its error (an HTTP 400 is an answer too)."""
    try:
        res = site.influx.query(q, db)["results"]
    except urllib.error.HTTPError as e:
        return {"error": f"HTTP {e.code}: {e.read()[:200]!r}"}
    return [r.get("series") or r.get("error") for r in res]


def selections(query, values):
    """{tag: [values]} the query's variables select (All selects nothing)."""
    out = {}
    for m in gm.VARIABLE_REGEX.finditer(query):
        name = m.group(1) or m.group(2) or m.group(4)
        v = values.get(name)
        if v is None or v == gm.ALL:
            continue
        out[name] = [v] if isinstance(v, str) else list(v)
    return out


def reference(site, refs, chosen):
    """A database holding only the points whose tags equal what `chosen` selects."""
    key = tuple(sorted((k, tuple(v)) for k, v in chosen.items()))
    if key not in refs:
        db = f"{site.db}_ref{len(refs)}"
        site.influx.create_db(db)
        where = " AND ".join("(" + " OR ".join(f'"{tag}" = {quote_string(v)}' for v in vs) + ")"
                             for tag, vs in chosen.items()) or "time > 0"
        r = site.influx.query(f'SELECT * INTO "{db}"."autogen".:MEASUREMENT FROM '
                              f'"{site.db}"."autogen"./.*/ WHERE {where} GROUP BY *')
        assert "error" not in r["results"][0], r
        refs[key] = db
    return refs[key]


def check_dashboard(filled, name, values, skip=()):
    """Every query of the dashboard: the same answer as on its reference database.
    Returns the answers, for checks of what they hold."""
    site, refs, from_ms, to_ms = filled
    dash = DASHBOARDS[name]
    variables = dash["templating"]["list"]
    wrong, answers = [], {}
    for where, t in gm.queries(dash):
        if any(s in where for s in skip):
            continue
        q = gm.substitute(t["query"], variables, values, {}, from_ms, to_ms)
        got = answer(site, site.db, q)
        want = answer(site, reference(site, refs, selections(t["query"], values)), q)
        if got != want:
            wrong.append(f"{where}:\n  {q}\n  gave  {str(got)[:300]}\n  wants {str(want)[:300]}")
        answers[where] = got
    assert not wrong, f"{name} with {values}:\n" + "\n".join(wrong)
    return answers


def job_view(job_id, user):
    return {"job": clean_tag(job_id), "user": user, "cluster": gm.ALL, "account": gm.ALL,
            "group": gm.ALL, "host": gm.ALL, "schedd": gm.ALL, "run": gm.ALL}


def rows(answers, where):
    [series] = [a for w, a in answers.items() if w.startswith(where)]
    return [dict(zip(s["columns"], v), **(s.get("tags") or {}))
            for s in series[0] or [] for v in s["values"]]


@root
@needs_test_user
@pytest.mark.parametrize("job_id", HOSTILE_IDS, ids=range(len(HOSTILE_IDS)))
def test_the_job_view_shows_only_the_hostile_job_it_selects(filled, job_id):
    answers = check_dashboard(filled, "jobmon-job.json", job_view(job_id, ATTACKER))
    if any(m in job_id for m in BACKEND_MACROS):
        return
    [summary] = rows(answers, "panel 'Job summary'")
    assert summary["user"] == ATTACKER and summary["samples"] >= 1


@root
@needs_test_user
@pytest.mark.parametrize("user,mib", [(VICTIM, 16), (ATTACKER, 96)])
def test_two_users_runs_of_one_id_are_never_merged(filled, user, mib):
    """4711.0 of each user: its own memory, one run, never the other's."""
    answers = check_dashboard(filled, "jobmon-job.json", job_view(SHARED, user))
    [summary] = rows(answers, "panel 'Job summary'")
    assert summary["user"] == user
    assert mib << 20 < summary["rss_peak_bytes"] < (mib + 48) << 20


@root
@needs_test_user
def test_hostile_accounts_and_groups_select_only_themselves(filled):
    hostile = {"account": [clean_tag(HOSTILE_ACCOUNT)], "group": [clean_tag(HOSTILE_GROUP)]}
    for name, values in (
            ("jobmon-user.json", dict(hostile, user=ATTACKER, cluster=gm.ALL)),
            ("jobmon-cluster.json", dict(hostile, user=gm.ALL, cluster=gm.ALL)),
            ("jobmon-node.json", {"host": "wn1", "cluster": gm.ALL, "user": [ATTACKER]})):
        answers = check_dashboard(filled, name, values, skip=("Spool", "Points shipped",
                                                                 "Last successful"))
        assert any(a and a[0] for a in answers.values()), name


def test_grafanas_default_interpolation_would_let_a_number_like_id_out():
    """Why every variable has an explicit :regex: without it, Grafana 11.6 leaves a value
    that begins like a number as it is, inside a regex too."""
    job = {"name": "job", "multi": False, "includeAll": False}
    q = 'SELECT 1 FROM "m" WHERE "job" =~ /^$job$/'
    assert gm.replace_variables(q, [job], {"job": "abc.d"}, {}).endswith(r"/^abc\.d$/")
    hostile = gm.replace_variables(q, [job], {"job": '1/ OR "job" =~ /.*'}, {})
    assert hostile.endswith('/^1/ OR "job" =~ /.*$/')
    assert gm.replace_variables(q.replace("$job", "${job:regex}"), [job],
                                {"job": '1/ OR "job" =~ /.*'}, {}).endswith(
        r'/^1\/ OR "job" =~ \/\.\*$/')
    # a quoted '$job' is never escaped: the injection of the single-job view before
    quoted = gm.replace_variables(q.replace("=~ /^$job$/", "= '$job'"), [job],
                                  {"job": INJECTION}, {})
    assert quoted.endswith(f"'{INJECTION}'")


def peaks(answers, where, job=None, column="mean"):
    """{(user, schedd): the largest value} of each series (of the job) a panel draws."""
    out = {}
    for r in rows(answers, where):
        if job is None or r.get("job") == job:
            key = (r.get("user"), r.get("schedd"))
            out[key] = max(out.get(key, 0), r[column] or 0)
    return out


@root
@needs_test_user
def test_runs_at_once_on_one_node_are_never_merged(filled):
    """Two schedds' 7.0 (16 and 96 MiB) and two users' 4711.0 at once on one node: each a
    line of its own with its own memory in the node's stacks and on the job view, never
    one line of both averaged."""
    node = {"host": "wn1", "cluster": gm.ALL, "user": gm.ALL}
    skip = ("Spool", "Points shipped", "Last successful")
    answers = check_dashboard(filled, "jobmon-node.json", node, skip=skip)
    stack = "panel 'Resident memory by job (stacked)'"
    assert sorted(peaks(answers, stack, SHARED)) == sorted([(VICTIM, ""), (ATTACKER, "")])
    got = peaks(answers, stack, "7.0")
    assert sorted(got) == [(VICTIM, s) for s in SCHEDDS]
    assert got[(VICTIM, "ap01.example.org")] < 48 << 20 < got[(VICTIM, "ap02.example.org")]
    answers = check_dashboard(filled, "jobmon-job.json", job_view("7.0", VICTIM))
    got = peaks(answers, "panel 'Memory, each definition, vs request' A", column="resident")
    assert sorted(got) == [(None, s) for s in SCHEDDS]
    assert got[(None, "ap01.example.org")] < 48 << 20 < got[(None, "ap02.example.org")]
    assert sorted(r["schedd"] for r in rows(answers, "panel 'Advice signals'")) == \
        sorted(SCHEDDS)
