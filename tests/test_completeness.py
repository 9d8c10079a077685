"""How much of a run its data covers: real `jobmon run` jobs whose sampler is held up (the
job stops jobmon, its parent, for a while: a starved sampler) into the embedded store;
the figure and its reasons in `jobmon query` (verdict, JSON) and the HTML page, and the
advice its samples cannot support withheld below the site's threshold."""
import json
import os

from helpers import PYTHON, jobmon, jobmon_run

# stop jobmon (the job's parent) for STOP s between two short idle stretches
HELD_UP = r"""
import os, signal, sys, time
time.sleep(0.6)
os.kill(os.getppid(), signal.SIGSTOP)
time.sleep(float(sys.argv[1]))
os.kill(os.getppid(), signal.SIGCONT)
time.sleep(0.6)
"""
INTERVAL = 0.25


def run(tmp_path, stop, job="held"):
    store = str(tmp_path / "s.db")
    r = jobmon_run([f"--interval={INTERVAL}", f"--job-id={job}", "--tag=request_cpus=4"],
                   [PYTHON, "-c", HELD_UP, str(stop)], store=store)
    assert r.returncode == 0, r.stderr
    return store


def query(store, job, *args, env=None):
    q = jobmon("query", job, f"--store={store}", *args, env=env)
    assert q.returncode == 0, q.stderr
    return q.stdout


def test_a_sampler_held_up_leaves_a_gap_and_its_advice_is_withheld(tmp_path):
    store = run(tmp_path, 3.0)
    rep = json.loads(query(store, "held", "--json"))
    s = rep["summary"]
    wall = s["wall_seconds"]
    # the gap: the 3 s stopped, less one interval (a sample was due by then), give or
    # take a tick either side of the stop
    assert s["sample_gaps"] == 1, s
    assert 3.0 - 2 * INTERVAL <= s["sample_gap_seconds"] <= 3.0 + 2 * INTERVAL, s
    assert s["completeness_percent"] == round(100 * (wall - s["sample_gap_seconds"]) / wall, 1)
    assert s["completeness_percent"] < 80
    data = rep["verdict"]["data"]
    assert data["percent"] == s["completeness_percent"]
    assert data["reasons"] == [s["completeness_reasons"]] and \
        data["reasons"][0].startswith("1 gap between samples, ")
    # idle in every sample: the samples would say "stalled"; they cover too little of the
    # run to say it. Its CPU total is read whole at every sample, so a gap does not lose
    # it: 4 cores asked for and ~0 used is still "ask for 1 core"
    rules = [a["rule"] for a in rep["advice"]]
    assert rules[0] == "data_incomplete" and "stalled" not in rules, rules
    assert "cpu_underused" in rules, rules
    # the verdict's advice is still what to ask for; its data line says what is missing
    assert rep["verdict"]["advice"]["rule"] == "cpu_underused"
    text = query(store, "held")
    assert f"covers {s['completeness_percent']:g} % of the run: 1 gap between samples" in \
        " ".join(text.split())
    page = str(tmp_path / "r.html")
    assert jobmon("report", "held", "--html", page, f"--store={store}").returncode == 0
    html = open(page, encoding="utf-8").read()
    assert f"data: covers {s['completeness_percent']:g} % of the run: 1 gap" in html


def test_the_sites_threshold_decides(tmp_path):
    """A held-up run's advice under a site that asks for 10 % only: its samples speak."""
    store = run(tmp_path, 2.5)
    conf = tmp_path / "jobmon.toml"
    conf.write_text("[report]\nmin_completeness_percent = 10.0\n")
    env = dict(os.environ, JOBMON_CONFIG=str(conf))
    rep = json.loads(query(store, "held", "--json", env=env))
    rules = [a["rule"] for a in rep["advice"]]
    assert "data_incomplete" not in rules and "stalled" in rules, rules
    assert rep["summary"]["sample_gaps"] == 1


def test_a_whole_run_says_nothing_of_its_data(tmp_path):
    """No gap (no stop: a late tick is not one): 100 %, no reasons, no data line."""
    store = run(tmp_path, 0.0, job="whole")
    rep = json.loads(query(store, "whole", "--json"))
    assert rep["summary"]["sample_gaps"] == 0
    assert rep["summary"]["completeness_percent"] == 100.0
    assert rep["verdict"]["data"] == {"percent": 100.0, "reasons": []}
    assert "data_incomplete" not in [a["rule"] for a in rep["advice"]]
    assert "\ndata " not in query(store, "whole")


def test_jobmon_report_counts_the_runs_whose_advice_was_withheld(tmp_path):
    """`jobmon report` over a held-up run and a whole one: both counted, one incomplete."""
    store = run(tmp_path, 3.0)
    run(tmp_path, 0.0, job="whole")
    doc = json.loads(jobmon("report", "--since", "1h", "--json", f"--store={store}").stdout)
    assert (doc["total"]["jobs"], doc["total"]["incomplete"]) == (2, 1), doc["total"]
    text = jobmon("report", "--since", "1h", f"--store={store}").stdout
    assert "(1 of them with data covering too little of the run for advice" in \
        " ".join(text.split())
