"""Size and render time of the HTML report of a long job.

    .venv/bin/python benchmarks/html_report.py [--reps 5]

A 24 h job sampled every 10 s (8640 samples of every field, GPU included) written through
the real store sink; `jobmon report JOBID --html FILE` writes its page; headless Chromium
opens it (tests/chromium.py) and the page itself says when, counted from the start of
navigation (performance.now()): every plot drawn into its canvas (drawnMs: HTML and JSON
parsed, every plot built and drawn), and the first frame that shows them (renderMs). Also
the same job on 4 nodes. Targets: one node's page <= 2 MB, rendered in <= 2 s.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from chromium import Chromium  # noqa: E402
from helpers import JOBMON  # noqa: E402
from jobmon.stores.local import LocalStore  # noqa: E402
from test_html_report import write_synthetic_job  # noqa: E402

DAY, INTERVAL = 24 * 3600, 10.0


def make_job(store, job_id, nodes):
    start = time.time() - DAY - 60
    for i in range(nodes):
        write_synthetic_job(LocalStore(store), job_id, f"wn{i + 1:03d}", start + 0.37 * i,
                            int(DAY / INTERVAL), interval=INTERVAL, run=1, gpu=True, seed=i,
                            tags={"RequestCpus": "8", "RequestMemory": "16384"})


def measure(store, job_id, d, reps):
    page = os.path.join(d, f"{job_id}.html")
    t = time.perf_counter()
    r = subprocess.run([JOBMON, "report", job_id, "--html", page, f"--store={store}"],
                       capture_output=True, text=True)
    write_s = time.perf_counter() - t
    assert r.returncode == 0, r.stderr
    drawn, frame, ready = [], [], []
    for _ in range(reps):
        with Chromium(width=1400, height=900) as b:
            t = time.perf_counter()
            b.open("file://" + page)
            ready.append(time.perf_counter() - t)
            times = b.evaluate("Object.assign({}, document.documentElement.dataset)")
            drawn.append(float(times["drawnMs"]))
            frame.append(float(times["renderMs"]))
            points = b.evaluate("Object.values(window.jobmonPlots).reduce((n, u) => n + u.data"
                                ".slice(1).reduce((k, y) => k + y.filter(v => v != null)"
                                ".length, 0), 0)")
            assert b.problems() == [], b.problems()
    return {"bytes": os.path.getsize(page), "write_s": write_s, "drawn_ms": drawn,
            "frame_ms": frame, "ready_s": ready, "points": points}


def spread(values, unit="ms"):
    return (f"{statistics.median(values):.0f} {unit} (min {min(values):.0f}, "
            f"max {max(values):.0f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    print(f"load: {open('/proc/loadavg').read().split()[:3]}, cpus: {os.cpu_count()}")
    with tempfile.TemporaryDirectory() as d:
        store = os.path.join(d, "s.db")
        for job_id, nodes in (("day-1node", 1), ("day-4nodes", 4)):
            make_job(store, job_id, nodes)
            m = measure(store, job_id, d, args.reps)
            print(f"{job_id}: {int(DAY / INTERVAL)} samples per node, {nodes} node(s), "
                  f"{m['points']} plotted values: page {m['bytes'] / 1e6:.2f} MB, written by "
                  f"`jobmon report` in {m['write_s']:.2f} s; medians of {args.reps} loads: "
                  f"plots drawn at {spread(m['drawn_ms'])}, first frame at "
                  f"{spread(m['frame_ms'])}; seen ready by the test after "
                  f"{statistics.median(m['ready_s']):.2f} s")
        print(f"load after: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
