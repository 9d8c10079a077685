"""`jobmon report JOBID --html FILE`: the page, opened in a real headless Chromium, draws
the job's own samples (read back from the plots), reports no error, asks for nothing over
the network, and shows hostile job ids, tags and host names as text. Jobs come from real
`jobmon run`s and from records written through the real store sink."""
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import zipfile

import pytest

from chromium import CHROMIUM, Chromium
from helpers import PYTHON, REPO, jobmon, jobmon_run, read_fixture
from jobmon.plugins.slurm.accounting.sacct import records_from_json
from jobmon.report import model, runs as runs_
from jobmon.report.scheduler import record_of
from jobmon.render import html
from jobmon.stores.ids import parse
from jobmon.stores.local import LocalStore

needs_chromium = pytest.mark.skipif(not CHROMIUM, reason="needs chromium (tests/setup.sh)")
HOSTILE = '</script><script>alert(1)</script>"\'&<!--'
MiB = 1 << 20

# CPU while memory grows by 8 MiB every 0.1 s to 96 MiB, then 48 MiB written, synced, and
# read back past the page cache
WORKLOAD = r"""
import os, sys, time
chunks = []
for _ in range(12):
    chunks.append(bytearray(os.urandom(8 << 20)))
    u = time.time()
    while time.time() - u < 0.1:
        pass
path = os.path.join(sys.argv[1], "io.bin")
with open(path, "wb") as f:
    for _ in range(48):
        f.write(os.urandom(1 << 20))
    f.flush(); os.fsync(f.fileno())
time.sleep(0.3)   # the read's rate apart from the write's: same values would hide its line
fd = os.open(path, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
while os.read(fd, 1 << 20):
    pass
time.sleep(0.3)
"""

# what the page says about its plots: per plot, per series the (x, y) points it holds
# (alignment gaps of a multi-node join left out), and pixels drawn in each series' colour
READ_PLOTS = """(() => {
  const out = {};
  for (const [id, u] of Object.entries(window.jobmonPlots)) {
    const c = u.ctx.canvas, px = u.ctx.getImageData(0, 0, c.width, c.height).data;
    out[id] = u.jobmonSeries.map((s, i) => {
      const stroke = u.series[i + 1].stroke();
      const [r, g, b] = [1, 3, 5].map(k => parseInt(stroke.slice(k, k + 2), 16));
      let ink = 0;
      for (let p = 0; p < px.length; p += 4)
        if (px[p + 3] > 200 &&
            Math.abs(px[p] - r) + Math.abs(px[p + 1] - g) + Math.abs(px[p + 2] - b) < 60) ink++;
      return Object.assign({}, s, {label: u.series[i + 1].label, ink: ink,
        points: u.data[0].map((x, k) => [x, u.data[i + 1][k]]).filter(p => p[1] !== undefined)});
    });
  }
  return out;
})()"""


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM:
        pytest.skip("needs chromium (tests/setup.sh)")
    with Chromium(width=1400, height=900) as b:
        yield b


def load(browser, path, shot=None):
    """Open the report; (what its plots hold, the problems it reported)."""
    browser.events.clear()
    browser.open("file://" + os.path.abspath(path))
    if shot:
        browser.screenshot(shot)
        check_png(shot)
    assert browser.requests() == ["file://" + os.path.abspath(path)]   # nothing else
    return browser.evaluate(READ_PLOTS), browser.problems()


def check_png(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width == 1400 and height >= 900


def shot_path(tmp_path, name):
    """Screenshots go to $JOBMON_SCREENSHOTS when set (to look at), else the test's dir."""
    d = os.environ.get("JOBMON_SCREENSHOTS") or str(tmp_path)
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)


def rates(samples, field):
    """A counter's change per second, as the page should plot it (the first sample's over
    the time since the job started)."""
    out, last_v, last_t = [], 0, samples[0]["time"] / 1e9 - samples[0]["elapsed_seconds"]
    for s in samples:
        t = s["time"] / 1e9
        out.append((s[field] - last_v) / (t - last_t))
        last_v, last_t = s[field], t
    return out


def series(plots, plot, field, host=None):
    found = [s for s in plots[plot] if s.get("field") == field
             and (host is None or s.get("host") == host)]
    assert len(found) == 1, (plot, field, host, [s.get("label") for s in plots[plot]])
    return found[0]


