"""The per-process breakdown on real processes: grouped by command name, top N by CPU and
by memory, command lines only where allowed, in procfs and cgroup mode, through the spool's
grammar and InfluxDB to `jobmon query`, and what it costs the sampler."""
import json
import os
import re
import sqlite3
import subprocess
import sys
import time

import pytest

from helpers import IS_ROOT, JOBMON, jobmon, jobmon_run, needs_root
from jobmon.influx import grammar, schema
from jobmon.probes.breakdown import Breakdown, parse_stat
from jobmon.probes.files import cpu_clock, read_once

# the write and read path also as configured for InfluxDB 3 (conftest: site_flavour)
SITE_FLAVOURS = ("1.x", "3.x")

# a process that names itself (comm) and then burns CPU or holds memory
NAMED = r"""
import ctypes, sys, time
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)   # PR_SET_NAME
end = time.time() + float(sys.argv[3])
if sys.argv[2] == "burn":
    while time.time() < end: pass
else:
    block = bytearray(int(sys.argv[2]) << 20)
    for i in range(0, len(block), 4096): block[i] = 1
    time.sleep(max(end - time.time(), 0))
"""
JOB = (f"{sys.executable} -c '{NAMED}' burner burn {{t}} & "
       f"{sys.executable} -c '{NAMED}' holder 64 {{t}} & "
       "sleep {t} & sleep {t} & sleep {t} & wait")


def named(name, what, seconds):
    return subprocess.Popen([sys.executable, "-c", NAMED, name, what, str(seconds)])


def breakdowns(store):
    db = sqlite3.connect(store)
    return [json.loads(d) for (d,) in db.execute("SELECT data FROM procs ORDER BY time")]


def method(store):
    return sqlite3.connect(store).execute("SELECT method FROM runs").fetchone()[0]


def groups(record):
    return {g["comm"]: g for g in record["top"]}


def wait_named(procs, names):
    deadline = time.time() + 10
    while time.time() < deadline:
        got = {parse_stat(read_once(b"/proc/%d/stat" % p.pid))[0].decode() for p in procs}
        if got == set(names):
            return
        time.sleep(0.05)
    raise AssertionError(f"processes did not name themselves: {got}")


def wait_touched(proc, size, timeout=30):
    """Until `proc` has `size` bytes resident (a holder has touched its block)."""
    deadline = time.monotonic() + timeout
    while parse_stat(read_once(b"/proc/%d/stat" % proc.pid))[4] <= size:
        assert time.monotonic() < deadline, "the holder never touched its block"
        time.sleep(0.05)


def test_stat_parsing_takes_the_name_between_the_first_and_last_parenthesis():
    p = named("a) (b c", "1", 3)
    try:
        wait_named([p], ["a) (b c"])
        comm, state, ticks, start, rss = parse_stat(read_once(b"/proc/%d/stat" % p.pid))
        assert comm == b"a) (b c" and state in (b"R", b"S") and start > 0 and rss > 1 << 20
    finally:
        p.kill()
        p.wait()


def test_top_n_by_cpu_and_by_memory_with_real_processes():
    procs = [named("burner", "burn", 4), named("holder", "64", 4), named("idle", "1", 4),
             named("idle", "1", 4)]
    try:
        wait_named(procs, ["burner", "holder", "idle"])
        wait_touched(procs[1], 64 << 20)   # its CPU is the burner's rival until then
        b = Breakdown(lambda: [p.pid for p in procs], top=1, every=0.1)
        b.take(0.0)
        time.sleep(1.0)
        rec = b.take(1.0)
        g = groups(rec)
        # top 1 by CPU (burner) plus top 1 by memory (holder); the idle pair is left out
        assert [x["comm"] for x in rec["top"]] == ["burner", "holder"], rec
        assert rec["procs"] == 4 and 0.9 <= rec["window_seconds"] <= 1.5
        assert g["burner"]["cpu_cores"] > max(0.05, 5 * g["holder"]["cpu_cores"])
        assert g["holder"]["rss_bytes"] > 64 << 20 > g["burner"]["rss_bytes"]
        assert "cmdline" not in g["burner"]
        rec = Breakdown(lambda: [p.pid for p in procs], top=5, with_cmdline=True).take()
        g = groups(rec)
        cmd = g["idle"]["cmdline"]     # NUL-separated argv as one line, cut to 256
        assert g["idle"]["procs"] == 2 and cmd.startswith(f"{sys.executable} -c ")
        assert "prctl(15" in cmd and len(cmd) == 256
        assert rec["window_seconds"] is None      # first take: averages over each life
    finally:
        for p in procs:
            p.kill()
            p.wait()


