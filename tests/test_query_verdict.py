"""What a person reads first: `jobmon query` opens with a verdict (cores and memory used of
given, how the job ended and why, the most useful advice in the job's own submit syntax),
every table of `jobmon query` and `jobmon report` fits 80 columns whatever the length of the
job ids, and energy and network say why they are not there. Real `jobmon run` jobs (and
the real HTCondor wrapper) into the real embedded store."""
import json
import os
import re
import time

import pytest

from helpers import jobmon, jobmon_run, needs_root, py
from jobmon.stores.local import LocalStore

GIB, MIB = 1 << 30, 1 << 20
# a job holding ~100 MiB for a moment: well under the 2 GiB it asks for
HOLD = "x = b'1' * (100 << 20)\nimport time\ntime.sleep(0.3)"
# 42 and 73 characters: an HTCondor GlobalJobId, and one with a long schedd name
ID42 = "submit-node.example.org#1234567.0#17000000"
ID73 = "schedd01.a-rather-long-cluster-name.physics.example.edu#4712.0#1700000000"
PLAIN73 = "analysis-" + "x" * 62 + ".7"


def env_for(tmp_path, **more):
    (tmp_path / "site.toml").write_text("")
    env = dict(os.environ, COLUMNS="80", JOBMON_CONFIG=str(tmp_path / "site.toml"), **more)
    env.pop("JOBMON_STORE", None)
    return env


