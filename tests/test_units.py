"""One unit policy (bytes in binary units, KiB = 1024 B, with their IEC names) and one
formatter (jobmon.printable.size, jobmon.render.units.human) in every view: `jobmon query`
(terminal at 80 columns, JSON advice, CSV), the HTML page read in Chromium, `jobmon report`,
`jobmon pilot`, `jobmon top`/`watch` and the end-of-job card; no figure in exponent form,
no "1 units". Growth rates that a start-up step cannot inflate. Real `jobmon run`s."""
import json
import os
import re
import subprocess
import time

import pytest

from chromium import CHROMIUM, Chromium
from helpers import JOBMON, jobmon, jobmon_run, py
from jobmon.printable import significant, size
from jobmon.render.units import human
from jobmon.stores.local import LocalStore
from jobmon.summary import Fold

MiB, GiB = 1 << 20, 1 << 30
# a byte figure in another unit than the policy's, a figure in exponent form, a unit that
# disagrees with its figure, a duration with a needless decimal
WRONG = re.compile(r"\d ?(?:[kKMGTP]B|[KMGTP])\b|\d[eE][-+]?\d|\b1 units\b|\d\.0 s\)")
# a job that loads 150 MiB in its first moment, then reads and writes at that level for
# 2.5 s and until the sampler has written 25 samples of that level (to the file named by
# its argument): flat, whatever its first second did, and its exit's teardown a sample or
# two among many however seldom a busy machine lets the sampler look
FLAT = """
import json, os, sys, time
b = bytearray(150 << 20)
for i in range(0, len(b), 4096): b[i] = 1
def level():
    if not os.path.exists(sys.argv[1]):     # no sample written yet
        return 0
    with open(sys.argv[1]) as f:
        return sum(json.loads(s)["mem_resident_bytes"] >= 150 << 20 for s in f if s[-1] == "\\n")
t = time.time()
while time.time() - t < 2.5 or level() < 25:
    os.urandom(1 << 16)
    time.sleep(0.05)
"""
# a leak of 8 MiB every 0.1 s (80 MiB/s, 281.25 GiB/h), or, given a file the sampler
# writes its samples to (argv[2]), 8 MiB a sample: a steady rise on every sampler's clock
# however a busy machine delays either; it writes when it held how much to the file
# named by argv[1], if any
LEAK = """
import json, os, sys, time
def samples():
    if not os.path.exists(sys.argv[2]):     # no sample written yet
        return 0
    with open(sys.argv[2]) as f:
        return f.read().count("\\n")
x, log = [], []
t = time.time()
while time.time() - t < 3:
    x.append(bytearray(8 << 20))
    for i in range(0, 8 << 20, 4096): x[-1][i] = 1
    log.append((time.time(), 8 * len(x)))
    if sys.argv[2:]:
        n = samples()
        while samples() == n:
            time.sleep(0.01)
    else:
        time.sleep(0.1)
if sys.argv[1:]:
    open(sys.argv[1], "w").write(json.dumps(log))
"""


def test_size_is_binary_with_iec_names():
    assert [size(v) for v in (0, 512, 1024, 7.9 * MiB, 3 * GiB, -5 * GiB)] == \
        ["0 B", "512 B", "1.0 KiB", "7.9 MiB", "3.0 GiB", "-5.0 GiB"]
    assert [size(v, short=True) for v in (1023.96 * MiB, 100 * MiB, 3 * GiB, 12.3 * MiB)] == \
        ["1024 MiB", "100 MiB", "3 GiB", "12.3 MiB"]
    assert max(len(size(v, short=True)) for v in range(0, 1 << 42, 7 << 27)) <= 8
    assert human(5e-06, "core-h") == "0.000005 core-h" and human(1, "units") == "1 unit"
    assert human(2 * GiB, "bytes/h") == "2.0 GiB/h" and human(10800, "s") == "10800 s (3:00:00)"


def test_energy_and_co2e_take_their_unit_after_rounding():
    """CO2e in 3 significant digits, energy to 0.1 of its unit: a figure that rounds up to
    the next unit is written in it (not "1000.0 gCO2e", "100.0 gCO2e" in 4 digits); a
    site's tonnes of CO2e in `jobmon report` written out (not "1.23e+03")."""
    assert [human(g, "gCO2e") for g in (0.0001234, 0.42, 0.9999, 9.996, 12.34, 99.96, 999.6,
                                        4560, 123456)] == \
        ["0.000123 gCO2e", "0.420 gCO2e", "1.00 gCO2e", "10.0 gCO2e", "12.3 gCO2e",
         "100 gCO2e", "1.00 kgCO2e", "4.56 kgCO2e", "123 kgCO2e"]
    assert [human(j, "J") for j in (850, 999.94, 999.96, 12400, 999_960, 4.5e6)] == \
        ["850.0 J", "999.9 J", "1.0 kJ", "12.4 kJ", "1.0 MJ (0.28 kWh)", "4.5 MJ (1.25 kWh)"]
    assert [significant(kg) for kg in (0.0000123, 0.9999, 1234.5, 1.2e6)] == \
        ["0.0000123", "1.00", "1,234", "1,200,000"]