# a parent that sleeps while its child waits for a byte on their stdin, then exits unreaped
# (SIGCHLD is ignored, so its exit does not wake the parent)
PARENT = r"""
import os, sys, time
pid = os.fork()
if pid == 0:
    os.read(0, 1)
    os._exit(0)
print(pid, flush=True)
time.sleep(float(sys.argv[1]))
"""


def asleep(pid):
    """Wait until `pid` has stopped running (its CPU clock still for 0.1 s)."""
    deadline, clock = time.time() + 10, cpu_clock(pid)
    while True:
        ns = time.clock_gettime_ns(clock)
        time.sleep(0.1)
        if time.clock_gettime_ns(clock) == ns:
            return
        assert time.time() < deadline


def ran_since(pid, ns):
    """Wait until `pid`'s CPU clock has passed `ns`: the clock of a process that is running
    moves when the scheduler updates it (a tick, a switch), not at every read."""
    deadline = time.time() + 10
    while time.clock_gettime_ns(cpu_clock(pid)) <= ns:
        assert time.time() < deadline
        time.sleep(0.01)


def test_a_process_that_did_not_run_costs_no_file_and_keeps_its_zombies():
    """Cgroup mode lists live pids: a second take reads the stat and children of those that
    ran since (the burner), only the CPU clock of the idle parent, whose zombie child is
    still counted from the children it had."""
    burner = named("burner", "burn", 30)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, "30"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    opened, real = [], os.open
    try:
        child = int(parent.stdout.readline())
        wait_named([burner], ["burner"])
        asleep(parent.pid)
        live = [parent.pid, child, burner.pid]
        comm = parse_stat(read_once(b"/proc/%d/stat" % parent.pid))[0].decode()
        b = Breakdown(lambda: list(live), top=5, every=0.1)
        first = groups(b.take(0.0))
        burnt = time.clock_gettime_ns(cpu_clock(burner.pid))
        assert first[comm]["procs"] == 2 and first[comm]["states"].get("Z") is None
        parent.stdin.write(b"x")
        parent.stdin.flush()
        deadline = time.time() + 10
        while parse_stat(read_once(b"/proc/%d/stat" % child))[1] != b"Z":
            assert time.time() < deadline
            time.sleep(0.05)
        live.remove(child)            # as cgroup.procs drops a zombie
        ran_since(burner.pid, burnt + 50_000_000)   # (its stat counts 10 ms ticks)
        os.open = lambda path, *a, **k: opened.append(os.fsencode(path)) or real(path, *a, **k)
        rec = b.take(1.0)
        os.open = real
        files = {x.rsplit(b"/", 1)[1] for x in opened if x.startswith(b"/proc/%d/" % parent.pid)}
        assert files <= {b"wchan"}, opened     # (where it waits: read for the groups shown)
        assert b"/proc/%d/stat" % burner.pid in opened and b"/proc/%d/stat" % child in opened
        g = groups(rec)
        assert g[comm]["procs"] == 2 and g[comm]["states"]["Z"] == 1, rec
        assert g["burner"]["cpu_cores"] > 0, rec
    finally:
        os.open = real
        parent.stdin.close()          # (its child, if still waiting, ends too)
        for p in (burner, parent):
            p.kill()
            p.wait()


