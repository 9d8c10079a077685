"""Real workloads under the real `jobmon run`: accuracy against what the workload measures
itself, in real cgroups (root) and through procfs (an unprivileged user); races; many
concurrent jobs into one store; tags and `jobmon query` / `jobmon list`."""
import csv
import io
import json
import os
import re
import subprocess
import time

import pytest

from helpers import (IS_ROOT, JOBMON, PYTHON, TEST_USER, as_user, cgroup_tree, cpu_tolerance,
                     is_job_cgroup, job_cgroup_method, jobmon, jobmon_run, load_json,
                     needs_root, needs_test_user, py, root, shared_tmpdir)

from jobmon import cgroups
from jobmon.stores.fingerprint import digest

MiB = 1 << 20
SPIKE = 128 * MiB

# The ground truth of CPU comes from parents: a process's own getrusage(RUSAGE_SELF) before
# it exits leaves out its exit teardown (unmapping a 128 MiB spike, interpreter shutdown),
# which only its parent sees, in RUSAGE_CHILDREN after reaping it. So the main process
# reaps every child it forks and records RUSAGE_CHILDREN; the escaped daemon has its CPU
# burnt by a worker it reaps the same way. What is left unmeasured is the exit of those
# two processes themselves, which leave with os._exit (no interpreter shutdown).
# Every process also writes a record to argv[1] (tags, and the spike's VmRSS / VmHWM).
WORKLOAD = r"""
import os, resource, sys, time
out = sys.argv[1]
SPIKE = int(sys.argv[2])

def burn(sec):
    t = time.process_time()
    while time.process_time() - t < sec:
        pass

def cpu(who):
    ru = resource.getrusage(who)
    return ru.ru_utime + ru.ru_stime

def record(tag, extra=""):
    with open(os.path.join(out, "%s-%d" % (tag, os.getpid())), "w") as f:
        f.write("%r %r %s" % (cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN), extra))

def vm(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024

with open("/proc/self/cgroup") as f, open(os.path.join(out, "cgroup"), "w") as g:
    g.write(f.read())
# 20 short-lived children, each far shorter than the sampling interval
for i in range(20):
    p = os.fork()
    if p == 0:
        burn(0.02); record("short"); os._exit(0)
    os.waitpid(p, 0)
# a memory spike of 0.2 s in a child, between two samples
p = os.fork()
if p == 0:
    b = bytearray(SPIKE)
    for i in range(0, SPIKE, 4096):
        b[i] = 1
    record("spike", "%d %d" % (vm("VmRSS:"), vm("VmHWM:")))
    time.sleep(0.2)
    os._exit(0)
os.waitpid(p, 0)
# a double-forked setsid daemon that escapes the tree and outlives the command: it starts
# its work once the command has exited (the pipe's last writer gone), however busy the
# machine
r, w = os.pipe()
p = os.fork()
if p == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in (0, 1, 2, w):
            os.close(fd)
        os.read(r, 1)
        worker = os.fork()
        if worker == 0:
            burn(0.3); os._exit(0)
        os.waitpid(worker, 0)
        record("daemon"); os._exit(0)
    record("middle"); os._exit(0)
os.close(r)
os.waitpid(p, 0)
burn(0.5)
record("main")
os._exit(0)
"""


def truth(d):
    """(total CPU s of every process, peak VmRSS of the spike, its VmHWM, records by tag).

    The total is what main and the daemon used themselves plus what their reaped children
    cost (short, spike, middle; the daemon's worker)."""
    cpu, tags, rss, hwm = 0.0, {}, 0, 0
    for name in os.listdir(d):
        if name == "cgroup" or name.endswith(".py"):
            continue
        tag = name.split("-")[0]
        fields = open(os.path.join(d, name)).read().split()
        if tag in ("main", "daemon"):
            cpu += float(fields[0]) + float(fields[1])
        tags[tag] = tags.get(tag, 0) + 1
        if tag == "spike":
            rss, hwm = int(fields[2]), int(fields[3])
    return cpu, rss, hwm, tags


