"""How the HTML page draws a figure between its samples, read back from the strokes uPlot
drew in a real headless Chromium: a peak holds until the sample that saw it rise, then
steps up (a 0.3 s spike is not a ramp over the interval before it); a rate and the cores
used cover the interval that ends at their sample, the first one from the job's start (a
rate does not rise from 0). A real `jobmon run` job into the embedded store."""
import json
import os

import pytest

from chromium import CHROMIUM, Chromium
from helpers import PYTHON, jobmon, jobmon_run

MiB = 1 << 20
# idle, a 300 MiB spike for 0.3 s, idle, 64 MiB written and synced, idle
SPIKE_AND_WRITE = r"""
import os, sys, time
time.sleep(0.7)
x = b'1' * (300 << 20)
time.sleep(0.3)
del x
time.sleep(0.7)
with open(os.path.join(sys.argv[1], "out.bin"), "wb") as f:
    for _ in range(64):
        f.write(os.urandom(1 << 20))
    f.flush(); os.fsync(f.fileno())
time.sleep(0.8)
"""

# whether the stroke uPlot drew for a series passes through canvas points: per request
# [plot, field, [[x, y] in data units]] the answers, true or false. The test is of the
# path, solid: the canvas keeps the dash of the series drawn last (a dashed one), and a
# point in one of its gaps would read as off the line.
IN_STROKE = """((asks) => asks.map(([plot, field, points]) => {
  const u = window.jobmonPlots[plot];
  const i = u.jobmonSeries.findIndex(s => s.field === field);
  const path = u.series[i + 1]._paths.stroke, ctx = u.ctx;
  ctx.save();
  ctx.setLineDash([]);
  ctx.lineWidth = 3 * devicePixelRatio;
  const out = points.map(([x, y]) => ctx.isPointInStroke(path, u.valToPos(x, "x", true),
                                                         u.valToPos(y, "y", true)));
  ctx.restore();
  return out;
}))(%s)"""


@pytest.mark.skipif(not CHROMIUM, reason="needs chromium (tests/setup.sh)")
def test_peaks_step_up_and_rates_cover_their_intervals(tmp_path):
    store, page = str(tmp_path / "s.db"), str(tmp_path / "job.html")
    r = jobmon_run(["--interval=0.5", "--job-id=spike"], [PYTHON, "-c", SPIKE_AND_WRITE,
                                                            str(tmp_path)], store=store)
    assert r.returncode == 0, r.stderr
    assert jobmon("report", "spike", "--html", page, f"--store={store}").returncode == 0
    samples = json.loads(jobmon("query", "spike", "--json", f"--store={store}").stdout)[
        "samples"]
    t = [s["time"] / 1e9 for s in samples]
    start = t[0] - samples[0]["elapsed_seconds"]
    asks = []
    # the peak: held at the sample before the spike until the sample that saw it
    peak = "mem_peak_bytes" if samples[0].get("mem_peak_bytes") is not None else \
        "mem_resident_peak_bytes"
    y = [s[peak] for s in samples]
    k = next(i for i in range(1, len(y)) if y[i] - y[i - 1] > 100 * MiB)
    mid = (t[k - 1] + t[k]) / 2
    asks.append(["memory", peak, [[mid, y[k - 1]], [mid, (y[k - 1] + y[k]) / 2],
                                  [t[k], (y[k - 1] + y[k]) / 2]]])
    # the write rate: each interval at its own rate, the largest one's flat across it
    w = [s["write_bytes"] for s in samples]
    rates = [(w[i] - (w[i - 1] if i else 0)) / (t[i] - (t[i - 1] if i else start))
             for i in range(len(w))]
    j = max(range(1, len(rates)), key=rates.__getitem__)
    assert rates[j] > 20 * MiB and rates[j - 1] < rates[j] / 2
    mid = (t[j - 1] + t[j]) / 2
    asks.append(["io", "write_bytes", [[mid, rates[j]], [mid, (rates[j - 1] + rates[j]) / 2]]])
    # the cores used: the first sample's value from the job's start
    first = samples[0]["cpu_cores"]
    asks.append(["cpu", "cpu_cores", [[(start + t[0]) / 2, first]]])
    # the resident peak of the reaped processes (their VmHWM) comes with the last sample:
    # flat until it, not a climb over the last interval like a leak
    r = [s["mem_resident_peak_bytes"] for s in samples]
    if r[-1] - r[-2] > 50 * MiB:
        mid = (t[-2] + t[-1]) / 2
        asks.append(["memory", "mem_resident_peak_bytes", [[mid, r[-2]],
                                                           [mid, (r[-2] + r[-1]) / 2]]])
    with Chromium(width=1400, height=900) as b:
        b.open("file://" + os.path.abspath(page))
        assert b.problems() == []
        got = b.evaluate(IN_STROKE % json.dumps(asks))
    assert got[0] == [True, False, True], ("the peak", got[0])       # flat, then a step up
    assert got[1] == [True, False], ("the write rate", got[1])      # flat over its interval
    assert got[2] == [True], ("the first cores used", got[2])      # from the job's start
    assert got[3:] in ([], [[True, False]]), ("the reaped resident peak", got[3:])
