"""CPU throttling under a CPU quota, end to end, on this host's cgroups (v1: cpu.cfs_quota_us;
a pure v2 host: cpu.max): a real job of 2 spinning processes in a real cgroup whose quota
allows 0.5 cores. Its samples,
summary, `jobmon query`, the HTML page, the advice rule and the single-job dashboard's panel
(the v2 guest has its own: tests/guest/inside/test_throttling.py). The figures come from the
metrics' declarations beside the cgroup probes (core/probes/cgroup.py)."""
import json
import os
import time

import pytest

from contention import SPIN, cpu_quota_cgroup, quota_dir
from helpers import PYTHON, REPO, job_cgroup_method, jobmon, jobmon_run, needs_root, root
from jobmon.config.report import defaults
from jobmon.summary.advice import advise

QUOTA, PERIOD = 50000, 100000     # 0.5 cores
FIELDS = ("cpu_throttled_seconds", "cpu_quota_periods", "cpu_throttled_periods")


def kernel_stat(d):
    """The job cgroup's cpu.stat, its throttled time in seconds as `throttled`."""
    with open(os.path.join(d, "cpu.stat")) as f:
        out = {k: int(v) for k, v in (line.split() for line in f if line.strip())}
    out["throttled"] = out["throttled_time"] / 1e9 if "throttled_time" in out \
        else out["throttled_usec"] / 1e6
    return out