def check_points(s, times, values, rel=1e-4, start=None):
    """A series' points are the samples'; one over intervals ("interval": a rate, the cores
    used) has its first value at the job's start too (`start`, s since the epoch), so that
    it is drawn over the interval it covers."""
    points = s["points"]
    if s.get("drawn") == "interval":
        assert points[0][1] == pytest.approx(values[0], rel=rel), s["label"]
        assert points[0][0] == pytest.approx(start, abs=2e-3) if start is not None else \
            points[0][0] < times[0] / 1e9, s["label"]
        points = points[1:]
    assert len(points) == len(times), s["label"]
    assert [p[0] for p in points] == pytest.approx([t / 1e9 for t in times], abs=2e-3)
    assert [p[1] for p in points] == pytest.approx(values, rel=rel), s["label"]
    assert s["ink"] > 20, f"{s['label']}: no line drawn in its colour"


@needs_chromium
def test_real_job_plots_its_samples_and_shows_hostile_ids_as_text(tmp_path, browser):
    store, page = str(tmp_path / "s.db"), str(tmp_path / "job.html")
    job_id, tag = "j" + HOSTILE, 'x="><img src=x onerror=alert(2)>'
    r = jobmon_run(["--interval=0.1", f"--job-id={job_id}", f"--tag=q={tag}",
                    f"--tag=h={HOSTILE}"], [PYTHON, "-c", WORKLOAD, str(tmp_path)], store=store)
    assert r.returncode == 0, r.stderr
    r = jobmon("report", job_id, "--html", page, f"--store={store}")
    assert r.returncode == 0, r.stderr
    samples = json.loads(jobmon("query", job_id, "--json", f"--store={store}").stdout)["samples"]
    assert len(samples) >= 15

    text = open(page, encoding="utf-8").read()
    assert "<script>alert" not in text and "<img src=x" not in text and "<!--" not in text
    plots, problems = load(browser, page, shot_path(tmp_path, "real-job.png"))
    assert problems == []
    assert browser.evaluate("document.getElementById('job-id').textContent") == job_id
    tags = browser.evaluate("[...document.querySelectorAll('ul.tags li')].map(e => e.textContent)")
    assert tags == [f"q={tag}", f"h={HOSTILE}"]
    assert browser.evaluate("document.scripts.length") == 3          # data, uPlot, the page's
    assert browser.evaluate("document.images.length") == 0
    assert browser.evaluate("document.title") == f"jobmon — job {job_id}"

    times = [s["time"] for s in samples]
    assert set(plots) == {"cpu", "memory", "io", "tasks"}          # no GPU here: no GPU plots
    start = times[0] / 1e9 - samples[0]["elapsed_seconds"]
    assert series(plots, "cpu", "cpu_cores")["drawn"] == "interval"
    check_points(series(plots, "cpu", "cpu_cores"), times, [s["cpu_cores"] for s in samples],
                 start=start)
    for field in ("mem_resident_bytes", "mem_cache_bytes", "mem_swap_bytes",
                  "mem_resident_peak_bytes"):
        s = series(plots, "memory", field)
        assert len(s["points"]) == len(samples) and [p[1] for p in s["points"]] == \
            [x[field] for x in samples]
    assert max(x["mem_resident_bytes"] for x in samples) >= 90 * MiB   # the ramp is there
    charged = series(plots, "memory", "mem_charged_bytes")    # resident + page cache
    assert [p[1] for p in charged["points"]] == \
        [x["mem_resident_bytes"] + x["mem_cache_bytes"] for x in samples]
    for field in ("read_bytes", "write_bytes"):
        check_points(series(plots, "io", field), times, rates(samples, field), start=start)
    # the workload wrote 48 MiB: the write rate's integral over time gives it back
    w = series(plots, "io", "write_bytes")["points"]
    t_start = times[0] / 1e9 - samples[0]["elapsed_seconds"]
    written = sum(y * (x - px) for (x, y), px in zip(w, [t_start] + [p[0] for p in w]))
    assert written == pytest.approx(samples[-1]["write_bytes"], rel=1e-4)
    assert written >= 48 * MiB
    check_points(series(plots, "tasks", "procs"), times, [s["procs"] for s in samples])


