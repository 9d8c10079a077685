"""`jobmon query JOBID` as a full report: efficiency, memory by every definition, advice
from named rules, and what the scheduler recorded beside it -- through the real HTCondor
wrapper contract, the real history parser and the real renderers."""
import csv
import io
import json
import re
import os

import pytest

from helpers import TEST_USER, fixture, jobmon, jobmon_run, owned_by, py
from jobmon.summary import advice
from jobmon.config.report import defaults

GIB = 1 << 30
CFG = defaults()


def rules(summary, **cfg):
    return {a["rule"]: a["text"] for a in advice.advise(summary, dict(CFG, **cfg))}


def test_the_issues_example_job():
    """8 cores and 32 GiB given, 1.2 cores and 3 GiB used: ask for 2 cores and 4 GiB."""
    s = {"wall_seconds": 3600, "cpu_user_seconds": 1.2 * 3600, "cpu_system_seconds": 0,
         "cores_allocated": 8, "cpu_efficiency_percent": 15.0,
         "mem_allocated_bytes": 32 * GIB, "rss_peak_bytes": 3 * GIB, "outcome": "goodput"}
    got = rules(s)
    assert got["cpu_underused"] == "used 1.2 of the 8 cores it was given (15 %): ask for 2 cores"
    assert got["memory_overrequested"] == "resident peak 3.0 GiB of 32 GiB memory: ask for 4 GiB"
    assert set(got) == {"cpu_underused", "memory_overrequested"}
    assert set(rules(s, disabled="cpu_underused, short_job")) == {"memory_overrequested"}
    # thresholds come from the config: at 10 % nothing is underused
    assert "cpu_underused" not in rules(s, cpu_low_percent=10.0)


@pytest.mark.parametrize("extra, rule", [
    ({"cores_allocated": 2, "cpu_user_seconds": 3 * 600}, "cpu_oversubscribed"),
    ({"mem_allocated_bytes": 4 * GIB, "rss_peak_bytes": int(3.8 * GIB)}, "memory_near_limit"),
    ({"cpu_idle_samples": 40, "samples": 60}, "stalled"),
    ({"mem_rising": 1, "mem_growth_bytes_per_hour": 2 * GIB}, "memory_leak"),
    ({"gpus_allocated": 2, "gpu_util_avg_percent": 3.0}, "gpu_idle"),
    ({"wall_seconds": 12}, "short_job"),
    ({"cores_allocated": None}, "no_allocation"),
    ({"cpu_pressure_percent": 40.0}, "cpu_contended"),
    ({"cpu_wait_percent": 40.0}, "cpu_contended"),
    ({"mem_pressure_percent": 20.0, "mem_allocated_bytes": GIB}, "memory_thrashing"),
    ({"mem_major_faults": 60000, "mem_limit_hits": 5}, "memory_thrashing"),
    ({"io_pressure_percent": 45.0}, "io_bound"),
])
def test_each_rule_fires_on_its_case_only(extra, rule):
    base = {"wall_seconds": 600, "cpu_user_seconds": 600, "cores_allocated": 1,
            "samples": 60, "outcome": "goodput"}
    assert rule not in rules(base)
    assert rule in rules(dict(base, **extra)), rules(dict(base, **extra))


# the issue's job: 2 cores, asleep 8 s in 0.1 s steps beside three CPU hogs (procfs mode):
# 0.09 s of CPU, 0.069 s waited for one -- 44 % of the time it was ready to run
SLEEPER = {"wall_seconds": 8.1, "cpu_user_seconds": 0.07, "cpu_system_seconds": 0.02,
           "cpu_wait_seconds": 0.069, "cpu_wait_percent": 43.4, "cores_allocated": 2,
           "cpu_efficiency_percent": 0.56, "threads_max": 1, "outcome": "goodput"}


@pytest.mark.parametrize("wait", [{"cpu_wait_seconds": 0.069, "cpu_wait_percent": 43.4},
                                  {"cpu_pressure_seconds": 0.069,
                                   "cpu_pressure_percent": 0.85}])
def test_an_idle_job_that_waited_on_wakeups_is_told_to_ask_for_fewer_cores(wait):
    s = {**SLEEPER, "cpu_wait_seconds": None, "cpu_wait_percent": None, **wait}
    got = rules(s)
    assert "cpu_contended" not in got, got
    assert got["cpu_underused"] == "used 0.0 of the 2 cores it was given (1 %): ask for 1 core"


