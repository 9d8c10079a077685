"""A job report's memory figures are named for how they are obtained, in each mode (a
cgroup job as a root job gets one on this host, v1 or v2; a procfs job of an unprivileged
user; the v2 figures also in the guest's own test), the same
in JSON, CSV, the terminal at 80 columns and the HTML page; a figure defined to include
another (`includes`) never comes out below it. Real `jobmon run`s, the real renderers."""
import csv
import io
import json
import os

import pytest

from chromium import CHROMIUM, Chromium
from helpers import (IS_ROOT, job_cgroup_method, jobmon, jobmon_run, needs_test_user, py,
                     shared_tmpdir, TEST_USER)
from jobmon.summary import efficiency
from jobmon.report import job_efficiency

MiB = 1 << 20
# the example people met: an interpreter that sleeps. Its own high-water mark counts the
# interpreter's and libraries' pages it mapped (file-backed), which the kernel charged to
# whoever read them first, so the resident peak is above the charged and kernel peaks
SLEEPER = "import time; time.sleep(1.5)"
# a spike between two samples: 160 MiB held for 0.2 s, 1.5 s after the first sample (at
# 0.1 s; the next is the final one, with --interval=60)
SPIKE = ("import time\ntime.sleep(1.5)\nx = bytearray(160 << 20)\nfor i in range(0, len(x), "
         "4096): x[i] = 1\ntime.sleep(0.2)\ndel x\ntime.sleep(0.5)")


# what each cgroup version's figures are read from, as their meanings say
MEANINGS = {"cgroup-v1": ("memory.stat total_rss + total_shmem", "memory.max_usage_in_bytes"),
            "cgroup-v2": ("memory.stat anon + shmem", "memory.peak")}


def check_includes(rows):
    """Every figure at least as large as each figure it is defined to include."""
    for r in rows.values():
        for inner in r["includes"]:
            assert r["value"] >= rows[inner]["value"], (r["name"], r["value"], inner,
                                                        rows[inner]["value"])


def reports(job, store, tmp_path):
    """(JSON rows by name, CSV memory rows by name, terminal text, HTML text) of a job."""
    env = dict(os.environ, COLUMNS="80", JOBMON_CONFIG=str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    doc = json.loads(jobmon("query", job, "--json", f"--store={store}", env=env).stdout)
    rows = {m["name"]: m for m in doc["memory"]}
    c = jobmon("query", job, "--csv", f"--store={store}", env=env).stdout
    by = {r["name"]: r for r in csv.DictReader(io.StringIO(c)) if r["section"] == "memory"}
    text = jobmon("query", job, f"--store={store}", env=env).stdout
    page = str(tmp_path / "job.html")
    assert jobmon("report", job, "--html", page, f"--store={store}", env=env).returncode == 0
    return doc, rows, by, text, page


def check_renderings(rows, by, text, page):
    assert set(by) == set(rows)
    for name, r in rows.items():
        assert int(by[name]["value"]) == r["value"] and by[name]["detail"] == r["meaning"]
    assert max(len(x) for x in text.splitlines()) <= 80
    for name in rows:
        assert name in text
    if CHROMIUM:   # the page's memory box: the same names, each with its meaning
        with Chromium() as b:
            b.open("file://" + page)
            shown = b.evaluate("[...document.querySelectorAll('#section-memory th')]"
                               ".map(e => e.textContent)")
            meanings = b.evaluate("[...document.querySelectorAll('#section-memory "
                                  "tr.meaning')].map(e => e.textContent)")
            assert b.problems() == []
        assert shown == list(rows)
        assert meanings == [r["meaning"] for r in rows.values()]


@pytest.mark.root
@pytest.mark.skipif(not IS_ROOT, reason="a job cgroup needs root")
def test_cgroup_job_figures_and_the_resident_peak_above_the_kernel_peak(tmp_path):
    store = str(tmp_path / "s.db")
    r = jobmon_run(["--job-id=sleeper", "--interval=0.5"], py(SLEEPER), store=store)
    assert r.returncode == 0, r.stderr
    doc, rows, by, text, page = reports("sleeper", store, tmp_path)
    method = job_cgroup_method()
    assert method != "procfs", "no cgroup for a root job here"
    assert doc["summary"]["method"] == method
    assert list(rows) == ["resident peak", "resident, sampled", "charged peak, sampled",
                          "kernel peak (cgroup)"]
    check_includes(rows)
    assert rows["charged peak, sampled"]["includes"] == ["resident, sampled"]
    assert rows["kernel peak (cgroup)"]["includes"] == ["charged peak, sampled"]
    # the interpreter's own mark is above what the kernel charged the job, and its meaning
    # says why: it is defined to include no charged figure
    peak = rows["resident peak"]
    assert peak["value"] > rows["kernel peak (cgroup)"]["value"]
    assert peak["includes"] == ["resident, sampled"]
    assert "program and library pages" in peak["meaning"]
    resident, kernel = MEANINGS[method]
    assert resident in rows["resident, sampled"]["meaning"]
    assert kernel in rows["kernel peak (cgroup)"]["meaning"]
    check_renderings(rows, by, text, page)


@needs_test_user
def test_procfs_job_has_no_charged_figure(tmp_path):
    """An unprivileged job has no cgroup: nothing is charged. Its spike between samples is
    in the resident peak (the process's own mark), not in the sampled figures."""
    d = shared_tmpdir()
    store = os.path.join(d, "s.db")
    r = jobmon_run(["--job-id=spiky", "--interval=60"], py(SPIKE), store=store,
                   user=TEST_USER)
    assert r.returncode == 0, r.stderr
    doc, rows, by, text, page = reports("spiky", store, tmp_path)
    assert doc["summary"]["method"] == "procfs"
    assert list(rows) == ["resident peak", "resident, sampled", "mapped peak, sampled"]
    check_includes(rows)
    assert rows["resident peak"]["value"] >= 160 * MiB > rows["mapped peak, sampled"]["value"]
    for r in rows.values():
        assert "charged" not in r["name"] + r["meaning"].replace("no cgroup charges", "")
    assert "Pss_Anon + Pss_Shmem" in rows["resident, sampled"]["meaning"]
    assert "Pss_File" in rows["mapped peak, sampled"]["meaning"]
    check_renderings(rows, by, text, page)


def test_a_basis_stored_under_its_earlier_name_reads_as_resident():
    s = {"rss_peak_bytes": 3 * MiB, "mem_peak_bytes": 9 * MiB, "mem_sizing_basis": "footprint",
         "wall_seconds": 10, "outcome": "goodput", "mem_efficiency_percent": 3.0}
    assert efficiency.sizing_peak(s) == (3 * MiB, efficiency.RESIDENT)
    assert job_efficiency.efficiency_of(s, {})["mem_sizing_basis"] == efficiency.RESIDENT