def write_synthetic_job(sink, job_id, host, start, n, interval=1.0, run=None, tags=None,
                        gpu=False, seed=0, exit_code=0, summary=None, scheduler="htcondor"):
    """One node's record of a finished job through a real sink: n samples of every
    field, with the magnitudes and precision the sampler writes (a noisy CPU load,
    memory that grows and is freed, steady I/O). summary: more end-of-job fields.
    Returns the samples."""
    rnd = random.Random(seed)
    job = {"job": job_id, "host": host, "user": "u", "method": "cgroup-v2",
           "start_time": start, "tags": tags or {}, "command": ["work", "--hard"],
           "interval": interval, "scheduler": scheduler, "run": run}
    sink.open(job)
    cpu = read = write = rchar = wchar = energy = 0
    rss, cache = 1 << 30, 256 * MiB
    peak = rss_peak = 0
    out = []
    for k in range(1, n + 1):
        cores = round(max(0.0, min(8.0, 3.5 + rnd.gauss(0, 1.2))), 4)
        cpu += cores * interval
        rss = max(4096, rss + 4096 * rnd.randint(-2000, 2100))
        cache = max(0, cache + 4096 * rnd.randint(-500, 520))
        peak, rss_peak = max(peak, rss + cache), max(rss_peak, rss)
        read, write = read + rnd.randint(0, 50 * MiB), write + rnd.randint(0, 8 * MiB)
        rchar, wchar = rchar + rnd.randint(0, 80 * MiB), wchar + rnd.randint(0, 9 * MiB)
        s = {"time": int((start + k * interval) * 1e9), "elapsed_seconds": round(k * interval, 3),
             "method": "cgroup-v2", "cpu_user_seconds": cpu * 0.93,
             "cpu_system_seconds": cpu * 0.07, "cpu_cores": cores,
             "mem_resident_bytes": rss, "mem_cache_bytes": cache, "mem_swap_bytes": 0,
             "mem_resident_peak_bytes": rss_peak, "mem_peak_bytes": peak,
             "read_bytes": read, "write_bytes": write, "rchar_bytes": rchar,
             "wchar_bytes": wchar, "procs": rnd.randint(1, 12), "threads": rnd.randint(12, 40)}
        if gpu:
            energy += rnd.uniform(100, 300) * interval
            s.update(gpu_count=1, gpu_util_percent=round(rnd.uniform(0, 100), 1),
                     gpu_mem_bytes=MiB * rnd.randint(1000, 30000), gpu_energy_joules=energy)
        sink.write(s)
        out.append(s)
    sink.close({"job": job_id, "host": host, "method": "cgroup-v2", "start_time": start,
                "end_time": start + n * interval, "exit_code": exit_code, "signal": None,
                "wall_seconds": n * interval, "cpu_user_seconds": cpu * 0.93,
                "cpu_system_seconds": cpu * 0.07, "rss_peak_bytes": rss_peak,
                "mem_peak_bytes": peak, "samples": n,
                "read_bytes": read, "write_bytes": write, "tags": tags or {}, **(summary or {})})
    return out


def build_report(store, job_id, run=None):
    """The report model of a stored job, as `jobmon report` builds it."""
    st = LocalStore(store)
    runs = runs_.by_job(st.records(parse(job_id)))[job_id]
    chosen = runs_.choose(runs, run)
    return model.build(chosen, [st.samples(r) for r in chosen.records], runs)


HOSTS = ("wn1", 'wn"<b>2</b>', "wn3")
CONDOR_TAGS = {"RequestCpus": "4", "CpusProvisioned": "8", "RequestMemory": "2048",
               "MemoryProvisioned": "4096"}