@pytest.mark.parametrize("mode", ["none", "create"])
def test_sampler_writes_breakdowns_in_procfs_and_cgroup_mode(tmp_path, mode):
    if mode == "create" and not IS_ROOT:
        pytest.skip("a transient cgroup needs root")
    store = str(tmp_path / "s.db")
    env = dict(os.environ, JOBMON_PROCS_EVERY_SECONDS="0.7", JOBMON_PROCS_TOP="3")
    r = jobmon_run(["--interval=0.2", f"--cgroup={mode}", "--job-id=bd"],
                   ["sh", "-c", JOB.format(t=3)], store=store, env=env)
    assert r.returncode == 0, r.stderr
    assert method(store) == ("procfs" if mode == "none" else f"cgroup-v{method(store)[-1]}")
    recs = breakdowns(store)
    assert 2 <= len(recs) <= 5, recs      # every 0.7 s of a 3 s job, first at 0.7 s
    # sh, burner, holder, 3 sleep (the last may see the job ending); the latest taken
    # after the holder touched its 64 MiB, so its CPU then is not the burner's rival
    full = [r for r in recs if r["procs"] == 6]
    assert full, recs
    touched = [r for r in full if groups(r).get("holder", {}).get("rss_bytes", 0) > 64 << 20]
    assert touched, "no breakdown saw the holder's 64 MiB"
    full = touched[-1]
    last = groups(full)
    assert set(last) >= {"burner", "holder", "sleep"}
    # (CPU relative to the others: this shared machine may give the burner little)
    assert last["sleep"]["procs"] == 3 and full["top"][0]["comm"] == "burner"
    assert last["burner"]["cpu_cores"] > max(0.05, 2 * last["holder"]["cpu_cores"])
    assert all("cmdline" not in g for g in recs[-1]["top"])
    # `jobmon query` shows them, as text and as JSON
    q = jobmon("query", "bd", "--store", store)
    assert q.returncode == 0 and "processes by command name over the job" in q.stdout
    assert "burner" in q.stdout and "holder" in q.stdout
    doc = json.loads(jobmon("query", "bd", "--json", "--store", store).stdout)
    assert doc["procs"]["count"] == len(recs)
    assert doc["procs"]["over_job"][0]["comm"] == "burner"


def test_command_lines_only_where_the_site_allows_and_off_switch(tmp_path):
    env = dict(os.environ, JOBMON_PROCS_EVERY_SECONDS="0.5", JOBMON_PROCS_CMDLINE="true")
    store = str(tmp_path / "c.db")
    r = jobmon_run(["--interval=0.2", "--cgroup=none"], ["sh", "-c", JOB.format(t=1.5)],
                   store=store, env=env)
    assert r.returncode == 0, r.stderr
    g = groups(max(breakdowns(store), key=lambda r: r["procs"]))
    assert g["holder"]["cmdline"].startswith(f"{sys.executable} -c ")
    store = str(tmp_path / "off.db")
    r = jobmon_run(["--interval=0.2", "--cgroup=none"], ["sleep", "1.2"], store=store,
                   env=dict(env, JOBMON_PROCS_TOP="0"))
    assert r.returncode == 0 and breakdowns(store) == []


def test_breakdown_lines_are_jobmon_line_protocol_and_bounded():
    tags = {"job": "4711.0", "scheduler": "htcondor"}
    top = [{"comm": f"c{i}", "procs": 1, "cpu_cores": 0.5, "rss_bytes": 1 << 20,
            "cmdline": "x" * 256} for i in range(20)]
    rec = {"time": 10**18, "elapsed_seconds": 30.0, "window_seconds": 30.0, "procs": 20,
           "top": top}
    line = schema.procs_line(tags, rec).encode()
    assert grammar.Checker().first_bad(line) is None
    huge = dict(rec, top=[dict(g, cmdline="\u00e9" * 256) for g in top * 2])
    line = schema.procs_line(tags, huge).encode()
    assert grammar.Checker().first_bad(line) is None and len(line) < schema.MAX_LINE_BYTES
    from jobmon.stores.live import parse_line
    meas, t, fields, _ = parse_line(line)
    got = json.loads(fields["procs_top"])
    assert meas == "jobmon_procs" and t == tags and got and all("cmdline" not in g for g in got)
    bad = line.replace(b"procs_top=", b"procs_tops=")
    assert grammar.Checker().first_bad(bad) == 0     # no field outside the schema


