"""deploy/grafana: every panel and variable query of the dashboards, with the variables
substituted as Grafana substitutes them, run against a real InfluxDB 1.6.7 filled by real
jobs (`jobmon run`, the HTCondor wrapper on a recorded GPU node) through the real shipper;
every name they read defined by docs/schema.md; the JSON valid for the Grafana version
docs/grafana.md names; the committed JSON what the generator makes."""
import os
import re
import shutil
import subprocess
import time

import pytest

import grafana_model as gm
from contention import SPIN, cpu_quota_cgroup
from grafana_schema import validate
from helpers import JOBMON, PYTHON, REPO, as_user, limit_job_memory, needs_test_user, owned_by, \
    root, shared_tmpdir
from jobmon.influx.schema import ACTION, ALL_TAGS, JOB, SAMPLE, SHIPPER, STORED_TYPES
from jobmon.ship.state import COUNTERS

DASHBOARDS = gm.load_dashboards()
GENERATOR = os.path.join(gm.GRAFANA, "generator")
SHOWCASE = "5.0"                 # the HTCondor job of the fixture's .job.ad
# fields a real job may lack, by design: cgroup-only peaks (the jobs here run in procfs
# mode), swap, a signal (exited jobs), GPU memory of a process NVML could not attribute
OPTIONAL = {"mem_peak_bytes", "kernel_peak", "swap", "signal", "gpu_mem", "gpus_requested",
            # network: the GPU job runs in procfs mode, as its user: no cgroup v2 to count by
            "net_rx", "net_tx"}

BUSY = r"""
import os, subprocess, sys, threading, time
buf = bytearray(48 << 20)
for i in range(0, len(buf), 4096):
    buf[i] = 1
with open("out.bin", "wb") as f:
    f.write(os.urandom(4 << 20)); f.flush(); os.fsync(f.fileno())
child = subprocess.Popen([sys.executable, "-c",
                          "import time\nt = time.time()\nwhile time.time() - t < 1.2: pass"])
threading.Thread(target=time.sleep, args=(1.5,)).start()
t = time.time()
while time.time() - t < float(sys.argv[1]): pass
child.wait()
sys.exit(int(sys.argv[2]))
"""


# --- the names the dashboards may read -------------------------------------------------

def documented():
    with open(os.path.join(REPO, "docs", "schema.md"), encoding="utf-8") as f:
        doc = f.read()
    with open(os.path.join(REPO, "docs", "metrics.md"), encoding="utf-8") as f:
        metrics = f.read()
    names = set(re.findall(r"`([a-z_0-9]+)`", doc))
    shipper = doc[doc.index("`jobmon_shipper` has two kinds"):]
    shipper = set(re.findall(r"`([a-z_0-9]+)`", shipper[:shipper.index("\n## ")]))
    in_metrics = set(re.findall(r"`([a-z_0-9]+)`", metrics))
    fields = {m: {f for f in STORED_TYPES[m] if f in names or f in in_metrics}
              for m in (SAMPLE, JOB)}
    action = doc[doc.index("`jobmon_action`: one point"):]
    fields[ACTION] = set(re.findall(r"`([a-z_0-9]+)`", action[:action.index("\n\n")])) & \
        set(STORED_TYPES[ACTION])
    fields[SHIPPER] = shipper & (set(COUNTERS) | {"spool_bytes", "quarantine_entries",
                                                  "last_success", "lost_points", "lost_bytes",
                                                  "lost_files"})
    tags = {m: {t for t in ALL_TAGS if t in names} for m in (SAMPLE, JOB, ACTION)}
    tags[SHIPPER] = {"host", "cluster", "user", "reason"} & names
    return fields, tags


FIELDS, TAGS = documented()


def all_queries():
    return [(name, where, t) for name, d in DASHBOARDS.items() for where, t in gm.queries(d)]


@pytest.mark.parametrize("name,where,t", all_queries(), ids=lambda x: x if isinstance(x, str)
                         and " " in x else None)