@needs_chromium
def test_multi_node_run_has_a_series_per_host_and_request_lines(tmp_path, browser):
    store, page = str(tmp_path / "s.db"), str(tmp_path / "multi.html")
    t0 = 1_700_000_000.0
    write_synthetic_job(LocalStore(store), "777.0", "wn1", t0 - 500, 20, run=1,
                        tags=CONDOR_TAGS, exit_code=None)      # evicted: the earlier run
    written = {h: write_synthetic_job(LocalStore(store), "777.0", h, t0 + 0.3 * i, 40, run=2,
                                      tags=CONDOR_TAGS, gpu=(i == 1), seed=i)
               for i, h in enumerate(HOSTS)}
    r = jobmon("report", "777.0", "--html", page, f"--store={store}")
    assert r.returncode == 0, r.stderr
    plots, problems = load(browser, page, shot_path(tmp_path, "multi-node.png"))
    assert problems == []
    for host, samples in written.items():
        times = [s["time"] for s in samples]
        check_points(series(plots, "cpu", "cpu_cores", host), times,
                     [s["cpu_cores"] for s in samples])
        check_points(series(plots, "memory", "mem_resident_bytes", host), times,
                     [s["mem_resident_bytes"] for s in samples])
        check_points(series(plots, "io", "read_bytes", host), times, rates(samples, "read_bytes"))
        check_points(series(plots, "tasks", "threads", host), times,
                     [s["threads"] for s in samples])
    gpu_host = HOSTS[1]
    for plot, field in (("gpu_util", "gpu_util_percent"), ("gpu_mem", "gpu_mem_bytes")):
        assert [s["host"] for s in plots[plot]] == [gpu_host]
        check_points(plots[plot][0], [s["time"] for s in written[gpu_host]],
                     [s[field] for s in written[gpu_host]])
    levels = {(p, s["label"]): {y for _x, y in s["points"]}
              for p in ("cpu", "memory") for s in plots[p] if s.get("level")}
    assert levels == {("cpu", "requested per node"): {4}, ("cpu", "allocated per node"): {8},
                      ("memory", "requested per node"): {2048 * MiB},
                      ("memory", "allocated per node"): {4096 * MiB}}
    labels = [s["label"] for s in plots["cpu"]]
    assert labels[:3] == [f"{h} cores used" for h in HOSTS]
    # zooming one plot zooms them all; hovering shows each series' value in every legend
    browser.evaluate(f"window.jobmonPlots.cpu.setScale('x', {{min: {t0 + 10}, max: {t0 + 20}}})")
    assert browser.evaluate("[...Object.values(window.jobmonPlots)].map(u => [u.scales.x.min, "
                            "u.scales.x.max])") == [[t0 + 10, t0 + 20]] * len(plots)
    over = browser.evaluate("(() => { const r = document.querySelector('#plot-cpu .u-over')"
                            ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + 20]; })()")
    browser.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": over[0], "y": over[1]})
    legend = browser.evaluate("[...document.querySelectorAll('#plot-memory .u-legend .u-value')]"
                              ".map(e => e.textContent)")
    assert legend[0] != "--" and any(v.endswith("GiB") for v in legend), legend
    assert browser.problems() == []
    nodes = browser.evaluate("[...document.querySelectorAll('#section-hosts td:first-child')]"
                             ".map(e => e.textContent)")
    assert sorted(nodes) == sorted(HOSTS)
    assert browser.evaluate("document.querySelectorAll('#section-runs tr').length") == 3
    assert browser.evaluate("document.querySelectorAll('b').length") == \
        browser.evaluate("document.querySelectorAll('ul.tags b').length")   # no host's <b>


def test_a_multi_node_jobs_level_lines_are_a_nodes_never_the_jobs_beside_a_nodes():
    """Each node is its own series, so each line is a node's figure: the two-node Slurm job
    (sacct: 2 CPUs requested and allocated, 1000 MiB; each node 1 core, 500 MiB) showed
    'requested 2' (the job's, from sacct) beside 'allocated 1' (a node's)."""
    node = {"cores_allocated": 1, "mem_allocated_bytes": 500 * MiB, "mem_requested_bytes": None}
    rep = {"header": {"tags": {"node": "node02"}}, "summary": {},
           "hosts": [dict(node, host="node02"), dict(node, host="node02b")],
           "scheduler": {"allocation": {"cores_requested": 2, "cores_allocated": 2,
                                        "mem_requested_bytes": 500 * MiB,
                                        "mem_allocated_bytes": 1000 * MiB},
                         "max_rss_bytes": 3 * MiB}}
    lines = {p: [(x["label"], x["value"]) for x in v] for p, v in html.references(rep).items()}
    assert lines == {"cpu": [("allocated per node", 1)],
                     "memory": [("allocated per node", 500 * MiB), ("Slurm MaxRSS", 3 * MiB)]}
    one = dict(rep, hosts=[], summary=dict(node, cores_requested=1))   # one node: the job's
    lines = {p: [(x["label"], x["value"]) for x in v] for p, v in html.references(one).items()}
    assert lines["cpu"] == [("requested", 1), ("allocated", 1)]
    assert lines["memory"][:2] == [("requested", 500 * MiB), ("allocated", 500 * MiB)]


def test_a_multi_node_jobs_memory_is_named_as_its_nodes_measured_it(tmp_path):
    """Slurm's sampler does not reap the job: its nodes' peaks are sampled, sized by the
    kernel's peak. The two-node job's page called the largest node's sampled figure the
    'resident peak' that takes each reaped process's VmHWM."""
    store = str(tmp_path / "s.db")
    for i, host in enumerate(("node01", "node01b")):
        write_synthetic_job(LocalStore(store), "41", host, 1_700_000_000.0 + 0.2 * i, 10,
                            run=1, seed=i, scheduler="slurm",
                            summary={"mem_sizing_basis": "kernel"})
    memory = [m["name"] for m in build_report(store, "41")["memory"]]
    assert memory[:2] == ["resident peak, sampled (largest node)",
                          "charged peak, sampled (largest node)"], memory
    assert "kernel peak (cgroup) (largest node)" in memory