def test_growth_of_a_job_flat_after_its_first_second_is_near_zero():
    """Samples every 0.1 s: 150 MiB reached in the first 0.3 s, then 60 s flat within a
    page or two. The old fit up to the peak (at 0.2 s) said ~2600 GiB/h."""
    f = Fold()
    for i in range(600):
        level = min(i, 3) * 50 * MiB + (i * 7919 % 3) * 4096
        f.add({"elapsed_seconds": 0.1 * (i + 1), "mem_resident_bytes": level, "procs": 1})
    growth, rising = f.mem_trend()
    assert rising == 0 and abs(growth) < 1 * MiB, growth
    # a leak of 10 MiB a second over the run is 35.2 GiB/h, however it started
    f = Fold()
    for i in range(600):
        f.add({"elapsed_seconds": 0.1 * (i + 1), "procs": 1,
               "mem_resident_bytes": (300 * MiB if i else 0) + i * MiB})
    growth, rising = f.mem_trend()
    assert rising == 1 and growth == pytest.approx(10 * MiB * 3600, rel=0.01)


def test_growth_leaves_the_exits_teardown_out():
    """A busy machine lets the sampler look seldom: a flat job's six samples at its level,
    then three of its exit's teardown, falling to the end. Over those few points the
    median slope was -762 GiB/h; the teardown left out, 0. A leak's rate is its rate,
    teardown or not; a job that shrinks over its run still reads shrinking."""
    def trend(levels):
        f = Fold()
        for i, mib in enumerate(levels):
            f.add({"elapsed_seconds": 0.1 * (i + 1), "mem_resident_bytes": mib * MiB,
                   "procs": 1})
        return f.mem_trend()
    assert trend([20, 90] + [155] * 6 + [135, 90, 41]) == (0.0, 0)
    assert trend([20, 90] + [155] * 6 + [135, 41, 41]) == (0.0, 0)
    leak = [10 + 8 * i for i in range(20)]
    assert trend(leak + [135, 90, 41]) == trend(leak) == (8 * MiB * 36000, 1)
    growth, rising = trend([300 - 5 * i for i in range(40)])
    assert growth == pytest.approx(-50 * MiB * 3600) and rising == 0


def test_growth_of_real_jobs(tmp_path):
    truth = tmp_path / "held"
    samples = {name: tmp_path / f"{name}.jsonl" for name in ("flat", "leak")}
    for name, argv in (("flat", py(FLAT, str(samples["flat"]))),
                       ("leak", py(LEAK, str(truth), str(samples["leak"])))):
        r = jobmon_run(["--store=none", "--interval=0.1", f"--summary={tmp_path}/{name}.json",
                        f"--out={samples[name]}"], argv)
        assert r.returncode == 0, r.stderr
    flat = json.loads((tmp_path / "flat.json").read_text())
    leak = json.loads((tmp_path / "leak.json").read_text())
    # flat: within 64 MiB/h of nothing, a level of 150 MiB (it was GiB/h)
    levels = [(x["elapsed_seconds"], x["mem_resident_bytes"] >> 20)
              for x in map(json.loads, samples["flat"].open())]
    assert abs(flat["mem_growth_bytes_per_hour"]) < 64 * MiB, (
        flat["mem_growth_bytes_per_hour"], levels)
    assert flat["mem_rising"] == 0, levels
    # the leak's rate over the run's second half, by its own clock: within 20 %
    half = leak["start_time"] + leak["wall_seconds"] / 2
    held = [(t, mib) for t, mib in json.loads(truth.read_text()) if t >= half]
    (t0, a), (t1, b) = held[0], held[-1]
    assert leak["mem_growth_bytes_per_hour"] == pytest.approx(
        (b - a) * MiB / (t1 - t0) * 3600, rel=0.2), held


def _page_text(path):
    with Chromium() as b:
        b.open("file://" + path)
        text = b.evaluate("document.body.innerText")
        assert b.problems() == []
    return text