def query(job, store, env, *more):
    r = jobmon("query", job, f"--store={store}", *more, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_verdict_comes_first_in_jobmon_runs_syntax(tmp_path):
    """The README's first job, given 1 core: its first lines say the cores and memory it
    used of what it was given, that it completed, and what to ask for next time as
    `jobmon run` asks (--tag request_memory=512MiB)."""
    store, env = str(tmp_path / "s.db"), env_for(tmp_path)
    r = jobmon_run(["--job-id=demo", "--interval=0.1", "--tag=request_cpus=1",
                    "--tag=request_memory=2GiB"], py(HOLD), store=store, env=env)
    assert r.returncode == 0, r.stderr
    rep = json.loads(query("demo", store, env, "--json"))
    peak = {m["name"]: m["value"] for m in rep["memory"]}["resident peak"]
    assert 100 * MIB < peak < 300 * MIB
    [ask] = [a for a in rep["advice"] if a["rule"] == "memory_overrequested"]
    assert ask["ask"] == {"memory_bytes": 512 * MIB}
    v = rep["verdict"]
    assert v["outcome"] == {"state": "goodput", "text": "completed (exit code 0)"}
    assert v["cores"]["given"] == 1 and v["memory"] == dict(
        v["memory"], peak=peak, given=2 << 30, peak_name="resident peak")
    assert v["advice"]["rule"] == "memory_overrequested"
    assert v["advice"]["submit"] == ["--tag request_memory=512MiB"]
    lines = query("demo", store, env).splitlines()
    head = lines[:5]
    assert head[0].startswith("job demo — goodput: completed (exit code 0)"), head
    assert re.match(r"cores +█*[▏▎▍▌▋▊▉]?·* +\d+ % +\d\.\d\d used of 1$", head[1].rstrip()), head
    assert re.match(r"memory .* \d+ % +\d+\.\d MiB resident peak of 2 GiB$",
                    head[2].rstrip()), head
    assert head[3].startswith("next time --tag request_memory=512MiB  (memory_overrequested")
    assert "ask for 512 MiB" in head[4]
    assert max(map(len, lines)) <= 80


@needs_root
@pytest.mark.skipif(os.geteuid() != 0, reason="the wrapper runs as the job's user")
def test_an_htcondor_jobs_advice_is_a_submit_file_line():
    """Through the real HTCondor wrapper: the advice reads as the submit file asks
    (request_cpus = N), the figure the advice rule gave."""
    from test_condor_wrapper import Starter
    # however busy this machine is, the job is judged on its CPU use alone
    st = Starter(site="[report]\ncpu_wait_percent = 100.1\n", ClusterId="4711", ProcId="0",
                 RequestCpus="4", RequestMemory="2048", CpusProvisioned="4",
                 MemoryProvisioned="2048")
    rc, _out, err = st.run(py("import time\nt = time.time()\nwhile time.time() - t < 0.5: pass"))
    assert rc == 0, err
    env = dict(os.environ, JOBMON_CONFIG=st.config, COLUMNS="80")
    env.pop("JOBMON_STORE", None)
    rep = json.loads(query("4711.0", st.store, env, "--json", "--no-scheduler"))
    assert rep["job"]["scheduler"] == "htcondor"
    [under] = [a for a in rep["advice"] if a["rule"] == "cpu_underused"]
    lines = query("4711.0", st.store, env, "--no-scheduler").splitlines()
    assert lines[3].startswith(f"next time request_cpus = {under['ask']['cores']}  "
                               "(cpu_underused"), lines[:5]
    assert "used of 4" in lines[1]


def test_a_slurm_jobs_advice_is_an_sbatch_line(tmp_path):
    """A Slurm sampler's record (its summary as the sampler writes it: the kernel's peak,
    the allocation from the cgroup) in the embedded store: 2.5 GiB of 8 GiB reads
    `#SBATCH --mem=3G`."""
    store, env = str(tmp_path / "s.db"), env_for(tmp_path)
    start = time.time() - 7200
    sink = LocalStore(store)
    sink.open({"job": "12345", "host": "node01", "user": "ann", "method": "cgroup-v2",
               "start_time": start, "tags": {"partition": "batch"}, "command": ["work"],
               "interval": 30.0, "scheduler": "slurm"})
    sink.write({"time": int((start + 30) * 1e9), "elapsed_seconds": 30.0, "method": "cgroup-v2",
                "cpu_user_seconds": 30.0, "mem_resident_bytes": int(2.5 * GIB), "procs": 1})
    sink.close({"job": "12345", "host": "node01", "method": "cgroup-v2", "start_time": start,
                "end_time": start + 3600, "exit_code": 0, "signal": None, "wall_seconds": 3600.0,
                "cpu_user_seconds": 3550.0, "cpu_system_seconds": 10.0,
                "mem_peak_bytes": int(2.5 * GIB), "rss_peak_bytes": int(2.4 * GIB),
                "mem_sizing_basis": "kernel", "cores_allocated": 1, "cores_requested": 1,
                "mem_allocated_bytes": 8 * GIB, "samples": 120})
    lines = query("12345", store, env, "--no-scheduler").splitlines()
    assert lines[0].startswith("job 12345 — goodput: completed (exit code 0)"), lines[:5]
    assert "2.5 GiB kernel peak of 8 GiB" in lines[2]
    assert lines[3].startswith("next time #SBATCH --mem=3G  (memory_overrequested"), lines[:5]


@pytest.fixture
def long_ids(tmp_path):
    """Three real jobs, idle on their 2 cores and 4 GiB, with ids of 42 and 73 characters
    (two GlobalJobIds, and a plain one)."""
    store, env = str(tmp_path / "s.db"), env_for(tmp_path)
    for job in (ID42, ID73, PLAIN73):
        r = jobmon_run([f"--job-id={job}", "--interval=0.1", "--tag=request_cpus=2",
                        "--tag=request_memory=4GiB"], ["sleep", "1"], store=store, env=env)
        assert r.returncode == 0, r.stderr
    return store, env


def test_report_tables_fit_80_columns_with_ids_of_any_length(long_ids):
    """Before: a 42-character id dropped the user, held-idle and outcome columns; a
    73-character one left only the id column and printed the suspects' why one character
    a line. Now each table keeps its columns, a long id is shortened there and written
    once in full below."""
    store, env = long_ids
    r = jobmon("report", "--since=1d", f"--store={store}", env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    assert len(lines) < 50, r.stdout
    for job in (ID42, ID73, PLAIN73):
        assert r.stdout.count(job) == 1, job
    wasters = lines[next(i for i, x in enumerate(lines) if x.startswith("top wasters")):]
    header = next(x for x in wasters if " job " in x)
    assert re.search(r" job +user +given .* outcome", header), header
    assert "submi…#1234567.0" in r.stdout and "schedd01#4712.0" in r.stdout \
        and "analysi…xxxxxx.7" in r.stdout
    assert sum("CPU at ~0 in" in x for x in lines) == 3     # the suspects' why, whole
    assert sum(" goodput" in x for x in wasters) >= 3
    # `jobmon query` of one: the id once, whole, in its verdict
    out = query(PLAIN73, store, env)
    lines = out.splitlines()
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    assert lines[0].startswith(f"job {PLAIN73}") and out.count(PLAIN73) == 1


@needs_root
def test_energy_and_network_say_why_they_are_not_there(tmp_path):
    """No node reader: both say so. A node reader on a node without RAPL (and with network
    counting off): the energy says the reader's reason, the network its own."""
    from node_site import NodeReader
    store, env = str(tmp_path / "s.db"), env_for(tmp_path, JOBMON_GPU="off",
                                                JOBMON_NODE_DIR=str(tmp_path / "none"))
    r = jobmon_run(["--job-id=plain"], ["true"], store=store, env=env)
    assert r.returncode == 0, r.stderr
    text = " ".join(query("plain", store, env).split())
    assert "energy: not available: no node reader ran beside the job" in text
    assert "network: not available: no node reader ran beside the job" in text
    n = NodeReader(None, "", ["--no-network"]).start()
    try:
        r = jobmon_run(["--job-id=norapl"], ["true"], store=store, env=dict(env, **n.env()))
        assert r.returncode == 0, r.stderr
    finally:
        n.close()
    text = " ".join(query("norapl", store, env).split())
    assert "energy: not available: no cpu/dram: no RAPL on this node (/nonexistent is " \
           "missing)" in text, text
    assert "network: not available:" in text
    rows = {r["field"]: r["value"] for r in json.loads(query("norapl", store, env,
                                                             "--json"))["node"]}
    assert rows["energy_parts"].startswith("not available: no cpu/dram: no RAPL")


def test_a_running_job_says_it_is_running(tmp_path):
    """While the job runs, its verdict and its header say so (not "running or ended
    without a summary"), with its figures so far."""
    import subprocess
    from helpers import JOBMON
    store, env = str(tmp_path / "s.db"), env_for(tmp_path)
    stop = tmp_path / "stop"
    p = subprocess.Popen([JOBMON, "run", "--interval=0.1", "--job-id=live", f"--store={store}",
                          "--tag=request_cpus=1", "--", *py(
                              "import os, time\nwhile not os.path.exists(%r): time.sleep(0.05)"
                              % str(stop))], env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            r = jobmon("query", "live", f"--store={store}", env=env)
            if r.returncode == 0 and "samples (" in r.stdout or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        lines = r.stdout.splitlines()
        assert re.match(r"job live — running, [\d.]+ s so far: figures up to its latest "
                        r"sample$", lines[0]), lines[:3]
        assert "used of 1" in lines[1]
        assert "— running: figures up to its latest sample —" in r.stdout
        assert "ended without a summary" not in r.stdout
    finally:
        stop.write_text("")
        assert p.wait(30) == 0, p.stderr.read()