@needs_chromium
def test_sections_the_model_has_are_shown_and_absent_ones_skipped(tmp_path, browser):
    """A Slurm job's page with the model's every section: advice, efficiency, memory by
    every definition, and what Slurm recorded (real sacct output through the real parser),
    whose allocation and MaxRSS become the level lines; sections the model lacks are left
    out."""
    store = str(tmp_path / "s.db")
    slurm = records_from_json(json.loads(read_fixture("slurm", "sacct", "plain.json")))
    job = slurm[0].job
    write_synthetic_job(LocalStore(store), job, "node01", 1_700_000_000.0, 30,
                        scheduler="slurm")
    rep = build_report(store, job)
    bare = str(tmp_path / "bare.html")
    with open(bare, "w") as f:
        f.write(html.render(dict(rep, advice=[], efficiency=[], memory=[], scheduler=None,
                                 verdict=None, node=[])))
    plots, problems = load(browser, bare)
    assert problems == []
    assert "cpu" in plots and not any(s.get("level") for s in plots["cpu"])
    assert browser.evaluate("[...document.querySelectorAll('section')].map(e => e.id)") == \
        ["section-summary"]

    class RecordedSacct:   # the sacct command's part: its recorded answer
        def lookup(self, job_id):
            return slurm
    st = LocalStore(store)
    runs = runs_.by_job(st.records(parse(job)))[job]
    scheduler = record_of(rep["header"], rep["summary"], None, source=RecordedSacct())
    rep = model.build(runs[-1], [st.samples(r) for r in runs[-1].records], runs,
                      scheduler=scheduler)
    rep["advice"] = rep["advice"][:1] + ["Memory: request 3 GiB", {
        "level": "warning", "rule": "gpu_idle" + HOSTILE, "text": "GPUs idle " + HOSTILE}]
    rich = str(tmp_path / "rich.html")
    with open(rich, "w") as f:
        f.write(html.render(rep))
    plots, problems = load(browser, rich, shot_path(tmp_path, "sections.png"))
    assert problems == []
    assert browser.evaluate("[...document.querySelectorAll('section')].map(e => e.id)") == [
        "section-verdict", "section-advice", "section-summary", "section-efficiency",
        "section-memory", "section-node", "section-scheduler"]
    # no node reader beside it: the energy and the network say so
    assert figures(browser, "node") == {
        "energy": "not available: no node reader ran beside the job (jobmon node-reader, "
                  "docs/node-reader.md)",
        "network": "not available: no node reader ran beside the job (jobmon node-reader, "
                   "docs/node-reader.md)"}
    assert browser.evaluate("document.querySelector('#section-node code').textContent") == \
        "jobmon node-reader"     # set as code, not between backticks
    advice = browser.evaluate("[...document.querySelectorAll('#section-advice li')]"
                              ".map(e => e.textContent)")
    first = rep["advice"][0]
    assert advice == [f"{first['text']} {first['rule']}", "Memory: request 3 GiB",
                      f"warning GPUs idle {HOSTILE} gpu_idle{HOSTILE}"]
    eff = figures(browser, "efficiency")
    assert eff["cores allocated"] == "1.00 cores" and eff["outcome"].startswith("goodput")
    assert list(eff) == [r[0] for r in rep["efficiency"]]
    memory = figures(browser, "memory")
    assert memory["Slurm MaxRSS"] == "102.8 MiB" and memory["allocated"] == "500.0 MiB"
    assert browser.evaluate("[...document.querySelectorAll('#section-memory tr.meaning')]"
                            ".length") == len(rep["memory"])
    sched = figures(browser, "scheduler")
    assert browser.evaluate("document.querySelector('#section-scheduler h2').textContent") \
        == "What Slurm recorded"
    assert sched["MaxRSS (sampled, largest step)"] == "102.8 MiB"
    assert sched["state"] == "COMPLETED"
    # the synthetic job's CPU is not what sacct recorded for the real one: the page says so
    assert scheduler["differences"]
    assert browser.evaluate("document.querySelectorAll('#section-scheduler "
                            "ul.differences li').length") == len(scheduler["differences"])
    assert levels_of(plots, "cpu") == {"requested": {1}, "allocated": {1}}
    assert levels_of(plots, "memory") == {"requested": {500 * MiB}, "allocated": {500 * MiB},
                                          "Slurm MaxRSS": {slurm[0].max_rss_bytes}}