def test_every_view_speaks_one_unit(tmp_path):
    store = str(tmp_path / "s.db")
    env = dict(os.environ, COLUMNS="80", JOBMON_CONFIG=str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    env.pop("JOBMON_STORE", None)
    jobs = {"one-unit": (["--tag=request_cpus=1", "--tag=request_memory=2GiB"], "pass"),
            "too-big": (["--tag=request_cpus=1", "--tag=request_memory=8GiB"], "pass"),
            "leaky": (["--tag=request_cpus=1", "--tag=request_memory=4GiB"], LEAK)}
    for job, (tags, code) in jobs.items():
        r = jobmon_run([f"--job-id={job}", "--interval=0.1"] + tags, py(code), store=store,
                       env=env)
        assert r.returncode == 0, r.stderr
    texts = {}
    for job in jobs:
        for form in ((), ("--csv",)):
            q = jobmon("query", job, *form, f"--store={store}", env=env)
            assert q.returncode == 0, q.stderr
            texts[" ".join((job,) + form)] = q.stdout
        doc = json.loads(jobmon("query", job, "--json", f"--store={store}", env=env).stdout)
        texts[job + " advice"] = "\n".join(a["text"] for a in doc["advice"])
        texts[job + " rising"] = doc["summary"]["mem_rising"]
        page = str(tmp_path / f"{job}.html")
        assert jobmon("report", job, "--html", page, f"--store={store}", env=env).returncode == 0
        if CHROMIUM:
            texts[job + " html"] = _page_text(page)
    texts["report"] = jobmon("report", "--since=1d", f"--store={store}", env=env).stdout
    assert "memory_overrequested" in texts["too-big --csv"]
    assert "ask for 512 MiB" in texts["too-big advice"]        # 8 GiB given
    if texts.pop("leaky rising"):   # (a busy machine may make its rise less steady)
        # a 3 s run: what it rose over the run, not a rate per hour
        assert re.search(r"\(\+\d+\.\d MiB over its \d+ s\): a leak", texts["leaky advice"])
    texts.pop("one-unit rising"), texts.pop("too-big rising")
    assert re.search(r"canonical units held \(1 core \+ 2 GiB\) +1 unit ", texts["one-unit"])
    assert re.search(r"core-hours allocated +0\.0000\d+ core-h", texts["one-unit"])
    if CHROMIUM:
        assert re.search(r"resident memory growth\s+\d+\.\d GiB/h", texts["leaky html"])
    for name, text in texts.items():
        if "csv" in name:   # figures for programs: raw numbers in base units
            continue
        assert not WRONG.findall(text.replace(name.split()[0], "")), (name, WRONG.findall(text))
        if name.endswith(("html", "advice")):   # a page; the texts as JSON has them
            continue
        assert max(len(x) for x in text.splitlines()) <= 80, name


def test_pilot_and_live_views_speak_it_too(tmp_path):
    store = str(tmp_path / "p.db")
    st, t0 = LocalStore(store), time.time() - 11000
    st.open({"job": "pilot-1", "host": "wn", "user": "u", "method": "procfs",
             "start_time": t0, "tags": {"CpusProvisioned": "8", "MemoryProvisioned": "16384"},
             "command": ["glidein"], "interval": 10, "scheduler": "local", "run": None})
    st.close({"job": "pilot-1", "start_time": t0, "end_time": t0 + 10800, "exit_code": 0,
              "signal": None, "wall_seconds": 10800.0, "tags": {}})
    r = jobmon("pilot", "pilot-1", f"--store={store}", "--validated-at", str(t0 + 60))
    assert r.returncode == 0, r.stderr
    assert "10800 s (3:00:00)" in r.stdout and "16.0 GiB" in r.stdout, r.stdout
    assert not WRONG.findall(r.stdout.replace("pilot-1", "")), r.stdout
    # top and watch: memory as the same formatter gives it, in a narrow column
    live = subprocess.Popen([JOBMON, "run", "--job-id=live-1", "--interval=0.2",
                             f"--store={store}", "--"] + py(
        "b = bytearray(88 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
        "import time; time.sleep(4)"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            top = jobmon("top", "--once", "--spool=none", f"--store={store}").stdout
            if re.search(r"live-1 .* 9\d\.\d MiB +- ", top):
                break
            time.sleep(0.2)
        else:
            raise AssertionError(top)
        watch = jobmon("watch", "live-1", "--once", "--spool=none", f"--store={store}").stdout
        assert re.search(r"memory +9\d\.\d MiB", watch), watch
        for text in (top, watch):
            assert not WRONG.findall(text.replace("live-1", "")), text
    finally:
        live.wait(timeout=30)