def test_contention_is_judged_against_the_cores_given():
    """Used + waited per second of wall against the cores: a single-threaded job that
    waited on a busy node wanted 1 of its 4 cores (ask for 2: 1 + 25 %); two threads that
    wanted the 2 cores they were given and got a fifth of them are contended."""
    one = {"wall_seconds": 100, "cpu_user_seconds": 40, "cpu_wait_seconds": 60,
           "cores_allocated": 4, "cpu_efficiency_percent": 10.0, "threads_max": 1}
    got = rules(one)
    assert "cpu_contended" not in got
    assert got["cpu_underused"] == ("used 0.4 of the 4 cores it was given (10 %) and waited "
                                    "for a CPU 0.6 cores more: ask for 2 cores")
    two = dict(one, cpu_user_seconds=40, cpu_wait_seconds=160, cores_allocated=2,
               cpu_efficiency_percent=20.0, threads_max=2)
    got = rules(two)
    assert "cpu_underused" not in got
    assert got["cpu_contended"].startswith(
        "the node was busy: it got 0.4 of the 2 cores it was given, and its threads waited "
        "for a CPU 1.6 cores' worth more, 80 % of what they wanted (run queue)")
    # PSI: a thread waited 80 % of the run; two threads may have waited twice that
    psi = dict(two, cpu_wait_seconds=None, cpu_pressure_seconds=80)
    assert "a thread of it waited for a CPU 80 % of the run (PSI)" in rules(psi)["cpu_contended"]
    # one thread cannot want more than one core: its 4 cores are too many, however busy
    assert "cpu_underused" in rules(dict(psi, threads_max=1, cores_allocated=4,
                                         cpu_efficiency_percent=10.0))


def test_a_scheduler_job_whose_summary_lacks_its_cores_gets_them_from_the_scheduler():
    """A summary the sampler wrote without cores (a whole-node cpuset, a sampler from
    before the Slurm allocation tag): the readers take the scheduler's word -- the tag,
    or the record `jobmon query` fills in -- and compute the figures; and a scheduler's
    job is never told to tag a `jobmon run`."""
    from jobmon.report.job_efficiency import efficiency_of
    s = {"wall_seconds": 3600, "cpu_user_seconds": 360, "cpu_system_seconds": 0,
         "rss_peak_bytes": GIB, "mem_sizing_basis": "resident", "exit_code": 0,
         "cores_allocated": None, "cpu_efficiency_percent": None, "outcome": "goodput",
         "provisioned_core_hours": None, "idle_canonical_core_hours": None,
         "tags": {"job_id": "7", "uid": "999"}}
    assert efficiency_of(s)["cpu_efficiency_percent"] is None
    for filled in (efficiency_of(s, dict(s["tags"], alloc_cpus="4")),
                   efficiency_of(dict(s, cores_allocated=4))):
        assert filled["cores_allocated"] == 4 and filled["cpu_efficiency_percent"] == 2.5
        assert filled["provisioned_core_hours"] == 4 and filled["idle_canonical_core_hours"] == 3
    assert "no_allocation" not in rules(s)
    assert "no_allocation" not in rules(dict(s, tags={}, scheduler="htcondor"))
    assert "no_allocation" in rules(dict(s, tags={}, scheduler="local"))


def test_a_short_ramp_is_told_by_what_it_rose_not_per_hour():
    """A 13 s run whose resident memory rose 520 MiB steadily: no "+140.6 GiB/h"."""
    s = {"wall_seconds": 13, "mem_rising": 1, "mem_growth_bytes_per_hour": 140.6 * GIB}
    assert rules(s)["memory_leak"] == ("resident memory rose steadily (+519.9 MiB over its "
                                       "13 s): a leak, or data it loads as it goes?")
    hours = dict(s, wall_seconds=7200, mem_growth_bytes_per_hour=2 * GIB)
    assert rules(hours)["memory_leak"] == "resident memory rose steadily (+2.0 GiB/h): a leak?"


def test_every_rule_is_documented():
    text = open(os.path.join(os.path.dirname(__file__), "..", "docs", "reports.md")).read()
    for rule in advice.RULES:
        assert f"`{rule.__name__}`" in text, rule.__name__