def figures(browser, key):
    """A box of (name, value) rows on the page, as {name: value text}."""
    return dict(browser.evaluate(
        f"[...document.querySelectorAll('#section-{key} tr')].filter(r => r.querySelector('th'))"
        ".map(r => [r.querySelector('th').textContent, r.querySelector('td').textContent])"))


def levels_of(plots, plot):
    return {s["label"]: {y for _x, y in s["points"]} for s in plots[plot] if s.get("level")}


# what the sampler writes at the end of a job whose allocation it knows
ALLOCATED = {"cores_requested": 4.0, "cores_allocated": 6.0, "mem_requested_bytes": 3 << 30,
             "mem_allocated_bytes": 5 << 30, "canonical_units": 6.0,
             "cpu_efficiency_percent": 58.314, "mem_efficiency_percent": 26.04,
             "provisioned_core_hours": 0.05, "used_core_hours": 0.0292,
             "idle_core_hours": 0.0208, "idle_canonical_core_hours": 0.0, "outcome": "badput",
             "outcome_reason": "exit code 1", "cpu_idle_samples": 3,
             "mem_growth_bytes_per_hour": 2 << 30, "mem_rising": 1}


@needs_chromium
def test_allocation_and_efficiency_from_the_summary(tmp_path, browser):
    """Request and allocation lines come from the summary's fields, before the job ad's
    tags; the allocation and efficiency box shows the fields the summary has, and the
    model's efficiency rows in place of the summary's own."""
    store, page = str(tmp_path / "s.db"), str(tmp_path / "alloc.html")
    write_synthetic_job(LocalStore(store), "31.0", "wn1", 1_700_000_000.0, 30,
                        tags=CONDOR_TAGS, exit_code=1, summary=ALLOCATED)
    r = jobmon("report", "31.0", "--html", page, f"--store={store}")
    assert r.returncode == 0, r.stderr
    plots, problems = load(browser, page, shot_path(tmp_path, "allocation.png"))
    assert problems == []
    assert levels_of(plots, "cpu") == {"requested": {4}, "allocated": {6}}
    assert levels_of(plots, "memory") == {"requested": {3 << 30}, "allocated": {5 << 30}}
    legend = browser.evaluate("[...document.querySelectorAll('#plot-memory .u-legend .u-series')]"
                              ".map(e => e.textContent)")
    assert legend[-2:] == ["requested3.00 GiB", "allocated5.00 GiB"], legend
    rep = build_report(store, "31.0")
    box = figures(browser, "efficiency")    # the model's rows, then the stall/leak signs
    assert list(box) == [r[0] for r in rep["efficiency"]] + [
        "samples with the CPU idle (< 1 % of a core)", "resident memory growth",
        "resident memory rising steadily"]
    assert [box[r[0]] for r in rep["efficiency"] if r[0].startswith("CPU efficiency")] == \
        ["58.3 %"]
    assert list(box.values())[-3:] == ["3", "2.0 GiB/h", "yes"]
    assert browser.evaluate("[...document.querySelectorAll('aside section')].map(e => e.id)") \
        == ["section-verdict", "section-advice", "section-summary", "section-efficiency",
            "section-memory", "section-node", "section-scheduler"]
    # (HTCondor's record: a note that this host has none); the verdict first
    verdict = browser.evaluate("document.querySelector('#section-verdict').textContent")
    assert verdict.startswith("Verdictbadput: exit code 1") and "used of 6" in verdict

    # a model without efficiency rows: the summary's own fields
    del rep["efficiency"]
    with open(page, "w") as f:
        f.write(html.render(rep))
    plots, problems = load(browser, page)
    assert problems == []
    assert figures(browser, "efficiency") == {
        "cores requested": "4.00 cores", "cores allocated": "6.00 cores",
        "memory requested": "3.0 GiB", "memory allocated": "5.0 GiB",
        "canonical units (1 core + 2 GiB)": "6 units", "outcome": "badput: exit code 1",
        "CPU efficiency": "58.3 %", "memory efficiency (memory peak / allocated)": "26.0 %",
        "core-hours provisioned": "0.05 core-h", "core-hours used": "0.0292 core-h",
        "core-hours idle": "0.0208 core-h",
        "canonical core-hours idle (whole units)": "0 core-h",
        "samples with the CPU idle (< 1 % of a core)": "3",
        "resident memory growth": "2.0 GiB/h", "resident memory rising steadily": "yes"}

    rep = build_report(store, "31.0")
    rep["efficiency"] = [{"label": "CPU efficiency", "value": 58.3, "unit": "%"},
                         {"label": "GPU efficiency", "value": None, "unit": "%"}]
    rep["advice"] = [{"rule": "cpu_overrequest", "text": "Ask for 4 cores, not 6."}]
    with open(page, "w") as f:
        f.write(html.render(rep))
    plots, problems = load(browser, page)
    assert problems == []
    box = figures(browser, "efficiency")
    assert list(box.items())[:2] == [("CPU efficiency", "58.3 %"), ("GPU efficiency", "–")]
    assert "core-hours used" not in box and len(box) == 5     # and the 3 stall/leak signs
    assert browser.evaluate("document.querySelector('#section-advice small.rule')"
                            ".textContent") == "cpu_overrequest"

    # several nodes: each node's figures in the nodes table, its allocation as the level
    multi = str(tmp_path / "multi.html")
    for i, host in enumerate(("wn1", "wn2")):
        write_synthetic_job(LocalStore(store), "32.0", host, 1_700_000_000.0 + 0.2 * i, 10,
                            run=1, seed=i,
                            summary=dict(ALLOCATED, cpu_efficiency_percent=40.0 + i))
    r = jobmon("report", "32.0", "--html", multi, f"--store={store}")
    assert r.returncode == 0, r.stderr
    plots, problems = load(browser, multi)
    assert problems == []
    assert levels_of(plots, "cpu") == {"requested per node": {4}, "allocated per node": {6}}
    rows = browser.evaluate("[...document.querySelectorAll('#section-hosts tr')]"
                            ".map(r => [...r.children].map(c => c.textContent))")
    at = rows[0].index("CPU eff.")
    assert sorted(r[at] for r in rows[1:]) == ["40.0 %", "41.0 %"]