def test_every_name_a_query_reads_is_in_the_schema(name, where, t):
    q = t["query"]
    ms = gm.measurements(q)
    assert ms and set(ms) <= {SAMPLE, JOB, SHIPPER, ACTION}, f"{where}: reads {ms}"
    known = set(ms)
    for m in ms:
        known |= FIELDS[m] | TAGS[m]
    unknown = set(gm.quoted_names(q)) - known
    assert not unknown, f"{name} {where}: not in docs/schema.md for {ms}: {sorted(unknown)}"
    if where.startswith("panel"):
        assert "$__timeFilter" in q, f"{where}: reads every point ever written"


def test_the_schema_check_catches_a_name_the_schema_lacks():
    q = 'SELECT mean("cpu_cores"), last("host_cores") FROM "jobmon_sample" WHERE $__timeFilter'
    assert set(gm.quoted_names(q)) - FIELDS[SAMPLE] - TAGS[SAMPLE] - {SAMPLE} == {"host_cores"}
    assert "outcome" in FIELDS[JOB] and "outcome" not in FIELDS[SAMPLE]
    assert "last_success" in FIELDS[SHIPPER] and "reason" in TAGS[SHIPPER]


def test_the_committed_json_is_what_the_generator_makes():
    r = subprocess.run([PYTHON, os.path.join(GENERATOR, "generate.py"), "--check"],
                       cwd=GENERATOR, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_dashboard_json_is_valid_for_the_documented_grafana(name):
    with open(os.path.join(REPO, "docs", "grafana.md"), encoding="utf-8") as f:
        version = re.search(r"Grafana (\d+\.\d+)", f.read()).group(1)
    validate(DASHBOARDS[name], version)


def test_the_validator_refuses_what_grafana_does_not_know():
    import copy
    dash = DASHBOARDS["jobmon-node.json"]
    for path, key, value in ((["panels", 1, "options"], "legnd", {}),
                             (["panels", 1], "gridPosition", {}),
                             (["templating", "list", 1], "definiton", "x"),
                             (["panels", 1, "fieldConfig", "defaults"], "unitt", "bytes")):
        bad = copy.deepcopy(dash)
        obj = bad
        for k in path:
            obj = obj[k]
        obj[key] = value
        with pytest.raises(AssertionError, match=key):
            validate(bad, "11.6")


def test_every_dashboard_has_the_issue_variables_and_links():
    names = {n: [v["name"] for v in d["templating"]["list"]] for n, d in DASHBOARDS.items()}
    assert {"cluster", "user", "account", "group", "host", "job", "schedd", "run"} <= set(
        names["jobmon-job.json"])
    with open(os.path.join(REPO, "docs", "grafana.md"), encoding="utf-8") as f:
        doc = f.read()
    for n, d in DASHBOARDS.items():       # docs/grafana.md shows each panel and its query
        for p in gm.panels(d):
            for t in p.get("targets", []):
                assert t["query"].replace("|", "\\|") in doc, (n, p["title"])
    text = {n: str(d) for n, d in DASHBOARDS.items()}
    for n in ("jobmon-node.json", "jobmon-user.json"):
        assert "/d/jobmon-job/jobmon-job?var-job=" in text[n], n


def datasource_files():
    """{file: [{key: value}]} of the provisioning files: each data source's flat keys
    (their YAML is one `key: value` a line, a data source per `- ` item)."""
    out = {}
    base = os.path.join(gm.GRAFANA, "provisioning")
    for d in ("datasources", "datasources-other"):
        for name in sorted(os.listdir(os.path.join(base, d))):
            items = out[name] = []
            for line in open(os.path.join(base, d, name), encoding="utf-8"):
                m = re.match(r"\s*(- )?([A-Za-z0-9]+): *([^#]*?)\s*(#.*)?$", line)
                if m and m.group(1):
                    items.append({})
                if m and items and m.group(3):
                    items[-1][m.group(2)] = m.group(3)
    return out


def test_the_datasource_files_keep_in_step_with_the_dashboards_and_influxdb3():
    """Every provisioning file defines the two data sources the dashboards default to;
    the InfluxDB 3 file reads the two databases the jobmon config of docs/influxdb3.md
    writes, with a token (3.x takes no user and password)."""
    files = datasource_files()
    defaults = {v["current"]["value"] for d in DASHBOARDS.values()
                for v in d["templating"]["list"] if v["type"] == "datasource"}
    assert defaults == {"jobmon-influxdb", "jobmon-influxdb-samples"}
    for name, sources in files.items():
        assert {s["uid"] for s in sources} == defaults, name
        assert all(s["version"] == "InfluxQL" and s["type"] == "influxdb" for s in sources)
    v3 = {s["uid"]: s for s in files["jobmon-influxdb-v3.yaml"]}
    with open(os.path.join(REPO, "docs", "influxdb3.md"), encoding="utf-8") as f:
        doc = f.read()
    conf = dict(re.findall(r'^\s*(database|samples_database) = "([^"]+)"', doc, re.M))
    assert v3["jobmon-influxdb"]["dbName"] == conf["database"]
    assert v3["jobmon-influxdb-samples"]["dbName"] == conf["samples_database"]
    for s in v3.values():
        assert "user" not in s and "password" not in s
        assert s["httpHeaderName1"] == "Authorization"
        assert s["httpHeaderValue1"].split()[0] in ("Bearer", "Token")


# --- a real InfluxDB with real jobs -------------------------------------------------------

def run_job(site, job_id, seconds, code=0, user="jobmon-test", tags=()):
    argv = ["run", "--interval=0.2", f"--job-id={job_id}"]
    argv += [f"--tag={t}" for t in tags]
    cwd = shared_tmpdir("jobmon-grafana-")
    try:
        r = site.jobmon(*argv, "--", PYTHON, "-c", BUSY, str(seconds), str(code), user=user,
                        check=False, cwd=cwd)
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
    assert r.returncode == code and "Traceback" not in r.stderr, r.stderr


# spins, sleeps (an idle stretch), then wants more than its cgroup's limit: killed for memory
GREEDY = r"""
import time
t = time.time()
while time.time() - t < 1.0: pass
time.sleep(1.2)
x = b"1" * (96 << 20)
"""
OOM_JOB = "oom-1"
QUOTA_JOB = "quota-1"


def oom_job(site):
    """A root job in a cgroup of its own, of the host's version (PSI: its v2 cgroup, beside
    its v1 ones on a hybrid host), its memory limit set to 48 MiB once jobmon made the
    cgroup: cores idle for a while, then killed for memory."""
    gate = os.path.join(shared_tmpdir("jobmon-grafana-"), "go")
    p = subprocess.Popen([os.path.join(os.path.dirname(PYTHON), "jobmon"), "run",
                          "--interval=0.2", f"--job-id={OOM_JOB}", "--cgroup=create",
                          "--tag=request_memory=48MiB", "--",
                          "/bin/sh", "-c", 'while [ ! -e "$0" ]; do sleep 0.01; done; exec "$@"',
                          gate, PYTHON, "-c", GREEDY], env=site.env, stderr=subprocess.PIPE,
                         text=True)
    try:
        limit_job_memory(p, 48 << 20)
        open(gate, "w").close()
        _out, err = p.communicate(timeout=120)
    finally:
        p.kill()
    assert p.returncode == -9 and "Traceback" not in err, err


def quota_job(site):
    """A root job of 2 spinning processes in a job cgroup whose CPU quota is 0.5 cores;
    False where no such cgroup can be made here."""
    try:
        with cpu_quota_cgroup(50000) as job:
            site.jobmon("run", "--interval=0.2", f"--job-id={QUOTA_JOB}", "--cgroup=existing",
                        "--", PYTHON, "-c", SPIN, "2", "1.5", env=site.env,
                        preexec_fn=job.join)
    except pytest.skip.Exception:
        return False
    return True


def plant_junk(site, user="jobmon-test"):
    """A spool file that is not line protocol: the shipper quarantines it, a loss of
    `user`'s, reason `quarantined`."""
    code = ("import os, sys, time; p = os.path.join(sys.argv[1], '%d.%d.%d.x.lp' % "
            "(time.time_ns(), os.getuid(), os.getpid())); open(p, 'w').write('junk\\n')")
    subprocess.run(as_user([PYTHON, "-c", code, site.spool], user), check=True)


def ship(site, host, cluster):
    site.ship(env=dict(site.env, JOBMON_SHIPPER_HOST=host, JOBMON_SHIPPER_CLUSTER=cluster))


def condor_gpu_job(site, gpu):
    """The HTCondor wrapper as the starter runs it, on a node with a (recorded) GPU."""
    from test_condor_wrapper import Starter
    with open(site.config) as f:
        config = f.read()
    starter = Starter(site=config + "[condor]\ninterval = 0.2\nmin_interval = 0.05\n")
    starter.prepare()
    starter.env.pop("JOBMON_STORE")
    starter.env.update(gpu.env(CUDA_VISIBLE_DEVICES="GPU-b08d3c64-1f2e-9a7d-4e55-7c1d0f3e8a20"))
    starter.env["PATH"] = "/usr/bin:/bin"
    p = starter.popen_prepared([PYTHON, "-c", BUSY, "2.5", "0"])
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err


ACTED = "7.0"          # the idle HTCondor job `jobmon act` warns and holds


def acted_job(site):
    """An idle HTCondor job of the test user (the wrapper as the starter runs it), warned
    and then held by passes of `jobmon act` through the real htcondor2 bindings and a
    recorded schedd (tests/schedd_recorder.py); the hold's soft kill ends it."""
    from jobmon import config
    from jobmon.actions import actor
    from jobmon.plugins.condor.actions import Condor
    from jobmon.actions.records import InfluxWriter
    from jobmon.stores.influx import InfluxStore
    from schedd_recorder import RecordedSchedd, job_ad
    from test_condor_wrapper import Starter
    gid = "ap01.example.org#7.0#1795333942"
    with open(site.config) as f:
        text = f.read() + ("[condor]\ninterval = 0.2\nmin_interval = 0.05\n[actions]\n"
                           'mode = "on"\nresources = "cores"\nidle_seconds = 1.0\n'
                           'grace_seconds = 1.0\nwarn = "none"\n')
    starter = Starter(site=text, ClusterId="7", GlobalJobId=f'"{gid}"',
                      Owner='"jobmon-test"')
    starter.prepare()
    starter.env.pop("JOBMON_STORE")
    starter.env["PATH"] = "/usr/bin:/bin"
    p = starter.popen_prepared([PYTHON, "-c", "import time; time.sleep(300)"])
    cfg = config.load(starter.config)
    try:
        with pytest.MonkeyPatch.context() as mp:
            schedd = RecordedSchedd(mp, [job_ad(starter.job_ad_text, ClusterId=7,
                                                GlobalJobId=gid, Owner="jobmon-test")])
            kinds = []
            deadline = time.monotonic() + 60
            while kinds[-1:] != ["act"]:
                assert time.monotonic() < deadline, kinds
                ship(site, "wn1", "alpha")
                done = actor.run_pass(cfg, InfluxStore.from_config(cfg),
                                      {"htcondor": Condor(schedd=schedd.schedd)},
                                      InfluxWriter(cfg))
                kinds += [d.kind for d in done.decisions if d.job == ACTED]
                time.sleep(0.3)
        assert "warn" in kinds and len(schedd.acts()) == 1, kinds
    finally:
        starter.hard_kill(p, vacate=10)
    ship(site, "wn1", "alpha")          # its end, from the node it ran on


def node_reader_jobs(site, gpu, base):
    """On a node reader publishing the recorded GPU node, a recorded RAPL tree and its
    network counters: the HTCondor GPU job, and a job of root's (a cgroup v2 of its own
    beside its v1 ones) that talks to a local server."""
    from node_site import CLIENT, Powered, Server
    powered = Powered("xeon_2s", {"intel-rapl:0": 60, "intel-rapl:1": 40})
    config = os.path.join(base, "node.toml")
    with open(config, "w") as f:
        f.write("[node_reader]\ncarbon_intensity = 300\n")
    gpu.reader = subprocess.Popen([JOBMON, "node-reader", f"--dir={gpu.dir}", "--period=0.2",
                                   f"--recorded={gpu.recording}", f"--config={config}",
                                   f"--powercap={powered.powercap}",
                                   f"--cpu-stat={powered.stat}"], stderr=subprocess.PIPE,
                                  text=True)
    try:
        gpu.wait_published()
        condor_gpu_job(site, gpu)
        server = Server(answer=100_000)
        site.jobmon("run", "--interval=0.2", "--job-id=net-1", "--", "sh", "-c",
                    'sleep 1; "$0" -c "$1" "$2" 3000000; sleep 2', PYTHON, CLIENT,
                    str(server.port), env=dict(site.env, JOBMON_GPU="off",
                                               JOBMON_NODE_DIR=gpu.dir))
    finally:
        gpu.close()
        powered.close()


def reconcile(site):
    """`jobmon reconcile` of every node's runs, HTCondor's history being the recorded one of
    the pool whose job ad the HTCondor job ran with (made the test user's, who ran it):
    its record of 5.0 settles that run."""
    config = site.config + ".reconcile"
    with open(site.config) as f, open(config, "w") as out:
        out.write(f.read() + '[condor]\nhistory = "%s"\n'
                  % owned_by("jobmon-test", "htcondor", "real-pool-25.14", "history"))
    site.jobmon("reconcile", "--all-hosts", "--since=1d", env=dict(site.env, JOBMON_CONFIG=config))


@pytest.fixture(scope="module")
def filled(influx_server, tmp_path_factory):
    """Two clusters, three nodes, two users, an array, a failed job, a GPU job with a run
    number and a job talking to a local server on a node reader's node, a quarantined
    file; every node shipped twice."""
    from gpu_node_site import GpuNode
    from influx_site import Site
    base = tmp_path_factory.mktemp("grafana")
    site = Site(influx_server, base, "grafana", samples_apart=True)
    site.prepare()
    t0 = time.time()
    for k in (1, 2):            # an array; its second task fails
        run_job(site, f"9100_{k}", 1.5, code=k - 1,
                tags=("account=phys", "group=cms", "array_job_id=9100", "request_cpus=2",
                      "request_memory=256MiB"))
    run_job(site, "fail-1", 0.5, code=1, user="jobmon-test2",
            tags=("account=chem", "group=atlas", "request_cpus=1"))
    plant_junk(site)
    ship(site, "wn1", "alpha")
    acted_job(site)
    node_reader_jobs(site, GpuNode(), str(base))
    ship(site, "wn2", "beta")
    run_job(site, "9200", 1.0, user="jobmon-test2", tags=("account=chem",))
    oom_job(site)
    site.quota_job = quota_job(site)
    ship(site, "wn3", "beta")
    ship(site, "wn1", "alpha")           # each node's counters more than once: a rate
    reconcile(site)
    yield site, int(t0 * 1000) - 60000, int(time.time() * 1000) + 5000
    site.close()


# job-view panels of what the showcase (a procfs job that ended well) has not: PSI, an OOM
# kill; a CPU quota's throttling (a cgroup of the cpu controller); shown on the jobs that
# have them below
NOT_IN_SHOWCASE = ("Stalled on CPU, memory, I/O (PSI)", "Killed for memory")
QUOTA_PANELS = ("Held back by its CPU quota",)
SCENARIOS = {   # what a user picks: values of the variables, per dashboard
    "jobmon-job.json": {"job": SHOWCASE, "cluster": gm.ALL, "user": "jobmon-test",
                        "account": gm.ALL, "group": gm.ALL, "host": gm.ALL, "schedd": gm.ALL,
                        "run": gm.ALL},
    "jobmon-node.json": {"cluster": ["alpha", "beta"], "host": "wn2", "user": gm.ALL},
    "jobmon-cluster.json": {"cluster": ["alpha", "beta"], "account": gm.ALL, "group": gm.ALL,
                            "user": gm.ALL},
    "jobmon-user.json": {"cluster": gm.ALL, "user": "jobmon-test", "account": ["phys"],
                         "group": gm.ALL},
}
STRINGS = {"method", "command", "tags", "outcome", "outcome_reason", "idle_limited_by", "reason",
           "oom_command", "oom_source", "ownership",
           "mem_sizing_basis", "key", "value", "advice", "batch", "scheduler_state",
           "action", "actor", "data"} | \
    set(ALL_TAGS)      # key, value: SHOW TAG VALUES


def run_query(site, q, source=None):
    """q on the database of its data source (the samples' or the summaries')."""
    db = site.samples_db if (source or {}).get("uid") == "${samples}" else site.db
    res = site.influx.query(q, db)["results"][0]
    assert "error" not in res, f"{q}\n-> {res['error']}"
    return res.get("series", [])


def check_typed(where, q, series):
    assert series, f"{where}: no data for\n{q}"
    seen = {}
    for s in series:
        assert s["values"], f"{where}: an empty series"
        for row in s["values"]:
            for col, v in zip(s["columns"], row):
                if v is None:
                    continue
                seen[col] = True
                if col == "time":
                    assert isinstance(v, int), (where, col, v)
                elif col in STRINGS:
                    assert isinstance(v, str), (where, col, v)
                else:
                    assert isinstance(v, (int, float)) and not isinstance(v, bool), \
                        (where, col, v)
        missing = [c for c in s["columns"] if c not in seen and c not in OPTIONAL]
        assert not missing or len(series) > 1, f"{where}: {missing} always null\n{q}"
    missing = {c for s in series for c in s["columns"]} - set(seen) - OPTIONAL
    assert not missing, f"{where}: {sorted(missing)} always null\n{q}"


@root
@needs_test_user
@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_query_returns_typed_data_from_real_jobs(filled, name):
    site, from_ms, to_ms = filled
    dash = DASHBOARDS[name]
    variables = dash["templating"]["list"]
    values, options = SCENARIOS[name], {}
    for v in variables:             # in order: a variable's query uses the ones before it
        if v["type"] != "query":
            continue
        q = gm.substitute(v["query"], variables, values, options, from_ms, to_ms)
        series = run_query(site, q, v["datasource"])
        check_typed(f"variable {v['name']}", q, series)
        options[v["name"]] = [row[1] for s in series for row in s["values"]]
        picked = values[v["name"]]
        for value in ([] if picked == gm.ALL else [picked] if isinstance(picked, str)
                      else picked):
            assert value in options[v["name"]], (v["name"], value, options[v["name"]])
    failed = []
    for where, t in gm.queries(dash):
        if where.startswith("variable"):
            continue
        q = gm.substitute(t["query"], variables, values, options, from_ms, to_ms)
        series = run_query(site, q, t["datasource"])
        if not series and any(f"panel {title!r}" in where
                              for title in NOT_IN_SHOWCASE + QUOTA_PANELS):
            continue      # test_the_job_view_of_a_job_that_stalled_and_was_killed has them
        try:
            check_typed(where, q, series)
        except AssertionError as e:
            failed.append(str(e).split("\nassert")[0])
    assert not failed, "\n".join(failed)


@root
@needs_test_user
def test_multi_value_and_all_select_what_grafana_would(filled):
    """The same cluster panel with one cluster, both, and All: the counts add up."""
    site, from_ms, to_ms = filled
    dash = DASHBOARDS["jobmon-cluster.json"]
    variables = dash["templating"]["list"]
    [t] = [p for p in gm.panels(dash) if p["title"] == "Goodput / badput (jobs)"][0]["targets"][:1]
    opts = {"cluster": ["alpha", "beta"]}

    def count(cluster):
        q = gm.substitute(t["query"], variables, {"cluster": cluster, "account": gm.ALL,
                                                  "group": gm.ALL, "user": gm.ALL},
                          opts, from_ms, to_ms)
        series = run_query(site, q, t["datasource"])
        return series[0]["values"][0][1] if series else 0

    beta = 3 + site.quota_job             # quota-1 runs on wn3, of cluster beta
    assert count(["alpha"]) == 1 and count(["beta"]) == beta
    assert count(["alpha", "beta"]) == count(gm.ALL) == beta + 1
    assert gm.replace_variables("/^${c:regex}$/", [{"name": "c", "multi": True}],
                                {"c": ["a.b", "c"]}, {}) == r"/^(a\.b|c)$/"
    assert gm.interval_text(gm.interval_ms(0, 3600 * 1000)) == "5s"
    assert gm.interval_text(gm.interval_ms(0, 7 * 86400 * 1000)) == "10m"


@root
@needs_test_user
def test_the_job_view_shows_the_jobs_own_figures(filled):
    """Values, not only shapes: the GPU job's recorded utilization, its request from the
    job ad, its run number."""
    site, from_ms, to_ms = filled
    dash = DASHBOARDS["jobmon-job.json"]
    variables = dash["templating"]["list"]
    by_title = {p["title"]: p for p in gm.panels(dash)}

    def rows(title, ref=0):
        t = by_title[title]["targets"][ref]
        q = gm.substitute(t["query"], variables, SCENARIOS["jobmon-job.json"], {}, from_ms,
                          to_ms)
        return [dict(zip(s["columns"], v), **(s.get("tags") or {}))
                for s in run_query(site, q, t["datasource"]) for v in s["values"]]

    util = [r["util"] for r in rows("GPU utilization") if r["util"] is not None]
    assert util and max(util) == 98                      # tests/fixtures/gpu/h100x2.json
    [sched] = rows("Requested and allocated (scheduler's figures)")
    assert sched["cores_requested"] == 1 and sched["mem_requested_bytes"] == 512 << 20
    assert (sched["scheduler"], sched["run"], sched["host"]) == ("htcondor", "1", "wn2")
    [eff] = rows("CPU and memory efficiency")
    [summary] = rows("Job summary")
    cpu = summary["cpu_user_seconds"] + summary["cpu_system_seconds"]
    assert eff["cpu"] == pytest.approx(100 * cpu / summary["wall_seconds"], rel=0.01, abs=0.01)
    assert eff["mem"] == pytest.approx(100 * summary["rss_peak_bytes"] / (512 << 20), rel=0.01)
    assert summary["rss_peak_bytes"] > 48 << 20          # the 48 MiB the job touched
    # what HTCondor recorded of it, once reconciled (its history: MemoryUsage
    # ((225000 + 1023) / 1024) MB, RemoteUserCpu 13 s), and the batch it belongs to
    assert (sched["scheduler_state"], sched["scheduler_memory_bytes"],
            sched["scheduler_cpu_seconds"]) == ("completed", 220 << 20, 13.0), sched
    assert sched["batch"] == "cluster vm#5"
    [advice] = rows("Advice")
    assert "(short_job)" in advice["advice"] and advice["outcome"].startswith("completed")


@root
@needs_test_user
def test_energy_and_network_panels_show_the_jobs_figures(filled):
    """The showcase GPU job's energy is its GPU's counter plus its CPU and DRAM share, its
    CO2e at the node reader's 300 g/kWh; the node view counts net-1's traffic."""
    site, from_ms, to_ms = filled
    job, node = DASHBOARDS["jobmon-job.json"], DASHBOARDS["jobmon-node.json"]

    def rows(dash, title, values):
        [p] = [p for p in gm.panels(dash) if p["title"] == title]
        q = gm.substitute(p["targets"][0]["query"], dash["templating"]["list"], values, {},
                          from_ms, to_ms)
        return [dict(zip(s["columns"], v), **(s.get("tags") or {}))
                for s in run_query(site, q, p["targets"][0]["datasource"]) for v in s["values"]]

    [energy] = rows(job, "Energy and CO2e", SCENARIOS["jobmon-job.json"])
    assert energy["energy_kwh"] > 0
    assert energy["co2e_grams"] == pytest.approx(energy["energy_kwh"] * 300, rel=0.01)
    power = [r["power"] for r in rows(job, "Power and network", SCENARIOS["jobmon-job.json"])
             if r["power"] is not None]
    assert power and max(power) > 300                  # the recorded H100 draws 350 W
    net = [r for r in rows(node, "Network by job", SCENARIOS["jobmon-node.json"])
           if r["job"] == "net-1" and r["tx"]]
    assert net and max(r["tx"] for r in net) > 0


def job_panels(filled, job, titles):
    """{title: rows} of the single-job dashboard's first query of each panel of `titles`,
    for the root job `job`, each checked for typed data."""
    site, from_ms, to_ms = filled
    dash = DASHBOARDS["jobmon-job.json"]
    values = dict(SCENARIOS["jobmon-job.json"], job=job, user="root")
    by_title, out = {p["title"]: p for p in gm.panels(dash)}, {}
    for title in titles:
        t = by_title[title]["targets"][0]
        q = gm.substitute(t["query"], dash["templating"]["list"], values, {}, from_ms, to_ms)
        series = run_query(site, q, t["datasource"])
        check_typed(f"panel {title!r}", q, series)
        out[title] = [dict(zip(s["columns"], v)) for s in series for v in s["values"]]
    return out


@root
@needs_test_user
def test_the_job_view_of_a_job_that_stalled_and_was_killed(filled):
    """The job panels the showcase lacks, on the root job killed for memory: PSI figures,
    the story of its kill; and the cluster's idle allocations: the showcase's GPU, which
    none of its processes was on."""
    site, from_ms, to_ms = filled
    rows = job_panels(filled, OOM_JOB, NOT_IN_SHOWCASE)
    [row] = rows["Killed for memory"]
    assert row["oom_kills"] == 1 and row["oom_source"] == "kernel log", row
    assert row["oom_limit_bytes"] == 48 << 20 and row["oom_command"]
    cluster = DASHBOARDS["jobmon-cluster.json"]
    [t] = [p for p in gm.panels(cluster) if p["title"] == "Idle allocations now"][0]["targets"]
    q = gm.substitute(t["query"], cluster["templating"]["list"],
                      SCENARIOS["jobmon-cluster.json"], {"cluster": ["alpha", "beta"]},
                      from_ms, to_ms)
    idle = {s["tags"]["job"]: dict(zip(s["columns"], s["values"][0]))
            for s in run_query(site, q, t["datasource"])}
    # the showcase held its recorded GPU with no process of it on it all its run
    assert idle[SHOWCASE]["gpus"] == 1 and idle[SHOWCASE]["gpus_in_use"] == 0, idle
    assert idle[SHOWCASE]["gpu_unused"] >= 1.0, idle
    assert idle[OOM_JOB]["cpu_idle"] is not None, idle


@root
@needs_test_user
def test_the_job_view_of_a_job_held_back_by_its_cpu_quota(filled):
    """The throttling panel (declared beside the cgroup probes) on the job run under a
    0.5-core quota: held back most of each second it ran."""
    if not filled[0].quota_job:
        pytest.skip("no job cgroup with a CPU quota here")
    held = job_panels(filled, QUOTA_JOB, QUOTA_PANELS)["Held back by its CPU quota"]
    assert max(x["periods_held"] for x in held) >= 5, held   # of 10 a second
    assert max(x["cpus_held"] for x in held) >= 0.5, held


@root
@needs_test_user
def test_the_user_view_groups_batches_as_jobmon_report_does(filled):
    """Each job's `batch` (its summary), which the Arrays and batches panel groups by: the
    Slurm-style array's tasks under "array 9100", the lone job under none."""
    site, from_ms, to_ms = filled
    dash = DASHBOARDS["jobmon-user.json"]
    variables = dash["templating"]["list"]
    [t] = [p for p in gm.panels(dash) if p["title"] == "Arrays and batches"][0]["targets"]
    q = gm.substitute(t["query"], variables, dict(SCENARIOS["jobmon-user.json"],
                                                  account=gm.ALL), {}, from_ms, to_ms)
    batch = {(s.get("tags") or {})["job"]: dict(zip(s["columns"], v))["batch"]
             for s in run_query(site, q, t["datasource"]) for v in s["values"]}
    assert batch["9100_1"] == batch["9100_2"] == "array 9100"
    assert batch[SHOWCASE] == "cluster vm#5"
