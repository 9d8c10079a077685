"""`jobmon compare JOB1 JOB2` and `jobmon query JOB --like`, end to end: real `jobmon run`
jobs (one of them made to wait for a CPU by processes spinning on its CPU) into the
embedded store and, through the real spool and shipper, into a real InfluxDB; what each run
ran is stored as a hash, never as text beyond the command it already was."""
import hashlib
import json
import os
import statistics
import subprocess

import pytest

from contention import cpu_hogs
from helpers import JOBMON, PYTHON, jobmon, needs_test_user, root

SITE_FLAVOURS = ("1.x", "3.x")
# a fixed amount of CPU work (its own CPU clock): the same work however long it waits
WORK = """
import sys, time
t = time.process_time()
while time.process_time() - t < float(sys.argv[1]):
    pass
"""


def run(store, job_id, *cmd, pin=None):
    argv = [JOBMON, "run", f"--store={store}", f"--job-id={job_id}", "--interval=0.2",
            "--", *cmd]
    if pin is not None:
        argv = ["taskset", "-c", str(pin)] + argv
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    return r.returncode


def as_json(*args):
    r = jobmon(*args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def sha(argv):
    return hashlib.sha256(b"".join(a.encode() + b"\0" for a in argv)).hexdigest()[:16]


def rows(model):
    return {r["key"]: r for r in model["rows"]}


def test_the_command_line_is_stored_as_its_hash(tmp_path):
    store = str(tmp_path / "s.db")
    one, other = [PYTHON, "-c", WORK, "0.1"], [PYTHON, "-c", WORK, "0.2"]
    for job, cmd in (("a", one), ("b", one), ("c", other)):
        assert run(store, job, *cmd) == 0
    tags = {j: as_json("query", j, f"--store={store}")["job"]["ran"] for j in "abc"}
    assert tags["a"]["command_hash"] == tags["b"]["command_hash"] == sha(one)
    assert tags["c"]["command_hash"] == sha(other) != sha(one)


def test_compare_says_the_wall_grew_because_it_waited_for_a_cpu(tmp_path):
    store = str(tmp_path / "s.db")
    cmd = [PYTHON, "-c", WORK, "0.8"]
    assert run(store, "calm", *cmd, pin=0) == 0
    with cpu_hogs(4) as hogs:
        for h in hogs:
            os.sched_setaffinity(h.pid, {0})
        assert run(store, "crowded", *cmd, pin=0) == 0
    model = as_json("compare", "calm", "crowded", f"--store={store}")
    q = {j: as_json("query", j, f"--store={store}")["summary"] for j in ("calm", "crowded")}
    r = rows(model)
    # each side is the run's own figures, as `jobmon query` shows them
    for side, job in (("baseline", "calm"), ("subject", "crowded")):
        assert r["wall_seconds"][side] == q[job]["wall_seconds"]
        assert r["cpu_seconds"][side] == pytest.approx(
            q[job]["cpu_user_seconds"] + q[job]["cpu_system_seconds"])
        assert r["mem_peak_bytes"][side] == q[job]["rss_peak_bytes"]
    wall = r["wall_seconds"]["subject"] / r["wall_seconds"]["baseline"]
    assert wall > 1.2, r["wall_seconds"]          # one CPU shared with four spinners
    assert r["wall_seconds"]["ratio"] == pytest.approx(wall)
    assert model["same_script"] == "command_hash"
    # the wall changed most (the work is the same), and the wait says why
    assert model["headline"].startswith(f"{wall:.2g}× the wall of calm: "), model["headline"]
    waited = "cpu_pressure_percent" if q["crowded"].get("cpu_pressure_percent") is not None \
        else "cpu_wait_percent"
    assert r[waited]["subject"] - (r[waited]["baseline"] or 0) >= 5
    assert f"waited for a CPU {r[waited]['subject']:.0f} %" in model["headline"]
    text = jobmon("compare", "calm", "crowded", f"--store={store}").stdout
    assert model["headline"].split(":")[0] in text.splitlines()[0]
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "calm" in text and "crowded" in text and "same command line" in text


def test_a_failed_run_is_said_first(tmp_path):
    store = str(tmp_path / "s.db")
    assert run(store, "ok", PYTHON, "-c", WORK, "0.1") == 0
    assert run(store, "bad", PYTHON, "-c", "import sys; sys.exit(3)") == 3
    model = as_json("compare", "ok", "bad", f"--store={store}")
    assert model["columns"][1]["end"] == "exit 3"
    assert model["headline"].startswith(
        f"{model['columns'][1]['outcome']} (exit 3) where ok was "
        f"{model['columns'][0]['outcome']} (exit 0)"), model["headline"]
    assert model["same_script"] is None


def test_compare_refuses_a_group_and_an_unknown_job(tmp_path):
    store = str(tmp_path / "s.db")
    for job in ("7.0", "7.1"):
        assert run(store, job, "true") == 0
    r = jobmon("compare", "7", "7.0", f"--store={store}")
    assert r.returncode == 1 and "names 2 jobs" in r.stderr
    r = jobmon("compare", "7.0", "nope", f"--store={store}")
    assert r.returncode == 1 and "no job 'nope'" in r.stderr


def test_like_finds_the_earlier_runs_of_the_same_command(tmp_path):
    store = str(tmp_path / "s.db")
    same = [PYTHON, "-c", WORK, "0.3"]
    for job in ("r1", "r2", "r3"):
        assert run(store, job, *same) == 0
    assert run(store, "other", PYTHON, "-c", WORK, "0.31") == 0    # another command
    assert run(store, "now", *same) == 0
    assert run(store, "later", *same) == 0                          # after it: not earlier
    model = as_json("query", "now", "--like", f"--store={store}")
    assert model["matched_by"] == "command_hash" and model["hash"] == sha(same)
    assert [c["job"] for c in model["columns"]] == ["now", "r3", "r2", "r1"]
    walls = [c["figures"]["wall_seconds"] for c in model["columns"][1:]]
    assert rows(model)["wall_seconds"]["baseline"] == statistics.median(walls)
    assert "its last 3 runs" in model["headline"]
    two = as_json("query", "now", "--like", "--last", "2", f"--store={store}")
    assert [c["job"] for c in two["columns"]] == ["now", "r3", "r2"]
    text = jobmon("query", "now", "--like", f"--store={store}").stdout
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert [line.split()[0] for line in lines[-3:]] == ["r3", "r2", "r1"]
    alone = as_json("query", "r1", "--like", f"--store={store}")
    assert alone["earlier"] == 0 and alone["headline"].startswith("No earlier run")


def test_like_says_why_a_run_has_no_hash(tmp_path):
    """A run recorded before jobmon kept the hashes (here: its store's hashes taken out):
    --like ends with why -- such a run, or a batch job of a scheduler that keeps the job's
    script (its object's keeps_script) whose script its user could not read."""
    import json
    import sqlite3
    store = str(tmp_path / "s.db")
    assert run(store, "old", "true") == 0

    def unhashed(text):
        d = json.loads(text)
        for part in (d, d.get("tags") or {}):
            part.pop("command_hash", None)
            part.pop("script_hash", None)
        return json.dumps(d)
    with sqlite3.connect(store) as db:
        for rid, info, summary in db.execute("SELECT id, info, summary FROM runs").fetchall():
            db.execute("UPDATE runs SET info = ?, summary = ? WHERE id = ?",
                       (unhashed(info), unhashed(summary), rid))
    r = jobmon("query", "old", "--like", f"--store={store}")
    assert r.returncode == 1, r.stderr
    assert "has no hash of its command or job script (a run recorded before jobmon kept " \
        "them, or a Slurm batch job whose script was out of its user's reach): nothing " \
        "to match its earlier runs by" in " ".join(r.stderr.split()), r.stderr


@root
@needs_test_user
def test_like_and_compare_on_influxdb(site):
    """Through the real spool and shipper: the job point carries the hash as a field of its
    own, --like selects by it in the server, and only the user's own runs match."""
    site.prepare()
    site.run_small_job("i1", "jobmon-test", 8)
    site.run_small_job("i2", "jobmon-test2", 8)     # the same command, another user
    site.run_small_job("i3", "jobmon-test", 24)     # another command line (its argument)
    site.run_small_job("i4", "jobmon-test", 8)
    site.ship()
    points = site.rows('SELECT "command_hash"::field, "tags"::field FROM "jobmon_job"')
    hashes = {json.loads(p["tags"])["command_hash"] for p in points}
    assert {p["command_hash"] for p in points} == hashes and len(hashes) == 2
    out = site.jobmon("query", "i4", "--like", "--json", user="jobmon-test")
    model = json.loads(out.stdout)
    assert [c["job"] for c in model["columns"]] == ["i4", "i1"]
    assert model["columns"][1]["user"] == "jobmon-test"
    assert "its last run" in model["headline"]
    out = site.jobmon("compare", "i1", "i3", "--json", user="jobmon-test")
    model = json.loads(out.stdout)
    peak = rows(model)["mem_peak_bytes"]
    assert peak["subject"] - peak["baseline"] > 12 << 20      # 24 MiB touched against 8
    assert model["same_script"] is None


def test_html_pages_escape_what_the_jobs_say(tmp_path):
    import html
    store = str(tmp_path / "s.db")
    hostile = "<script>alert(1)</script>"
    for job in ("plain", hostile):
        assert run(store, job, PYTHON, "-c", WORK, "0.1") == 0
    model = as_json("compare", "plain", hostile, f"--store={store}")
    page = tmp_path / "c.html"
    r = jobmon("compare", "plain", hostile, f"--store={store}", f"--html={page}")
    assert r.returncode == 0 and r.stdout == "", r.stderr
    text = page.read_text()
    assert hostile not in text and html.escape(hostile) in text
    assert "script-src" not in text and "<script" not in text     # no script at all
    assert f'<p class="headline">{html.escape(model["headline"])}</p>' in text
    for row in model["rows"]:
        assert f"<td>{html.escape(row['label'])}</td>" in text
    like = jobmon("query", hostile, "--like", f"--store={store}", "--html=-")
    assert like.returncode == 0 and "<h2>earlier runs</h2>" in like.stdout
    assert "<td>plain</td>" in like.stdout and hostile not in like.stdout
    r = jobmon("query", "plain", f"--store={store}", "--html=x.html")
    assert r.returncode == 2 and "jobmon report JOBID --html" in r.stderr


def test_two_runs_of_one_job(tmp_path):
    store = str(tmp_path / "s.db")
    assert run(store, "again", PYTHON, "-c", WORK, "0.1") == 0
    assert run(store, "again", PYTHON, "-c", "import sys; sys.exit(3)") == 3
    model = as_json("compare", "again", "again", "--run1", "1", "--run2", "2",
                    f"--store={store}")
    assert [(c["label"], c["end"]) for c in model["columns"]] == [
        ("again run 1", "exit 0"), ("again run 2", "exit 3")]
    assert "where again run 1 was" in model["headline"]


def test_a_run_whose_data_covers_little_of_it_is_said(tmp_path):
    """A sampler held up for 3 s (tests/test_completeness.py): the comparison keeps its
    figures and says how little of the run its data covers."""
    from test_completeness import HELD_UP
    store = str(tmp_path / "s.db")
    assert run(store, "calm", PYTHON, "-c", HELD_UP, "0") == 0
    assert run(store, "held", PYTHON, "-c", HELD_UP, "3") == 0
    model = as_json("compare", "calm", "held", f"--store={store}")
    held = rows(model)["completeness_percent"]["subject"]
    assert held < 80
    assert model["headline"].endswith(f"(held's data covers {held:.0f} % of its run)"), \
        model["headline"]
    assert "calm's data" not in model["headline"]
