"""`jobmon top` and `jobmon watch` on real running jobs: from the embedded store and from a
real spool directory, sorted, at 80 columns, job ids never cut, hostile text defused."""
import fcntl
import os
import subprocess
import sys
import time

import pytest

from helpers import JOBMON, as_user, jobmon, needs_root, needs_test_user, shared_tmpdir
from jobmon.influx import schema
from jobmon.render.live import sparkline

BURN = f"{sys.executable} -c 'import time; e=time.time()+{{t}}\nwhile time.time()<e: pass'"
HOLD = (f"{sys.executable} -c 'import time; b=bytearray(96<<20)\n"
        f"for i in range(0,len(b),4096): b[i]=1\ntime.sleep({{t}})'")
EVERY = {"JOBMON_PROCS_EVERY_SECONDS": "0.5"}


def start(job_id, cmd, *args, env=None, store=None):
    argv = [JOBMON, "run", "--interval=0.3", f"--job-id={job_id}", *args]
    argv += [f"--store={store}"] if store else []
    return subprocess.Popen(argv + ["--", "sh", "-c", cmd], env=env or dict(os.environ, **EVERY),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def stop(job):
    """End a job as a scheduler does, so jobmon removes the cgroup it made (a SIGKILL would
    leave it behind)."""
    job.terminate()
    try:
        job.wait(timeout=30)
    except subprocess.TimeoutExpired:
        job.kill()
        job.wait()


def until(check, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError("timed out")


SIZE_UNITS = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"}


def cells(line):
    """A `jobmon top` line's cells: a size and its unit ("96.0 MiB") are one cell."""
    out = []
    for word in line.split():
        if word in SIZE_UNITS and out:
            out[-1] += " " + word
        else:
            out.append(word)
    return out


def job_lines(out, ids):
    return [line.split()[0] for line in out.splitlines() if line.split()[:1]
            and line.split()[0] in ids]


def figures(out):
    """{job: {cores, mem, eff}} from `jobmon top`, an id too long for its column on a line
    of its own with its figures on the next."""
    lines, got = out.splitlines(), {}
    for i, line in enumerate(lines):
        row = cells(line)
        if len(row) == 1 and i + 1 < len(lines) and lines[i + 1].startswith(" "):
            row += cells(lines[i + 1])
        if len(row) >= 8:
            got[row[0]] = {"cores": row[2], "mem": row[4], "eff": row[5]}
    return got


def percent_of(cell):
    return float(cell.rstrip("%")) if cell.endswith("%") else float("nan")


def test_sparkline_scales_from_zero_to_the_largest_or_given_top():
    assert sparkline([0, 1, 2, 4]) == "▁▃▅█"
    assert sparkline([1, None, 1], hi=4) == "▃ ▃"
    assert sparkline([5, 5]) == "██" and sparkline([0, 0]) == "▁▁" and sparkline([]) == ""
    assert sparkline(range(100), width=10) == sparkline(range(90, 100), hi=99)


def test_top_from_the_store_sorts_by_cpu_memory_and_efficiency(tmp_path):
    store = str(tmp_path / "s.db")
    long_id = "pool.example.org#4711.0#1700000000" + "x" * 20
    stop = tmp_path / "stop"       # the jobs run until the test has seen what it needs
    until_stop = f"import os, time\nwhile not os.path.exists({str(stop)!r}): time.sleep(0.1)"
    burn = f"import os\nwhile not os.path.exists({str(stop)!r}): pass"
    hold = f"b = bytearray(96 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n{until_stop}"
    jobs = [start("burner", f"{sys.executable} -c \"{burn}\"", "--tag=request_cpus=4",
                  store=store),
            start("holder", f"{sys.executable} -c \"{hold}\"", "--tag=request_cpus=1",
                  store=store),
            start(long_id, f"{sys.executable} -c \"{until_stop}\"", store=store)]
    ids = {"burner", "holder", long_id}
    try:
        def ready():
            # The orders below are defined once the holder sleeps on its memory: its CPU
            # rate and efficiency then fall below the burner's however busy the machine is
            # (a starved burner still runs); wait for that state, not for a time.
            out = jobmon("top", "--once", "--spool=none", f"--store={store}").stdout
            if len(job_lines(out, ids)) != 3:
                return None
            fig = figures(out)
            try:
                mem = fig["holder"]["mem"].split()
                big = mem[1] == "MiB" and float(mem[0]) > 90
                faster = float(fig["burner"]["cores"]) > float(fig["holder"]["cores"])
                wasteful = percent_of(fig["holder"]["eff"]) < percent_of(fig["burner"]["eff"])
            except (KeyError, ValueError, IndexError):   # no first figures yet
                return None
            return out if big and faster and wasteful else None
        until(ready, timeout=60)
        by = {k: jobmon("top", "--once", "--spool=none", f"--store={store}", "--sort", k)
              for k in ("cpu", "mem", "eff")}
        for r in by.values():
            assert r.returncode == 0, r.stderr
            assert all(len(line) <= 80 for line in r.stdout.splitlines()), r.stdout
            assert "JOB" in r.stdout and "ALLOC" in r.stdout and "EFF" in r.stdout
        assert job_lines(by["cpu"].stdout, ids)[0] == "burner"
        assert job_lines(by["mem"].stdout, ids)[0] == "holder"
        # the least efficient first; the job without an allocation last (no efficiency)
        assert job_lines(by["eff"].stdout, ids) == ["holder", "burner", long_id]
        assert long_id in by["cpu"].stdout.splitlines()        # whole, on a line of its own
        burner = next(line for line in by["cpu"].stdout.splitlines()
                      if line.startswith("burner"))
        assert " 4.0 " in burner and "%" in burner
    finally:
        stop.touch()
        for p in jobs:
            p.wait(timeout=60)
    out = jobmon("top", "--once", "--spool=none", f"--store={store}").stdout
    assert job_lines(out, ids) == [] and "(no running job found)" in out   # ended


def test_watch_shows_sparklines_and_processes_then_sees_the_end(tmp_path):
    store = str(tmp_path / "w.db")
    job = start("w.1", f"{BURN.format(t=3)} & {HOLD.format(t=3)} & wait", store=store)
    try:
        def ready():
            r = jobmon("watch", "w.1", "--once", "--spool=none", f"--store={store}")
            return r if r.returncode == 0 and "top processes" in r.stdout else None
        r = until(ready)
        lines = r.stdout.splitlines()
        assert all(len(line) <= 80 for line in lines), r.stdout
        assert lines[0].startswith("job w.1")
        spark = {line.split()[0]: line for line in lines if line[:10].strip() in
                 ("CPU cores", "memory", "processes") or line.startswith("disk I/O")}
        assert set(spark) >= {"CPU", "memory", "processes"}
        assert any(c in spark["memory"] for c in "▁▂▃▄▅▆▇█")
        assert "python" in r.stdout      # the breakdown's command names
        # refreshing until the job ends, then it says so and exits 0
        live = subprocess.run([JOBMON, "watch", "w.1", "--interval=0.3", "--spool=none",
                               f"--store={store}"], capture_output=True, text=True, timeout=30)
        assert live.returncode == 0 and "\x1b" not in live.stdout   # a pipe: plain screens
        assert live.stdout.rstrip().endswith("(see `jobmon query w.1`)")
    finally:
        stop(job)
    r = jobmon("watch", "w.1", "--once", "--spool=none", f"--store={store}")
    assert r.returncode == 1 and "not running on this node" in r.stderr


def test_hostile_job_ids_and_commands_cannot_drive_the_terminal(tmp_path):
    store = str(tmp_path / "h.db")
    evil = "\x1b]0;owned\x07x\x1b[2J"
    job = start(evil, "printf '\\033[2J' >/dev/null; sleep 5", store=store)
    try:
        out = until(lambda: (lambda s: s if "x\u241b[2J" in s else None)(
            jobmon("top", "--once", "--spool=none", f"--store={store}").stdout))
        assert "\x1b" not in out and "\x07" not in out
        w = until(lambda: (lambda r: r.stdout if r.returncode == 0 else None)(
            jobmon("watch", evil, "--once", "--spool=none", f"--store={store}")))
        assert "\x1b" not in w and "\x07" not in w
    finally:
        stop(job)


@pytest.fixture
def spool_site(tmp_path):
    from jobmon.ship.spooldir import prepare_spool
    spool = str(tmp_path / "spool")
    prepare_spool(spool)
    config = tmp_path / "jobmon.toml"
    config.write_text(f'[store]\nkind = "influxdb"\n[spool]\ndir = "{spool}"\n')
    env = dict(os.environ, JOBMON_CONFIG=str(config), **EVERY)
    env.pop("JOBMON_STORE", None)
    return spool, env


@needs_root
def test_top_and_watch_read_the_running_jobs_spool_files(spool_site):
    spool, env = spool_site
    job = start("4711.0", f"{BURN.format(t=5)} & sleep 5; wait", "--tag=RequestCpus=2", env=env)
    try:
        def ready():   # the job's line comes before its first sample, which may come
            # before sh started both children: wait for a sample that has them (procs)
            out = jobmon("top", "--once", "--store=none", env=env).stdout
            line = next((x for x in out.splitlines() if x.startswith("4711.0")), "")
            cols = cells(line)
            procs = cols[6] if len(cols) > 6 else ""
            return line if " 2.0 " in line and procs.isdigit() and int(procs) >= 2 else None
        line = until(ready)
        assert line.split()[1] == "root"
        w = until(lambda: (lambda r: r.stdout if "top processes" in r.stdout else None)(
            jobmon("watch", "4711.0", "--once", "--store=none", env=env)))
        assert "cores allocated: 2.0" in w and "sleep" in w
    finally:
        job.wait(timeout=30)
    # the sampler is gone (its lock with it): the job is no longer running
    out = jobmon("top", "--once", "--store=none", env=env).stdout
    assert "4711.0" not in out and "(no running job found)" in out


@needs_root
def test_spool_reader_skips_lines_that_are_not_jobmon_line_protocol(spool_site):
    spool, env = spool_site
    path = os.path.join(spool, f"{time.time_ns()}.0.1.abcd.lp")
    job = {"job": "forged", "start_time": time.time() - 60, "interval": 1.0, "method": "procfs",
           "command": ["x"], "tags": {}, "scheduler": "local"}
    tags = schema.job_tags(job)
    good = schema.sample_line(tags, {"time": time.time_ns(), "elapsed_seconds": 60.0,
                                     "cpu_cores": 1.5, "procs": 3,
                                     "mem_resident_bytes": 5 << 20})
    bad = schema.sample_line(tags, {"time": time.time_ns(), "procs": 99}).replace(
        "procs=99i", "procs=99i,evil=1")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o640)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)       # as a live sampler holds it
        os.write(fd, (schema.job_line(job) + good + bad + "garbage\n").encode())
        out = jobmon("top", "--once", "--store=none", env=env).stdout
        line = next(x for x in out.splitlines() if x.startswith("forged"))
        assert cells(line)[2] == "1.50" and cells(line)[6] == "3"   # not the bad line's 99
    finally:
        os.close(fd)
    assert "forged" not in jobmon("top", "--once", "--store=none", env=env).stdout