def test_shipped_breakdowns_reach_query_through_influxdb(site):
    site.prepare()
    env = dict(site.env, JOBMON_PROCS_EVERY_SECONDS="0.5")
    r = site.jobmon("run", "--interval=0.2", "--cgroup=none", "--job-id=ship.0", "--",
                    "sh", "-c", JOB.format(t=1.5), env=env)
    assert r.returncode == 0, r.stderr
    site.ship()
    rows = site.rows('SELECT count("procs_top") FROM jobmon_procs')
    assert rows and rows[0]["count"] >= 1
    doc = json.loads(site.jobmon("query", "ship.0", "--json").stdout)
    assert doc["procs"]["over_job"][0]["comm"] == "burner"
    assert {g["comm"] for g in doc["procs"]["over_job"]} >= {"burner", "holder", "sleep"}
    assert doc["procs"]["latest"]["top"] and doc["procs"]["count"] == rows[0]["count"]


MONITOR_HWM = ("sleep 2.5; grep VmHWM /proc/$PPID/status")


@needs_root
def test_breakdown_adds_little_to_the_monitors_memory(tmp_path):
    """The job's parent is jobmon: its high-water mark, with the breakdown every 0.2 s of a
    forked family and without it."""
    hwm = {"0": [], "5": []}
    for top in ("0", "5", "0", "5"):
        env = dict(os.environ, JOBMON_PROCS_EVERY_SECONDS="0.2", JOBMON_PROCS_TOP=top,
                   JOBMON_PROCS_CMDLINE="1")
        r = jobmon_run(["--interval=0.1", "--cgroup=none", "--store=none"],
                       ["sh", "-c", "for i in 1 2 3 4 5 6 7 8; do sleep 3 & done; "
                        + MONITOR_HWM], env=env, text=True)
        assert r.returncode == 0, r.stderr
        hwm[top].append(int(r.stdout.split()[1]) * 1024)
    on, off = min(hwm["5"]), min(hwm["0"])
    assert on - off < 256 << 10, hwm
    assert on <= 16 << 20, hwm      # 15 MiB target + an editable install's ~1.3 MiB


def test_a_failing_breakdown_never_stops_the_samples():
    from jobmon.job.sampler import Sampler

    class Probe:
        method = "fake"

        def read(self, final=False):
            return {"cpu_user_seconds": 1.0, "procs": 1}

        def pids(self):
            raise PermissionError("no")

        def close(self):
            pass
    clock = iter(range(0, 1000, 20)).__next__
    s = Sampler(Probe(), [], {"method": "fake"}, 1.0, monotonic=clock,
                kernel_peak=lambda: 0)
    assert s.breakdown is not None
    s.tick()
    s.tick()
    # the breakdown and the look for network file systems (both list the processes) each
    # warn once and stop; the samples go on
    assert s.breakdown is None and s.netfs is None and s.errors == 2
    assert s.tick()["procs"] == 1 and s.errors == 2


# a parent that holds 64 MiB and forks 3 workers that share it (copy on write) and sleep
WORKERS = ("import os, time\nb = bytearray(64 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
           "kids = [os.fork() for _ in range(3)]\nif 0 in kids:\n    time.sleep(3); os._exit(0)\n"
           "[os.waitpid(k, 0) for k in kids]")