def test_page_for_a_job_without_allocation_fields():
    """No allocation known (a plain `jobmon run`): no level lines, no box, no error."""
    rep = {"header": {"job": "j", "tags": {"RequestMemory": "request_memory * 2"}},
           "totals": [], "summary": {"cpu_user_seconds": 1.0}, "runs": [], "hosts": [],
           "samples": [{"time": 10**18, "cpu_cores": 1.0, "mem_resident_bytes": 5}],
           "running": False}
    page = html.render(rep)
    assert 'id="section-efficiency"' not in page and 'id="section-summary"' in page
    assert all(p["levels"] == [] for p in html.plot_data(rep)["plots"])
    assert [s["field"] for p in html.plot_data(rep)["plots"] for s in p["series"]] == \
        ["cpu_cores", "mem_resident_bytes"]     # no page cache: no charged line either


@needs_chromium
def test_a_run_without_samples_renders(tmp_path, browser):
    store, page = str(tmp_path / "s.db"), str(tmp_path / "empty.html")
    write_synthetic_job(LocalStore(store), "6.0", "wn1", 1_700_000_000.0, 0)
    r = jobmon("report", "6.0", "--html", page, f"--store={store}")
    assert r.returncode == 0, r.stderr
    plots, problems = load(browser, page)
    assert plots == {} and problems == []
    assert "No samples" in browser.evaluate("document.body.textContent")


def test_command_errors(tmp_path):
    store = str(tmp_path / "s.db")
    for job in ("8.0", "8.1"):
        write_synthetic_job(LocalStore(store), job, "wn1", 1_700_000_000.0, 3)
    r = jobmon("report", "8", "--html", str(tmp_path / "x.html"), f"--store={store}")
    assert r.returncode == 1 and "names 2 jobs (8.0, 8.1)" in r.stderr
    r = jobmon("report", "9.0", "--html", str(tmp_path / "x.html"), f"--store={store}")
    assert r.returncode == 1 and "no job '9.0'" in r.stderr
    r = jobmon("report", "8.0", f"--store={store}")
    assert r.returncode == 2 and "--html" in r.stderr
    r = jobmon("report", "8.0", "--html", str(tmp_path / "no" / "x.html"), f"--store={store}")
    assert r.returncode == 1 and "cannot write" in r.stderr and "Traceback" not in r.stderr
    r = jobmon("report", "8.0", "--html", "-", f"--store={store}")
    assert r.returncode == 0 and r.stdout.startswith("<!DOCTYPE html>")
    assert not os.path.exists(tmp_path / "x.html")