def run_workload(tmp, args, user=None):
    d = os.path.join(tmp, "records")
    os.mkdir(d)
    os.chmod(d, 0o1777)
    script = os.path.join(tmp, "workload.py")
    with open(script, "w") as f:
        f.write(WORKLOAD)
    os.chmod(script, 0o644)
    summary = os.path.join(tmp, "summary.json")
    p = subprocess.Popen(
        ([JOBMON, "run"] if not user else as_user([JOBMON, "run"], user)) +
        ["--interval=2", f"--summary={summary}", f"--store={os.path.join(tmp, 'store.db')}"] +
        list(args) + ["--", PYTHON, script, d, str(SPIKE)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    return p.pid, load_json(summary), truth(d), err.decode(), d


def check_accuracy(s, t):
    cpu, rss, hwm, tags = t
    assert tags == {"short": 20, "spike": 1, "daemon": 1, "middle": 1, "main": 1}
    got = s["cpu_user_seconds"] + s["cpu_system_seconds"]
    assert abs(got - cpu) <= cpu_tolerance(cpu), (got, cpu)
    assert s["exit_code"] == 0 and s["signal"] is None
    # a 0.2 s spike between samples (interval 2 s) is in the resident peak
    assert rss >= SPIKE
    assert s["rss_peak_bytes"] >= 0.9 * rss, (s["rss_peak_bytes"], rss)
    assert s["rss_peak_bytes"] <= hwm + 64 * MiB, (s["rss_peak_bytes"], hwm)
    assert s["wall_seconds"] >= 1.0  # the daemon outlived the command: the job lasted till then
    assert s["samples"] >= 1


def _job_cgroup_gone(pid, recorded):
    """The cgroup jobmon made (named jobmon-<pid>) held the workload and is gone now."""
    paths = cgroups.parse_proc_cgroup(recorded)
    mounts, own = cgroups.own()
    found = 0
    for key, path in paths.items():
        if is_job_cgroup(path, pid):
            found += 1
            base = cgroups.resolve(mounts, own, key)
            assert base and not os.path.exists(os.path.join(base, os.path.basename(path))), key
    return found


@root
@needs_root
def test_root_cgroup_v1(tmp_path):
    if not (cgroups.resolve(*cgroups.own(), "cpuacct") and cgroups.resolve(*cgroups.own(), "memory")):
        pytest.skip("no cgroup v1 cpuacct+memory here")
    pid, s, t, err, d = run_workload(str(tmp_path), ["--cgroup=create", "--cgroup-version=1"])
    assert s["method"] == "cgroup-v1", err
    check_accuracy(s, t)
    # the kernel's high-water mark of the cgroup saw the spike too
    assert s["mem_peak_bytes"] >= 0.9 * t[1]
    assert _job_cgroup_gone(pid, open(os.path.join(d, "cgroup")).read()) >= 2


@root
@needs_root
def test_root_auto_uses_a_cgroup(tmp_path):
    pid, s, t, err, d = run_workload(str(tmp_path), [])
    assert s["method"] == job_cgroup_method() != "procfs", err
    check_accuracy(s, t)
    assert _job_cgroup_gone(pid, open(os.path.join(d, "cgroup")).read()) >= 1


@root
@needs_root
def test_root_cgroup_v2_create(tmp_path):
    mounts, own = cgroups.own()
    if not cgroups.resolve(mounts, own, "v2"):
        pytest.skip("no cgroup2 mount")
    pid, s, t, err, d = run_workload(str(tmp_path), ["--cgroup=create", "--cgroup-version=2"])
    assert s["method"] == "cgroup-v2", err
    check_accuracy(s, t)
    assert _job_cgroup_gone(pid, open(os.path.join(d, "cgroup")).read()) == 1


@needs_test_user
def test_unprivileged_procfs(tmp_path):
    tmp = shared_tmpdir()
    try:
        pid, s, t, err, d = run_workload(tmp, [], user=TEST_USER)
        assert s["method"] == "procfs"
        assert s["user"] == TEST_USER
        check_accuracy(s, t)
        # it says why it waits: for the daemon, and its worker if it has started it
        assert re.search(r"waiting for [12] process", err), err
    finally:
        subprocess.run(["rm", "-rf", tmp])


def test_procfs_mode_as_caller(tmp_path):
    """--cgroup none works for whoever runs the tests (root or not)."""
    pid, s, t, err, d = run_workload(str(tmp_path), ["--cgroup=none"])
    assert s["method"] == "procfs"
    check_accuracy(s, t)


MODES = {"procfs": ["--cgroup=none"],
         "cgroup-v1": ["--cgroup=create", "--cgroup-version=1"],
         "cgroup-v2": ["--cgroup=create", "--cgroup-version=2"]}
# three processes alive at once; each writes a line, so the workload proves they overlapped
THREE = ("for i in 1 2; do (echo up; sleep 0.6) & done; echo up; sleep 0.3; wait")


# the v2 modes also run in the cgroup v2 guest (on a hybrid host: a v2 cgroup without
# controllers, which jobmon makes when told to)
MODE_PARAMS = [pytest.param(m, marks=cgroup_tree) if m == "cgroup-v2" else m for m in MODES]


def _mode_ok(mode):
    if mode != "procfs" and not IS_ROOT:
        pytest.skip("needs root")


@pytest.mark.parametrize("mode", MODE_PARAMS)
@pytest.mark.parametrize("interval", [0.05, 5])
def test_processes_counted(tmp_path, mode, interval):
    """procs_max counts the job's processes, also when the job is shorter than one interval."""
    _mode_ok(mode)
    summary = tmp_path / "s.json"
    r = jobmon_run(MODES[mode] + [f"--interval={interval}", f"--summary={summary}"],
                   ["sh", "-c", THREE], store=str(tmp_path / "s.db"))
    assert r.returncode == 0 and r.stdout == b"up\n" * 3, r.stderr
    s = load_json(summary)
    if s["method"] != mode:
        pytest.skip(f"{mode} not available here")
    # sh and two background subshells (plus their sleeps) were alive together
    assert s["procs_max"] >= 3, s
    assert s["procs_max"] <= 6, s


@pytest.mark.parametrize("mode", MODE_PARAMS)
def test_one_process_is_one(tmp_path, mode):
    """A job of one process has a peak of one: the exec trampoline, which starts it from
    inside its cgroup, is not counted although the pids high-water mark saw it."""
    _mode_ok(mode)
    summary = tmp_path / "s.json"
    r = jobmon_run(MODES[mode] + ["--interval=0.1", f"--summary={summary}"],
                   ["sleep", "0.3"], store=str(tmp_path / "s.db"))
    assert r.returncode == 0, r.stderr
    s = load_json(summary)
    if s["method"] != mode:
        pytest.skip(f"{mode} not available here")
    assert (s["procs_max"], s["threads_max"]) == (1, 1), s


NEAR_ZERO_RUNS = 25


def negative_figures(summary, samples):
    """Every CPU figure below zero in a job's summary and samples."""
    return [(k, v) for d in [summary] + samples for k, v in d.items()
            if k.startswith("cpu_") and isinstance(v, (int, float)) and v < 0]


@pytest.mark.parametrize("mode", ["procfs", "cgroup"])
def test_a_near_zero_job_never_has_a_negative_figure(mode):
    """`true`, 25 times: no CPU figure of the summary or of any sample is below zero --
    the exec trampoline's CPU, which jobmon takes off the job's, came off user time where
    the cgroup had counted it as system time (as root, in the cgroup a root job gets here:
    v1 on a hybrid host, v2 on a pure v2 one; procfs as the test user, where it comes off
    the very figures wait4 gave)."""
    user = None
    if mode == "cgroup":
        _mode_ok(mode)
        mode = job_cgroup_method()
    elif IS_ROOT:
        user = TEST_USER
    d = shared_tmpdir()
    bad = []
    for n in range(NEAR_ZERO_RUNS):
        summary, out = os.path.join(d, f"s{n}.json"), os.path.join(d, f"o{n}.jsonl")
        r = jobmon_run(MODES[mode] + ["--interval=0.05", f"--summary={summary}",
                                      f"--out={out}"], ["true"], store="none", user=user)
        assert r.returncode == 0, r.stderr
        s = load_json(summary)
        if s["method"] != mode:
            pytest.skip(f"{mode} not available here")
        with open(out) as f:
            bad += negative_figures(s, [json.loads(line) for line in f])
    assert not bad, bad


def test_the_trampolines_cpu_comes_off_system_time_first():
    """The cgroup's own split of the trampoline's CPU, as cgroup v1 reported a `true`
    (recorded): its ~1 ms in system time, the job's own user time 0."""
    from jobmon.job.sampler import take_off
    values = {"cpu_user_seconds": 0.0, "cpu_system_seconds": 0.002217}
    take_off(values, 0.001043)
    assert values == {"cpu_user_seconds": 0.0, "cpu_system_seconds": pytest.approx(0.001174)}
    values = {"cpu_user_seconds": 0.0009, "cpu_system_seconds": 0.0004}    # split otherwise
    take_off(values, 0.001043)
    assert values == {"cpu_user_seconds": pytest.approx(0.000257), "cpu_system_seconds": 0.0}
    values = {"cpu_user_seconds": 0.0002, "cpu_system_seconds": 0.0001}    # counted less
    take_off(values, 0.001043)
    assert values == {"cpu_user_seconds": 0.0, "cpu_system_seconds": 0.0}


def test_no_wait_ends_with_the_command(tmp_path):
    code = ("import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid(); [os.close(i) for i in (0, 1, 2)]; time.sleep(3); os._exit(0)\n")
    summary = tmp_path / "s.json"
    t0 = time.monotonic()
    r = jobmon_run(["--no-wait", "--cgroup=none", f"--summary={summary}"], py(code),
                   store=str(tmp_path / "s.db"))
    assert r.returncode == 0
    assert time.monotonic() - t0 < 2.5
    s = load_json(summary)
    assert s["leftover_procs"] == 1 and s["procs_killed_at_end"] is None   # no one knows


# --- races: processes exiting while being read ------------------------------------------------------

CHURN = r"""
import os, sys, time
sys.stdout.write("ready\n"); sys.stdout.flush()
while True:
    p = os.fork()
    if p == 0:
        if os.fork() == 0:
            os._exit(0)          # a grandchild, orphaned at once
        time.sleep(0.0005)
        os._exit(0)
    if p % 3:
        os.waitpid(p, 0)         # the rest stay zombies a moment, reaped below
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
"""


def _churn(preexec=None):
    p = subprocess.Popen([PYTHON, "-c", CHURN], stdout=subprocess.PIPE, preexec_fn=preexec)
    assert p.stdout.readline() == b"ready\n"
    return p


def _hammer(probe, n=1000):
    for i in range(n):
        out = probe.read()
        assert out["cpu_user_seconds"] >= 0 and out["cpu_system_seconds"] >= 0
        assert out["procs"] >= 0
        if i % 50 == 0:
            probe.pids()
            probe.alive()


def test_race_procfs_probe_1000_reads():
    from jobmon.probes.procfs import ProcfsProbe
    p = _churn()
    try:
        probe = ProcfsProbe(p.pid)
        _hammer(probe)
        assert probe.read()["procs"] >= 1
    finally:
        p.kill()
        p.wait()
    probe.read()   # the whole tree is gone: still no exception
    probe.close()


@root
@needs_root
@pytest.mark.parametrize("version", [1, 2])
def test_race_cgroup_probe_1000_reads(version):
    from jobmon.probes import select
    cg = cgroups.create(f"jobmon-pytest-race-{os.getpid()}", prefer=version)
    if cg is None:
        pytest.skip(f"cannot create a cgroup v{version}")
    try:
        p = _churn(cg.join)
        try:
            probe = select(cgroups=cg)
            assert probe.method == f"cgroup-v{version}"
            _hammer(probe)
            assert probe.alive()
        finally:
            p.kill()
            p.wait()
        probe.read()   # the tree just died (zombies, orphans): still no exception
        probe.close()
    finally:
        cg.remove()


def test_many_concurrent_jobs_one_store(tmp_path):
    store = str(tmp_path / "shared.db")
    procs = []
    for i in range(8):
        procs.append(subprocess.Popen(
            [JOBMON, "run", "--interval=0.02", f"--job-id=conc-{i}", f"--store={store}",
             f"--summary={tmp_path / f's{i}.json'}", "--cgroup=none", "--",
             PYTHON, "-c", "import time; t = time.time()\nwhile time.time() - t < 1.0: pass"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert b"warning" not in err, err
    from jobmon.stores.local import LocalStore
    st = LocalStore(store)
    for i in range(8):
        s = load_json(tmp_path / f"s{i}.json")
        rec = st.job(f"conc-{i}")
        assert rec is not None and rec.summary is not None
        assert s["samples"] >= 10
        assert len(rec.samples) == s["samples"], i   # not one sample lost
        assert rec.summary == json.loads(json.dumps(s, default=str)) or \
            rec.summary["samples"] == s["samples"]
    assert len(st.jobs(100)) == 8


def _open_new_store(path, barrier, results):
    from jobmon.stores.local import LocalStore
    barrier.wait()                  # all at once, as jobs that start together
    try:
        st = LocalStore(path)
        st.open({"job": f"new-{os.getpid()}", "start_time": time.time()})
        st.close({"end_time": time.time()})
        results.put("ok")
    except Exception as e:
        results.put(repr(e))


def test_jobs_that_start_together_into_a_new_store_all_keep_their_record(tmp_path):
    """Eight writers that make one new store at the same moment: SQLite answers some of
    them "database is locked" at once while the first sets WAL and makes the tables
    (seen in 9 of 30 rounds of 6); each still gets its record in."""
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    for n in range(10):
        path = str(tmp_path / f"new-{n}.db")
        barrier, results = ctx.Barrier(8), ctx.Queue()
        procs = [ctx.Process(target=_open_new_store, args=(path, barrier, results))
                 for _ in range(8)]
        for p in procs:
            p.start()
        got = [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert got == ["ok"] * 8, (n, got)
        from jobmon.stores.local import LocalStore
        assert len(LocalStore(path).jobs(100)) == 8


# --- tags, query, list --------------------------------------------------------------------------------

HOSTILE_TAGS = {
    "quote": "it's \"quoted\" `x`",
    "comma": "a,b,c",
    "equals": "k=v=w",
    "newline": "line1\nline2\r\n",
    "space": "  spaced out  ",
    "unicode": "ünïcödé ✓ 日本",
    "empty": "",
    "backslash": "C:\\path\\",
    "lp": "m,t=1 f=2i 123",   # InfluxDB line-protocol look-alike
    "big": "x" * 10240,
    "dots.and-dashes_1": "ok",
}


def test_hostile_tags_round_trip(tmp_path):
    store = str(tmp_path / "store.db")
    r = jobmon_run(["--job-id=tagged job/1", "--interval=0.1"] +
                   [f"--tag={k}={v}" for k, v in HOSTILE_TAGS.items()],
                   ["true"], store=store)
    assert r.returncode == 0, r.stderr
    q = jobmon("query", "tagged job/1", "--json", f"--store={store}")
    assert q.returncode == 0, q.stderr
    rep = json.loads(q.stdout)
    # what it ran, as a hash beside them (jobmon.stores.fingerprint)
    ran = {"command_hash": digest(rep["job"]["command"])}
    assert rep["job"]["tags"] == HOSTILE_TAGS and rep["job"]["ran"] == ran
    assert rep["summary"]["tags"] == dict(HOSTILE_TAGS, **ran)
    assert rep["job"]["job"] == "tagged job/1"


@pytest.mark.parametrize("bad", ["bad key=1", "=v", "novalue", "k,x=1", "k\n=1", 'k"=1',
                                 "k/x=1"])
def test_invalid_tag_key_rejected_before_running(tmp_path, bad):
    marker = tmp_path / "ran"
    r = jobmon_run([f"--tag={bad}"], py(f"open({str(marker)!r}, 'w')"),
                   store=str(tmp_path / "s.db"))
    assert r.returncode == 2, (bad, r.stderr)
    err = r.stderr.decode()
    assert "tag" in err and "Traceback" not in err
    assert not marker.exists()
    assert not (tmp_path / "s.db").exists()


def test_query_list_json_csv(tmp_path):
    store = str(tmp_path / "store.db")
    summary = tmp_path / "s.json"
    r = jobmon_run(["--job-id=q1", "--interval=0.05", f"--summary={summary}", "--tag=a=b"],
                   py("import time; time.sleep(0.4)"), store=store)
    assert r.returncode == 0, r.stderr
    s = load_json(summary)
    env = dict(os.environ, COLUMNS="200")
    env.pop("JOBMON_STORE", None)
    q = jobmon("query", "q1", "--json", f"--store={store}", env=env)
    assert q.returncode == 0, q.stderr
    rep = json.loads(q.stdout)
    assert rep["summary"]["samples"] == len(rep["samples"]) == s["samples"] >= 3
    assert rep["summary"]["cpu_user_seconds"] == s["cpu_user_seconds"]
    c = jobmon("query", "q1", "--csv", "--samples", f"--store={store}", env=env)
    assert c.returncode == 0, c.stderr
    rows = list(csv.DictReader(io.StringIO(c.stdout)))
    assert len(rows) == s["samples"]
    assert all(row["method"] == s["method"] for row in rows)
    assert [float(row["cpu_user_seconds"]) for row in rows] == \
        [x["cpu_user_seconds"] for x in rep["samples"]]
    t = jobmon("query", "q1", f"--store={store}", env=env)
    assert t.returncode == 0 and "q1" in t.stdout
    lst = jobmon("list", f"--store={store}", env=env)
    assert lst.returncode == 0 and "q1" in lst.stdout
    # also through $JOBMON_STORE
    lst = jobmon("list", env=dict(env, JOBMON_STORE=store))
    assert lst.returncode == 0 and "q1" in lst.stdout


def test_query_unknown_job(tmp_path):
    store = str(tmp_path / "store.db")
    assert jobmon_run([], ["true"], store=store).returncode == 0
    for extra in ([], ["--json"], ["--csv"]):
        q = jobmon("query", "no-such-job", f"--store={store}", *extra)
        assert q.returncode == 1
        assert "no-such-job" in q.stderr and "Traceback" not in q.stderr
        assert q.stdout == ""


def test_query_without_store(tmp_path):
    q = jobmon("query", "x", f"--store={tmp_path / 'none.db'}")
    assert q.returncode != 0 and "Traceback" not in q.stderr
    assert "none.db" in q.stderr or "store" in q.stderr


def test_out_jsonl_and_csv_to_stdout(tmp_path):
    r = jobmon_run(["--out=-", "--interval=0.05", "--job-id=o1"], py("import time; time.sleep(0.3)"),
                   store=str(tmp_path / "s.db"), text=True)
    assert r.returncode == 0
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(lines) >= 3 and all("cpu_user_seconds" in x for x in lines)
    r = jobmon_run(["--out=-", "--format=csv", "--interval=0.05"], ["sleep", "0.3"],
                   store=str(tmp_path / "s.db"), text=True)
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) >= 3 and all(row["elapsed_seconds"] for row in rows)


def test_summary_keys(tmp_path):
    summary = tmp_path / "s.json"
    r = jobmon_run([f"--summary={summary}"], ["true"], store=str(tmp_path / "s.db"))
    assert r.returncode == 0
    s = load_json(summary)
    for k in ("job", "method", "exit_code", "signal", "wall_seconds", "cpu_user_seconds",
              "cpu_system_seconds", "rss_peak_bytes", "mem_peak_bytes", "read_bytes",
              "write_bytes", "procs_max", "samples"):
        assert k in s, k


@pytest.mark.parametrize("mode", ["cgroup", "procfs"])
def test_many_processes_all_counted(tmp_path, mode):
    """More processes than one kernel page of cgroup.procs holds (~700 pids): all counted
    (in the cgroup a root job gets here, v1 or v2, or by procfs)."""
    if mode == "cgroup" and not IS_ROOT:
        pytest.skip("needs root")
    n = 900
    summ = tmp_path / "s.json"
    # the sleepers start before the first sample and live well past it
    cmd = ["sh", "-c", f"i=0; while [ $i -lt {n} ]; do sleep 8 & i=$((i+1)); done; wait"]
    # 0.5 s: re-reads within a second are what kept a cached v1 pid list alive
    args = [f"--summary={summ}", "--interval=0.5",
            "--cgroup=create" if mode == "cgroup" else "--cgroup=none"]
    r = jobmon_run(args, cmd, store=str(tmp_path / "db"))
    assert r.returncode == 0, r.stderr
    s = load_json(summ)
    assert s["method"] == (job_cgroup_method() if mode == "cgroup" else mode)
    assert s["procs_max"] >= n + 1, s
    assert s["threads_max"] >= n + 1, s


def test_procfs_scan_and_children_walk_agree():
    """The /proc scan (kernels without CONFIG_PROC_CHILDREN) finds the same tree as the walk."""
    from jobmon.probes.procfs import ProcfsProbe
    p = subprocess.Popen(["sh", "-c", "for i in $(seq 50); do sleep 5 & done; "
                          "(sh -c 'sleep 5 & sleep 5') & wait"])
    try:
        walk, scan = ProcfsProbe(p.pid), ProcfsProbe(p.pid)
        scan.has_children = False
        deadline = time.monotonic() + 10
        while len(walk.pids()) < 53 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(walk.pids()) >= 53
        assert walk.pids() == scan.pids()
        assert walk.read()["procs"] == scan.read()["procs"]
    finally:
        subprocess.run(["pkill", "-P", str(p.pid)])
        p.kill()
        p.wait()