@pytest.fixture
def local_job(tmp_path):
    store = str(tmp_path / "store.db")
    long_id = "analysis-" + "x" * 50 + ".7"
    code = ("import time\nx = b'1' * (96 << 20)\nt = time.time()\n"
            "while time.time() - t < 0.6: pass\ntime.sleep(0.3)")
    r = jobmon_run([f"--job-id={long_id}", "--interval=0.1", "--tag=request_cpus=4",
                    "--tag=request_memory=2GiB"], py(code), store=store)
    assert r.returncode == 0, r.stderr
    env = dict(os.environ, COLUMNS="80", JOBMON_CONFIG=str(tmp_path / "none.toml"))
    # however busy this machine is, the job is judged on its CPU use alone (a share
    # waited for a CPU is never over 100 %: cpu_contended stays quiet)
    (tmp_path / "none.toml").write_text("[report]\ncpu_wait_percent = 100.1\n")
    env.pop("JOBMON_STORE", None)
    return long_id, store, env


def test_query_report_json_csv_and_80_columns(local_job):
    job, store, env = local_job
    q = jobmon("query", job, "--json", f"--store={store}", env=env)
    assert q.returncode == 0, q.stderr
    rep = json.loads(q.stdout)
    eff = {e["name"]: e["value"] for e in rep["efficiency"]}
    assert eff["cores allocated"] == 4
    cpu = rep["summary"]["cpu_user_seconds"] + rep["summary"]["cpu_system_seconds"]
    assert eff["CPU efficiency (CPU time / (cores x wall))"] == pytest.approx(
        100 * cpu / (4 * rep["summary"]["wall_seconds"]), abs=0.01)
    mem = {m["name"]: m["value"] for m in rep["memory"]}
    assert mem["resident peak"] >= 96 << 20 and mem["requested"] == 2 * GIB
    assert "kernel peak (cgroup)" in mem or rep["summary"]["method"] == "procfs"
    assert {a["rule"] for a in rep["advice"]} >= {"cpu_underused", "short_job"}
    assert rep["scheduler"] is None   # a `jobmon run` job
    # CSV: the same figures, one row each
    c = jobmon("query", job, "--csv", f"--store={store}", env=env)
    rows = list(csv.DictReader(io.StringIO(c.stdout)))
    by = {(r["section"], r["name"]): r["value"] for r in rows}
    assert float(by["efficiency", "cores allocated"]) == 4
    assert int(by["memory", "resident peak"]) == mem["resident peak"]
    assert {r["name"] for r in rows if r["section"] == "advice"} == \
        {a["rule"] for a in rep["advice"]}
    # the terminal: 80 columns, the job id whole on one line
    t = jobmon("query", job, f"--store={store}", env=env)
    assert t.returncode == 0, t.stderr
    lines = t.stdout.splitlines()
    assert max(len(x) for x in lines) <= 80, max(lines, key=len)
    assert any(job in x for x in lines)
    assert "memory: every definition" in t.stdout and "ask for 1 core" in t.stdout