def test_script_json_cannot_close_its_element():
    text = html.script_json({"a": HOSTILE + "\u2028</SCRIPT>"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": HOSTILE + "\u2028</SCRIPT>"}


@pytest.mark.slow
def test_pip_install_ships_the_page_template_and_uplot(tmp_path):
    """A wheel of the project renders a report on its own (no files from the checkout)."""
    if not shutil.which("pip", path=os.path.dirname(PYTHON)):
        pytest.skip("no pip next to the test interpreter")
    r = subprocess.run([PYTHON, "-m", "pip", "wheel", "-q", "--no-deps", REPO, "-w",
                        str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    wheel = next(p for p in os.listdir(tmp_path) if p.endswith(".whl"))
    with zipfile.ZipFile(tmp_path / wheel) as z:
        z.extractall(tmp_path / "site")
    code = ("import jobmon, jobmon.render.html as h, sys;"
            "assert jobmon.__file__.startswith(sys.argv[1]), jobmon.__file__;"
            "rep = {'header': {'job': 'j', 'tags': {}}, 'totals': [], 'summary': {}, 'runs': [],"
            " 'hosts': [], 'samples': [{'time': 10**18, 'cpu_cores': 1.0}], 'running': False};"
            "print(len(h.render(rep)))")
    site = str(tmp_path / "site")
    r = subprocess.run([sys.executable, "-c", code, site], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, PYTHONPATH=site))
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) > 50_000      # uPlot inlined


@needs_chromium
def test_axes_speak_one_unit_and_the_headings_time(tmp_path, browser):
    """Memory from 0.9 to 1.3 GiB: every y tick of an axis in one unit, at round steps of
    it; the time axis in ISO 8601, in the writer's local time as the heading (the page is
    written in UTC+05:30, the browser runs in UTC)."""
    store, page = str(tmp_path / "s.db"), str(tmp_path / "axes.html")
    st, t0 = LocalStore(store), 1_700_000_000.0
    st.open({"job": "axes", "host": "wn1", "user": "u", "method": "cgroup-v2",
             "start_time": t0, "tags": {}, "command": ["x"], "interval": 1.0,
             "scheduler": "local", "run": None})
    for k in range(1, 41):
        st.write({"time": int((t0 + k) * 1e9), "elapsed_seconds": float(k),
                  "method": "cgroup-v2", "cpu_cores": 1.0, "procs": 1,
                  "mem_resident_bytes": int((0.9 + 0.01 * k) * (1 << 30)),
                  "read_bytes": k * 700 * MiB, "write_bytes": k * 3 * MiB})
    st.close({"job": "axes", "start_time": t0, "end_time": t0 + 40, "exit_code": 0,
              "signal": None, "wall_seconds": 40.0})
    r = jobmon("report", "axes", "--html", page, f"--store={store}",
               env=dict(os.environ, TZ="Asia/Kolkata"))
    assert r.returncode == 0, r.stderr
    load(browser, page)
    axes = browser.evaluate("Object.fromEntries(Object.entries(window.jobmonPlots).map("
                            "([k, u]) => [k, [u.axes[0]._values, u.axes[1]._values]]))")
    for plot, unit in (("memory", ""), ("io", "/s")):
        ticks = axes[plot][1]
        units = {t.split(" ")[1] for t in ticks if " " in t}
        assert len(units) == 1 and units.pop().endswith(unit), ticks
        values = [float(t.split(" ")[0]) for t in ticks]
        step = values[1] - values[0]
        assert all(abs(b - a - step) < 1e-9 for a, b in zip(values, values[1:])), ticks
        assert step * 10 == pytest.approx(round(step * 10)) or step >= 1, ticks
    started = browser.evaluate("[...document.querySelectorAll('dl.facts div')].find(d => "
                               "d.firstChild.textContent == 'started').lastChild.textContent")
    assert started.endswith("+05:30"), started          # 2023-11-15 03:43:20+05:30
    day, clock = started[:10], started[11:19]
    for plot, (x, _y) in axes.items():
        assert x[0].split("\n")[1] == day and x[0] > clock[:5], (plot, x)
        assert all(re.fullmatch(r"\d\d:\d\d:\d\d(\.\d+)?(\n\d{4}-\d\d-\d\d)?", t) for t in x), x