@pytest.fixture(scope="module")
def quota_job(tmp_path_factory):
    """`jobmon run --cgroup=existing` of 2 processes spinning 4 s, started inside a job
    cgroup whose quota is 0.5 cores (and the most CPU weight: the quota alone holds it
    back); the kernel's own cpu.stat of that cgroup read once the job is gone."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    tmp = tmp_path_factory.mktemp("throttle")
    store, out, summary = (str(tmp / n) for n in ("jobs.db", "samples.jsonl", "s.json"))
    with cpu_quota_cgroup(QUOTA, PERIOD) as job:
        before = time.time()   # jobmon runs in the cgroup from about now
        r = jobmon_run(["--job-id=throttled-1", "--interval=0.5", "--cgroup=existing",
                        f"--summary={summary}", f"--out={out}", "--tag=request_cpus=2"],
                       [PYTHON, "-c", SPIN, "2", "4"], store=store, preexec_fn=job.join,
                       timeout=120, text=True)
        assert r.returncode == 0, r.stderr
        kernel = kernel_stat(quota_dir(job))
        kernel["before"], kernel["after"] = before, time.time()   # to about now
    with open(summary) as f:
        s = json.load(f)
    with open(out) as f:
        samples = [json.loads(x) for x in f if x.strip()]
    return s, samples, kernel, store


@root
@needs_root
def test_a_job_burning_2_cores_under_half_a_core_is_throttled_as_the_kernel_says(quota_job):
    s, samples, kernel, _store = quota_job
    print({k: s.get(k) for k in FIELDS + ("cpu_throttled_percent", "cpu_cores_avg",
                                          "wall_seconds")}, kernel)
    assert s["method"] == job_cgroup_method() and s["cores_allocated"] == 0.5, s
    cpu = s["cpu_user_seconds"] + s["cpu_system_seconds"]
    # the quota held: at most 0.5 cores on average, give or take a period at each end
    assert 0.4 * s["wall_seconds"] <= cpu <= 0.5 * s["wall_seconds"] + 2 * PERIOD / 1e6, s
    # jobmon's figures are the kernel's since the job started, up to its end: jobmon, in the
    # cgroup too, started before the job and ran on after it (its end-of-job record), a
    # period for each 100 ms of those, and the one each began in, are not the job's
    later = int((s["start_time"] - kernel["before"] + kernel["after"] - s["end_time"])
                * 1e6 / PERIOD) + 2
    assert 0 <= kernel["nr_periods"] - s["cpu_quota_periods"] <= later, (s, kernel)
    assert 0 <= kernel["nr_throttled"] - s["cpu_throttled_periods"] <= later, (s, kernel)
    assert -1e-9 <= kernel["throttled"] - s["cpu_throttled_seconds"] <= \
        later * 2 * PERIOD / 1e6, (s, kernel)
    assert s["cpu_throttled_percent"] == round(
        100 * s["cpu_throttled_periods"] / s["cpu_quota_periods"], 2)
    # 2 spinning processes with the most CPU shares use a period's 50 ms of quota in its
    # first 25 ms, then both wait out the 75 ms left: every period ends throttled but the
    # first and last (partly outside the run), each with 2 x 75 ms held back -- give or
    # take one in 20 that the machine below this one took its CPUs away in
    periods = s["cpu_quota_periods"]
    assert periods >= 0.8 * s["wall_seconds"] * 1e6 / PERIOD, s
    assert s["cpu_throttled_periods"] >= periods - 2 - periods // 20, s
    assert s["cpu_throttled_seconds"] == pytest.approx(
        s["cpu_throttled_periods"] * 2 * (PERIOD - QUOTA / 2) / 1e6, rel=0.2), s
    for field in FIELDS:   # counters: every sample has them, never going back
        vals = [x[field] for x in samples if field in x]
        assert len(vals) == len(samples) and vals == sorted(vals), field
    got = {a["rule"]: a["text"] for a in advise(s, defaults())}
    assert got["cpu_throttled"].startswith(
        f"held back by its CPU quota in {s['cpu_throttled_percent']:.0f} % of its quota "
        "periods"), got


@root
@needs_root
def test_query_and_the_html_page_show_the_throttled_share(quota_job, tmp_path):
    s, _samples, _kernel, store = quota_job
    q = jobmon("query", "throttled-1", "--json", f"--store={store}")
    assert q.returncode == 0, q.stderr
    rep = json.loads(q.stdout)
    totals = {x[0]: x[1] for x in rep["totals"]} if isinstance(rep["totals"][0], list) \
        else {x["name"]: x["value"] for x in rep["totals"]}
    label = "held back by its CPU quota, share of its quota periods"
    assert totals[label] == s["cpu_throttled_percent"], totals
    assert totals["held back by its CPU quota"] == s["cpu_throttled_seconds"], totals
    assert "cpu_throttled" in {a["rule"] for a in rep["advice"]}
    t = jobmon("query", "throttled-1", f"--store={store}", env=dict(os.environ, COLUMNS="200"))
    assert label in t.stdout and "cpu_throttled" in t.stdout, t.stdout
    page = str(tmp_path / "page.html")
    r = jobmon("report", "throttled-1", "--html", page, f"--store={store}")
    assert r.returncode == 0, r.stderr
    html = open(page, encoding="utf-8").read()
    assert label in html and "held back by its CPU quota in" in html


def test_procfs_mode_has_no_throttling_figures(tmp_path):
    """No cgroup, no quota: the declaration says none in procfs mode, and none comes."""
    summary, out = str(tmp_path / "s.json"), str(tmp_path / "samples.jsonl")
    r = jobmon_run(["--interval=0.2", "--cgroup=none", f"--summary={summary}",
                    f"--out={out}"], [PYTHON, "-c", SPIN, "1", "0.6"], store="none",
                   timeout=60, text=True)
    assert r.returncode == 0, r.stderr
    s = json.load(open(summary))
    assert s["method"] == "procfs"
    assert all(s.get(k) is None for k in FIELDS + ("cpu_throttled_percent",)), s
    assert not any(k in json.loads(x) for x in open(out) if x.strip() for k in FIELDS)


def test_the_job_dashboard_draws_the_throttling():
    with open(os.path.join(REPO, "deploy", "grafana", "dashboards", "jobmon-job.json")) as f:
        panels = {p["title"]: p for p in json.load(f)["panels"]}
    q = panels["Held back by its CPU quota"]["targets"][0]["query"]
    assert 'non_negative_derivative(last("cpu_throttled_seconds"), 1s) AS cpus_held' in q
    assert 'non_negative_derivative(last("cpu_throttled_periods"), 1s) AS periods_held' in q


def test_the_declarations_reach_every_table():
    """Declared once (core/probes/cgroup.py): the sample and summary tables, the fold,
    docs/metrics.md, the schema, the report's rows, the [report] threshold, the rules."""
    from jobmon import metrics, metrics_doc
    from jobmon.influx import schema
    from jobmon.summary import advice
    assert set(FIELDS) <= set(metrics.SAMPLE_NAMES) and set(FIELDS) <= set(metrics.COUNTERS)
    summary = {f[0] for f in metrics.SUMMARY_FIELDS}
    assert set(FIELDS) | {"cpu_throttled_percent"} <= summary
    text = metrics_doc.markdown()
    assert "| `cpu_throttled_periods` | count | counter | job | exact; cgroup-v2: cpu.stat " \
        "nr_throttled" in text and "procfs: none (no CPU quota applies" in text
    assert set(FIELDS) <= set(schema.STORED_TYPES[schema.SAMPLE])
    assert defaults()["cpu_throttled_percent"] == 25.0
    assert "cpu_throttled" in [r.__name__ for r in advice.RULES]