@needs_test_user
def test_top_shows_whole_user_names_within_the_terminal_width():
    """Two users whose names share their first 8 characters (jobmon-test, jobmon-test2),
    each with a job in the node's spool: `jobmon top` shows both names whole, within the
    terminal's width; a wider terminal gives a long job id its place on the line."""
    from jobmon.ship.spooldir import prepare_spool
    base = shared_tmpdir()
    spool, stop = os.path.join(base, "spool"), os.path.join(base, "stop")
    prepare_spool(spool)
    config = os.path.join(base, "jobmon.toml")
    with open(config, "w") as f:
        f.write(f'[store]\nkind = "influxdb"\n[spool]\ndir = "{spool}"\n')
    env = dict(os.environ, JOBMON_CONFIG=config)
    env.pop("JOBMON_STORE", None)
    long_id = "pool.example.org#4711.0#1700000000" + "x" * 10      # 45 columns
    jobs = [subprocess.Popen(as_user([JOBMON, "run", "--interval=0.3", f"--job-id={job}", "--",
                                      "sh", "-c", f"while [ ! -e {stop} ]; do sleep 0.1; done"],
                                     user), env=env, stderr=subprocess.PIPE)
            for job, user in (("u1", "jobmon-test"), (long_id, "jobmon-test2"))]
    try:
        def top(columns):
            out = jobmon("top", "--once", "--store=none", env=dict(env, COLUMNS=columns)).stdout
            assert all(len(line) <= int(columns) for line in out.splitlines()), out
            return out.splitlines()
        lines = until(lambda: (lambda x: x if len(job_lines("\n".join(x), {"u1"})) == 1
                               and long_id in x else None)(top("80")))
        assert next(x for x in lines if x.startswith("u1 ")).split()[1] == "jobmon-test"
        figures_of_long = lines[lines.index(long_id) + 1]          # its own line at 80
        assert figures_of_long.split()[0] == "jobmon-test2"
        wide = next(x for x in top("120") if x.startswith(long_id))
        assert wide.split()[1] == "jobmon-test2"
    finally:
        open(stop, "w").close()
        for j in jobs:
            assert j.wait(timeout=30) == 0, j.stderr.read()