def test_the_list_and_group_tables_never_cut_a_job_id(local_job):
    job, store, env = local_job
    lst = jobmon("list", f"--store={store}", env=env)
    assert lst.returncode == 0
    assert any(job in x for x in lst.stdout.splitlines()), lst.stdout
    assert "…" not in lst.stdout


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="the wrapper runs as the job's user")
def test_htcondor_job_beside_its_history(tmp_path):
    """A job run through the HTCondor wrapper as 4711.0, queried with the site's history
    file configured: HTCondor's own figures, the memory it recorded beside jobmon's, and
    the differences with their reasons."""
    from test_condor_wrapper import Starter
    history = owned_by(TEST_USER, "htcondor", "history")   # the runs are the test user's
    st = Starter(site=f'[condor]\nhistory = "{history}"\n', ClusterId="4711", ProcId="0",
                 RequestCpus="4", RequestMemory="2048")
    code = "import time\nx = b'1' * (64 << 20)\nt = time.time()\nwhile time.time() - t < 0.5: pass"
    rc, _out, err = st.run(py(code))
    assert rc == 0, err
    env = dict(os.environ, JOBMON_CONFIG=st.config, COLUMNS="80")
    env.pop("JOBMON_STORE", None)
    q = jobmon("query", "4711.0", "--json", f"--store={st.store}", env=env)
    assert q.returncode == 0, q.stderr
    rep = json.loads(q.stdout)
    assert rep["job"]["scheduler"] == "htcondor"
    assert rep["summary"]["cores_requested"] == 4
    sch = rep["scheduler"]
    assert sch["name"] == "HTCondor" and sch["note"] is None, sch
    figures = {n: v for n, v, _u in sch["figures"]}
    assert figures["CPU user + system"] > 3000   # the history's run, not this one
    assert any(d["field"] == "cpu_seconds" and d["reason"] for d in sch["differences"])
    assert "HTCondor MemoryUsage" in {m["name"] for m in rep["memory"]}
    # the CSV's difference rows: HTCondor's figure (under its tag), with the reason
    c = jobmon("query", "4711.0", "--csv", f"--store={st.store}", env=env)
    rows = [r for r in csv.reader(io.StringIO(c.stdout)) if r[1:2] == ["difference"]]
    theirs = {d["field"]: d for d in sch["differences"]}
    assert len(rows) == len(theirs) and all(
        v == str(theirs[f]["htcondor"]) and why == theirs[f]["reason"]
        for _j, _s, f, v, _u, why in rows), (rows, theirs)
    t = jobmon("query", "4711.0", f"--store={st.store}", env=env)
    assert "HTCondor recorded" in t.stdout and max(map(len, t.stdout.splitlines())) <= 80
    # without a source: a note says what to configure, the report goes on
    (tmp_path / "empty.toml").write_text("")
    q = jobmon("query", "4711.0", "--json", f"--store={st.store}",
               env=dict(env, JOBMON_CONFIG=str(tmp_path / "empty.toml")))
    sch = json.loads(q.stdout)["scheduler"]
    assert q.returncode == 0 and "no HTCondor accounting source" in sch["note"]


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="the wrapper runs as the job's user")
def test_htcondor_record_decides_the_outcome_jobmon_cannot_know():
    """jobmon sees only a SIGTERM from outside (cause unknown); the history says the run
    was removed with condor_rm: the report's outcome is the user's removal."""
    from test_condor_wrapper import Starter
    history = owned_by(TEST_USER, "htcondor", "history")   # the runs are the test user's
    st = Starter(site=f'[condor]\nhistory = "{history}"\n', ClusterId="4711", ProcId="1")
    rc, _out, err = st.run(py("import os, signal; os.kill(os.getpid(), signal.SIGTERM)"))
    assert rc == -15, err
    env = dict(os.environ, JOBMON_CONFIG=st.config)
    env.pop("JOBMON_STORE", None)
    q = jobmon("query", "4711.1", "--json", f"--store={st.store}", env=env)
    assert q.returncode == 0, q.stderr
    rep = json.loads(q.stdout)
    assert rep["summary"]["outcome_reason"].startswith("killed by SIGTERM")
    outcome = {e["name"]: e["value"] for e in rep["efficiency"]}["outcome"]
    assert outcome == "badput: removed (condor_rm or a removal policy): " \
                      "via condor_rm (by user alice)"