def test_the_tables_say_their_rss_is_summed_and_when_it_was_taken(tmp_path):
    """4 processes sharing 64 MiB: their summed RSS is ~256 MiB, the job's resident memory
    ~64 MiB. query, watch and the HTML page say what the figure is and when it was taken,
    and put the job's resident memory beside it."""
    from chromium import CHROMIUM, Chromium
    store = str(tmp_path / "w.db")
    env = dict(os.environ, JOBMON_PROCS_EVERY_SECONDS="0.5", COLUMNS="80")
    r = jobmon_run(["--interval=0.2", "--job-id=workers"], [sys.executable, "-c", WORKERS],
                   store=store, env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(jobmon("query", "workers", "--json", "--store", store).stdout)
    procs, peak = doc["procs"], doc["summary"]["rss_peak_bytes"]
    summed = max(g["rss_max"] for g in procs["over_job"])
    assert summed > 3 * (64 << 20) and peak < 2 * (64 << 20)    # summed, shared pages in each
    first, last = procs["taken_seconds"]
    assert 0 < first <= last <= doc["summary"]["wall_seconds"]
    assert (64 << 20) <= procs["resident_then_bytes"] < 2 * (64 << 20)
    text = jobmon("query", "workers", "--store", store, env=env).stdout
    assert max(len(x) for x in text.splitlines()) <= 80
    flat = " ".join(text.split())
    assert "RSS summed per command name: a page shared between processes counts in each" in flat
    assert "RSS PEAK the largest sum in one breakdown, not the job's peak" in flat
    assert re.search(r"the latest breakdown, taken at [\d.]+s of the run .*the job's resident "
                     r"memory then: 6\d\.\d MiB", flat), flat
    page = str(tmp_path / "w.html")
    assert jobmon("report", "workers", "--html", page, "--store", store).returncode == 0
    if CHROMIUM:
        with Chromium() as b:
            b.open("file://" + page)
            box = b.evaluate("document.getElementById('section-procs').innerText")
            assert b.problems() == []
        assert re.search(r"taken at [\d.]+s to [\d.]+s of the run", box)
        assert "RSS summed (most)" in box and "counts in each" in box, box


def test_watch_says_what_its_breakdown_is(tmp_path):
    store = str(tmp_path / "w.db")
    env = dict(os.environ, JOBMON_PROCS_EVERY_SECONDS="0.5")
    p = subprocess.Popen([JOBMON, "run", "--interval=0.2", "--job-id=workers2",
                          f"--store={store}", "--", sys.executable, "-c", WORKERS], env=env,
                         stderr=subprocess.PIPE)
    try:
        deadline, out = time.time() + 30, ""
        while time.time() < deadline and "top processes" not in out:
            out = jobmon("watch", "workers2", "--once", "--spool=none",
                         f"--store={store}").stdout
            time.sleep(0.2)
        flat = " ".join(out.split())
        assert re.search(r"top processes, taken at [\d.]+s of the run", flat), out
        assert "summed per command name" in flat and max(map(len, out.splitlines())) <= 80
    finally:
        p.wait(timeout=30)


def test_one_breakdown_is_one(tmp_path):
    """A job over before a second breakdown: "1 breakdown, taken at 0.6s", in query and in
    the HTML page (not "1 breakdowns, taken at 0.6s to 0.6s")."""
    store = str(tmp_path / "one.db")
    env = dict(os.environ, JOBMON_PROCS_EVERY_SECONDS="0.5", COLUMNS="80")
    r = jobmon_run(["--interval=0.2", "--job-id=one"], ["sleep", "0.8"], store=store, env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(jobmon("query", "one", "--json", "--store", store).stdout)
    if doc["procs"]["count"] != 1:
        pytest.skip(f"{doc['procs']['count']} breakdowns on this machine's load")
    flat = " ".join(jobmon("query", "one", "--store", store, env=env).stdout.split())
    assert re.search(r"over the job: 1 breakdown, taken at [\d.]+s of the run", flat), flat
    page = tmp_path / "one.html"
    assert jobmon("report", "one", "--html", str(page), "--store", store).returncode == 0
    assert re.search(r"\(1 breakdown, taken at [\d.]+s of the run\)", page.read_text())