def test_query_by_the_name_of_an_array_a_batch_or_a_dag(tmp_path):
    """`jobmon query NAME` finds the jobs `jobmon report` groups under NAME: a Slurm array
    whose tasks have ids of their own (tag array_job_id), an HTCondor batch (JobBatchName),
    a DAG (DAGManJobId, with or without its schedd)."""
    store = str(tmp_path / "b.db")
    env = dict(os.environ, COLUMNS="80", JOBMON_CONFIG=str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    for i in (1, 2, 3):
        for job, tag in ((f"900{i}", "array_job_id=9000"), (f"77.{i}", "JobBatchName=nightly"),
                         (f"80.{i}", "DAGManJobId=70")):
            extra = ["--tag=schedd=ap1"] if tag.startswith("DAG") else []
            r = jobmon_run([f"--job-id={job}", f"--tag={tag}"] + extra, ["true"], store=store,
                           env=env)
            assert r.returncode == 0, r.stderr
    batches = {(b["kind"], b["name"]): b["tasks"] for b in json.loads(jobmon(
        "report", "--since=1d", "--json", f"--store={store}", env=env).stdout)["batches"]}
    assert batches == {("array", "9000"): 3, ("batch", "nightly"): 3, ("dag", "ap1#70"): 3}
    for name, ids in (("9000", ["9001", "9002", "9003"]), ("nightly", ["77.1", "77.2", "77.3"]),
                      ("70", ["80.1", "80.2", "80.3"]), ("ap1#70", ["80.1", "80.2", "80.3"])):
        q = jobmon("query", name, "--json", f"--store={store}", env=env)
        assert q.returncode == 0, (name, q.stderr)
        doc = json.loads(q.stdout)
        assert doc["query"] == name and sorted(j["job"]["job"] for j in doc["jobs"]) == ids
    text = jobmon("query", "nightly", f"--store={store}", env=env).stdout
    assert "jobs of nightly (3)" in text
    # an id of its own still wins: 77 is HTCondor cluster 77, whatever a DAG is called
    assert sorted(j["job"]["job"] for j in json.loads(jobmon(
        "query", "77", "--json", f"--store={store}", env=env).stdout)["jobs"]) == \
        ["77.1", "77.2", "77.3"]


def test_list_and_the_samples_table_read_at_80_columns(local_job):
    """`jobmon list`: a header of whole words, each job on one line (a job id too long for
    it on a line of its own, its figures on the next), dates whole; `jobmon query`'s samples
    table: one line per sample."""
    job, store, env = local_job
    r = jobmon_run(["--job-id=short-1"], ["true"], store=store, env=env)
    assert r.returncode == 0, r.stderr
    lines = jobmon("list", f"--store={store}", env=env).stdout.splitlines()
    assert max(map(len, lines)) <= 80
    assert lines[1].split() == ["JOB", "USER", "HOST", "STARTED", "WALL", "CPU", "s", "PEAK",
                                "HOW", "STATUS"]
    short = next(x for x in lines if x.startswith("short-1 "))
    assert re.search(r" \d\d-\d\d \d\d:\d\d ", short) and short.rstrip().endswith("exit 0")
    at = lines.index(job)                              # the long id alone, figures below
    assert lines[at + 1].startswith(" ") and lines[at + 1].rstrip().endswith("exit 0")
    text = jobmon("query", job, f"--store={store}", env=env).stdout
    table = text[text.index("\nsamples (") + 1:].splitlines()
    n = int(re.match(r"samples \((\d+)", table[0]).group(1))
    rule = next(i for i, x in enumerate(table) if x.strip().startswith("─"))
    rows = [x for x in table[rule + 1:] if x.strip()]     # one line a sample, nothing wraps
    assert n >= len(rows) >= min(n, 20) and all(len(x) <= 80 for x in rows), table
    assert all(re.fullmatch(r"\s*[\d.]+(\s+\S+){7}\s*", x.replace(" MiB", "MiB")
                            .replace(" KiB", "KiB").replace(" B", "B")) for x in rows), rows


def test_allocated_memory_is_called_a_limit_only_where_one_held_the_job(tmp_path):
    """A request tag alone is no limit: the memory row says so; a memory cgroup of the
    host's version limited to 256 MiB (as a scheduler's) is."""
    from helpers import IS_ROOT, job_cgroup
    store = str(tmp_path / "store.db")
    env = dict(os.environ, JOBMON_CONFIG=str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    env.pop("JOBMON_STORE", None)

    def allocated(job):
        q = jobmon("query", job, "--json", f"--store={store}", env=env)
        assert q.returncode == 0, q.stderr
        return {m["name"]: m for m in json.loads(q.stdout)["memory"]}["allocated"]
    r = jobmon_run(["--job-id=asked", "--tag=request_memory=2GiB"], ["sleep", "0.3"],
                   store=store)
    assert r.returncode == 0, r.stderr
    row = allocated("asked")
    assert row["value"] == 2 * GIB and "its limit" not in row["meaning"], row
    assert "no memory limit was seen" in row["meaning"], row
    if not IS_ROOT:
        pytest.skip("a cgroup to limit needs root")
    cg = job_cgroup(f"jobmon-pytest-limit-{os.getpid()}", memory=256 << 20)
    try:
        r = jobmon_run(["--job-id=held", "--cgroup=existing", "--interval=0.1"],
                       ["sleep", "0.5"], store=store, preexec_fn=cg.join)
    finally:
        import time
        time.sleep(0.05)
        cg.remove()
    assert r.returncode == 0, r.stderr
    row = allocated("held")
    assert row["value"] == 256 << 20 and row["meaning"] == "what it was given (its limit)", row
