"""Energy per job: the node reader on a recorded powercap tree (tests/fixtures/powercap) whose
counters rise at set powers, the node's CPU time at a set number of busy cores, and real
`jobmon run` jobs taking their share. This machine has no RAPL: the tree is recorded, the
kernel's format exactly; everything that reads it is the real code."""
import json
import os
import subprocess

import pytest

from helpers import JOBMON, TEST_USER, as_user, fixture, needs_root, needs_test_user
from node_site import BUSY, BUSY_WALL, NodeReader, Powered, run_job

pytestmark = needs_root
XEON = {"intel-rapl:0": 60, "intel-rapl:1": 40, "intel-rapl:0:0": 12, "intel-rapl:1:0": 8}


@pytest.fixture
def powered():
    p = Powered("xeon_2s", XEON, busy=4, cpus=8)
    yield p
    p.close()


def cpu(x):
    return x["cpu_user_seconds"] + x["cpu_system_seconds"]


def idle_around(tmp_path, script, arg):
    """sh running `script` between a second of idling either side: the readings that bound
    the job's energy (the first one its sampler takes, the one after its end) fall where its
    CPU time stands still, however late a loaded machine runs the sampler and the reader."""
    path = tmp_path / "work.py"
    path.write_text(script)
    return ["sh", "-c", f"sleep 1; python3 {path} {arg}; sleep 1"]


def warnings(stderr):
    """The run's warnings, less those a loaded machine causes (a reader's refresh late)."""
    return [w for w in stderr.splitlines() if "warning" in w and " s old)" not in w
            and "no energy reading after the job ended" not in w]


def test_rapl_zones_counted_and_left_out():
    from jobmon.node.rapl import zones
    server, why = zones(fixture("powercap", "xeon_2s"))
    assert why is None
    assert sorted((z.name, z.part) for z in server) == \
        [("dram", "dram"), ("dram", "dram"), ("package-0", "cpu"), ("package-1", "cpu")]
    client, why = zones(fixture("powercap", "client"))     # core, uncore, psys, mmio: out
    assert why is None and [(z.name, z.part) for z in client] == [("package-0", "cpu")]
    for z in server + client:
        z.close()
    assert zones("/nonexistent")[1] == "no RAPL on this node (/nonexistent is missing)"


def test_a_counter_that_wraps_keeps_its_total(tmp_path):
    from jobmon.node.rapl import Zone
    d = tmp_path / "intel-rapl:0"
    d.mkdir()
    (d / "max_energy_range_uj").write_text("1000000\n")      # wraps at 1 J
    (d / "energy_uj").write_text("900000\n")
    z = Zone(str(d), "package-0", "cpu")
    for raw in (950000, 50000, 990000, 10):                  # two wraps
        (d / "energy_uj").write_text(f"{raw}\n")
        z.advance()
    z.close()
    assert z.total == 50000 + 100000 + 940000 + 10010


@needs_test_user
def test_a_reader_that_may_not_read_rapl_says_so(powered, tmp_path):
    """Since Linux 5.10 energy_uj is root's alone: a reader run as another user publishes
    no CPU energy, with the reason, and jobs say it."""
    for z in XEON:
        os.chmod(os.path.join(powered.powercap, z, "energy_uj"), 0o400)
    n = NodeReader(powered, args=["--no-network"])
    os.makedirs(n.dir)
    os.chown(n.dir, *[int(x) for x in subprocess.check_output(
        ["id", "-u", TEST_USER]).split() + subprocess.check_output(["id", "-g", TEST_USER]).split()])
    os.chmod(powered.stat, 0o644)
    n.argv = as_user(n.argv)
    try:
        head = n.start().head("energy.json")
        assert head["rapl"] is None and "readable by root only" in head["why"]
        _s, summary, _e = run_job(str(tmp_path), n.env(), ["python3", "-c", BUSY, "0.3"])
    finally:
        n.close()
    assert summary.get("cpu_energy_joules") is None and summary.get("energy_joules") is None
    assert "no cpu/dram" in summary["energy_parts"] and "root only" in summary["energy_parts"]


def test_a_job_gets_its_share_of_the_busy_node(powered, tmp_path):
    """100 W of packages and 20 W of DRAM on a node busy on 4 cores: each CPU-second of the
    job costs 25 J of package and 5 J of DRAM energy, whatever the sampling grid; its
    samples' power is the rate of that energy."""
    n = NodeReader(powered, "[node_reader]\ncarbon_intensity = 400\n").start(period=0.5)
    try:
        samples, summary, r = run_job(str(tmp_path), n.env(),
                                      idle_around(tmp_path, BUSY, 1.5))
    finally:
        n.close()
    assert warnings(r.stderr) == []
    used = cpu(summary) - cpu(samples[0])        # from the sampler's first read on
    assert summary["cpu_energy_joules"] == pytest.approx(25 * used, rel=0.03)
    assert summary["dram_energy_joules"] == pytest.approx(5 * used, rel=0.03)
    assert summary["energy_joules"] == pytest.approx(
        summary["cpu_energy_joules"] + summary["dram_energy_joules"], abs=0.01)
    assert summary["co2e_grams"] == pytest.approx(summary["energy_joules"] / 3.6e6 * 400,
                                                  rel=1e-3)
    assert summary["carbon_intensity"] == 400.0
    assert summary["energy_parts"] == "cpu,dram" and summary["energy_share"] == "busy"
    assert summary["energy_missing_seconds"] == 0
    energy = [x["energy_joules"] for x in samples if "energy_joules" in x]
    assert energy == sorted(energy) and energy[-1] <= summary["energy_joules"]
    rated = [(a["elapsed_seconds"], b["elapsed_seconds"], b["power_watts"])
             for a, b in zip(samples, samples[1:]) if "power_watts" in b]
    assert max(w for _a, _b, w in rated) > 0
    assert sum((t1 - t0) * w for t0, t1, w in rated) == pytest.approx(energy[-1] - energy[0],
                                                                    rel=0.02)


def test_capacity_share_leaves_idle_cpus_to_nobody(powered, tmp_path):
    """With "capacity", a CPU-second of the job costs the node's power / its 8 CPUs."""
    n = NodeReader(powered, '[node_reader]\nenergy_share = "capacity"\n').start()
    try:
        samples, summary, _e = run_job(str(tmp_path), n.env(),
                                       idle_around(tmp_path, BUSY, 1.5))
    finally:
        n.close()
    used = cpu(summary) - cpu(samples[0])
    assert summary["energy_share"] == "capacity"
    assert summary["cpu_energy_joules"] == pytest.approx(100 / 8 * used, rel=0.1)
    assert summary["dram_energy_joules"] == pytest.approx(20 / 8 * used, rel=0.1)


def test_counters_that_wrap_during_the_job(powered, tmp_path):
    """The packages wrap every 4 s (240 J at 60 W, 6 s at 40 W): the 6 s job sees one wrap
    or two, and a reader refreshing every 0.1 s would have to stall for 4 s to miss one."""
    for z in ("intel-rapl:0", "intel-rapl:1"):
        powered.set_range(z, 240_000_000)
    n = NodeReader(powered).start(period=0.1)
    try:
        samples, summary, _r = run_job(str(tmp_path), n.env(),
                                       idle_around(tmp_path, BUSY_WALL, 6))
    finally:
        n.close()
    assert summary["wall_seconds"] >= 6
    assert summary["cpu_energy_joules"] == pytest.approx(
        25 * (cpu(summary) - cpu(samples[0])), rel=0.03)


def test_two_jobs_share_by_their_cpu_time(powered, tmp_path):
    """Two jobs at once, one busy on a core and one on two: each pays 25 J of package
    energy per CPU-second it used from its sampler's first read on -- its own CPU time as
    its sampler measured it, whatever CPU a loaded machine gave it. Each job idles for a
    second either side of its work, so the readings that bound its energy (the first one
    its sampler takes, the one after its end) fall where its CPU time stands still. Within
    5 %: the recorded counters rise in 20 ms steps of a thread that a loaded machine can
    hold up, and a job's CPU time in a refresh the counters stood still gets no energy (a
    real node's counters never stand still)."""
    (tmp_path / "busy.py").write_text(BUSY)
    busy = f"python3 {tmp_path}/busy.py"
    jobs = {"a": f"sleep 1; {busy} 0.6; sleep 1",          # as idle_around()
            "b": f"sleep 1; {busy} 1.2 & {busy} 1.2; wait; sleep 1"}
    n = NodeReader(powered).start(period=0.5)
    try:
        runs = [subprocess.Popen([JOBMON, "run", "--interval=0.2", "--store=none",
                                  f"--out={tmp_path}/{x}.jsonl", f"--summary={tmp_path}/{x}.json",
                                  "--", "sh", "-c", cmd], env=n.env())
                for x, cmd in jobs.items()]
        assert [r.wait(60) for r in runs] == [0, 0]
    finally:
        n.close()
    for x in jobs:
        first = json.loads(open(f"{tmp_path}/{x}.jsonl").readline())
        s = json.load(open(f"{tmp_path}/{x}.json"))
        used = cpu(s) - cpu(first)
        assert used > {"a": 0.6, "b": 2.4}[x]
        assert s["cpu_energy_joules"] == pytest.approx(25 * used, rel=0.05), x
        assert s["dram_energy_joules"] == pytest.approx(5 * used, rel=0.05), x


def test_a_reader_restarted_mid_job_loses_only_the_gap(powered, tmp_path):
    n = NodeReader(powered).start(period=0.1)
    job = subprocess.Popen([JOBMON, "run", "--interval=0.1", "--store=none",
                            f"--summary={tmp_path}/s.json", "--", "python3", "-c", BUSY, "2"],
                           env=n.env(), stderr=subprocess.PIPE, text=True)
    try:
        n.wait("energy.json", after_seq=n.head("energy.json")["seq"] + 5)
        n.stop()
        n.start(period=0.1)
        _out, err = job.communicate(timeout=60)
    finally:
        n.close()
    s = json.load(open(f"{tmp_path}/s.json"))
    assert job.returncode == 0
    assert 0 < s["energy_missing_seconds"] < 3
    assert 0 < s["cpu_energy_joules"] < 25 * cpu(s)


def test_without_rapl_and_without_a_reader(tmp_path):
    """No RAPL: no CPU energy, and the job says why; no node reader: no energy fields, and
    no warning (a node without one is an ordinary node)."""
    n = NodeReader(None, "[node_reader]\ncarbon_intensity = 300\n", ["--no-network"]).start()
    try:
        _s, summary, _e = run_job(str(tmp_path), n.env(), ["true"])
    finally:
        n.close()
    assert "cpu_energy_joules" not in summary or summary["cpu_energy_joules"] is None
    assert summary["energy_parts"] == "no cpu/dram: no RAPL on this node (/nonexistent is " \
        "missing)"
    env = dict(os.environ, JOBMON_NODE_DIR=str(tmp_path / "none"), JOBMON_GPU="off")
    _s, summary, r = run_job(str(tmp_path), env, ["true"])
    assert summary.get("energy_joules") is None and summary.get("net_source") is None
    assert "warning" not in r.stderr


def test_carbon_intensity_from_the_sites_series(tmp_path):
    from jobmon.node.carbon import Intensity, IntensityError, parse
    t0 = 1772323200.0                                        # 2026-03-01T00:00:00Z
    f = tmp_path / "ci.csv"
    f.write_text("time,g_per_kwh\n# the grid operator's figures\n"
                 "2026-03-01T00:00:00Z,120\n1772326800,80.5   # 01:00Z\n"
                 "2026-03-01T03:00:00+01:00,300\n")
    assert parse(f.read_text()) == [(t0, 120.0), (t0 + 3600, 80.5), (t0 + 7200, 300.0)]
    i = Intensity(450.0, str(f))
    assert i.at(t0 + 10) == (120.0, "file")
    assert i.at(t0 + 3600 + 5) == (80.5, "file")
    assert i.at(t0 + 2 * 3600 + 3599) == (300.0, "file")     # the last holds one step
    assert i.at(t0 + 3 * 3600 + 1) == (450.0, "constant")    # then the constant
    assert i.at(t0 - 1) == (450.0, "constant")
    assert Intensity().at(t0) == (None, None)
    f.write_text(f"{t0},50\n{t0 + 60},60\n")                # the site updated it
    assert i.at(t0 + 30) == (50.0, "file")
    for bad, why in (("2026-03-01T00:00:00,1", "no time zone"), ("1,3", "must rise"),
                     ("x", "TIME,G_PER_KWH"), ("9,-5", "not an intensity")):
        with pytest.raises(IntensityError, match=why):
            parse("5,1\n" + bad)


def test_a_gpu_jobs_energy_adds_its_gpus_and_says_when_they_were_shared(powered, tmp_path):
    """The recorded NVML (350 W on GPU 1) and the RAPL tree through one node reader: the
    job's energy is its GPU's counter plus its CPU and DRAM shares. A process not of the
    job on its GPU makes the GPU's figures the device's: counted in gpu_shared_samples."""
    from gpu_node_site import GpuNode
    gpu = GpuNode()
    gpu.set_procs(0, [(1, 1 << 30)])          # init on GPU 0: not any job's
    reader = subprocess.Popen([JOBMON, "node-reader", f"--dir={gpu.dir}", "--period=0.2",
                               f"--recorded={gpu.recording}", f"--powercap={powered.powercap}",
                               f"--cpu-stat={powered.stat}", "--no-network"],
                              stderr=subprocess.PIPE, text=True)
    try:
        gpu.wait_published()
        alone = run_job(str(tmp_path), gpu.env(CUDA_VISIBLE_DEVICES="1"),
                        ["python3", "-c", BUSY, "1"])[1]
        (tmp_path / "shared").mkdir()
        shared = run_job(str(tmp_path / "shared"), gpu.env(CUDA_VISIBLE_DEVICES="0"),
                         ["sleep", "0.5"])[1]
    finally:
        reader.terminate()
        reader.wait(10)
        gpu.close()
    assert alone["energy_parts"] == "gpu,cpu,dram" and alone["gpu_shared_samples"] == 0
    assert alone["energy_joules"] == pytest.approx(
        alone["gpu_energy_joules"] + alone["cpu_energy_joules"] + alone["dram_energy_joules"],
        abs=0.01)
    assert alone["gpu_energy_joules"] == pytest.approx(350 * alone["wall_seconds"], rel=0.15)
    assert shared["gpu_shared_samples"] > 0 and shared["gpu_shared_samples"] <= shared["samples"]


def test_a_source_that_fails_leaves_the_others_publishing(powered):
    """The node's CPU time unreadable mid-run: energy.json ages, network.txt goes on, the
    reader stays up and says so once."""
    n = NodeReader(powered).start(period=0.1, wait_for=("energy.json", "network.txt"))
    try:
        powered.stop.set()
        powered.thread.join()
        os.unlink(powered.stat)
        os.mkdir(powered.stat)                   # reading it now fails (EISDIR)
        n.wait("network.txt", after_seq=n.head("network.txt")["seq"] + 5)
        assert n.head("energy.json")["seq"] < n.head("network.txt")["seq"] - 3
        assert n.proc.poll() is None
    finally:
        n.close()
    assert n.proc.stderr.read().count("energy.json: nothing published (IsADirectoryError") == 1


@pytest.mark.parametrize("period,seconds", [(1.0, 1), (1.0, 3), (0.5, 2), (1.0, 5)])
def test_short_jobs_energy_lies_within_its_bound(powered, tmp_path, period, seconds):
    """Short jobs busy from their first instant (no idling around them): the truth is 25 J
    of package and 5 J of DRAM energy per CPU-second of the whole job, its CPU before the
    sampler's first read and before the reader's first reading included, which the figure
    leaves out and its bound covers. Within the bound, plus 3 % for the recorded counters
    and /proc/stat, which rise in 20 ms steps of a driver thread (a real node's counters
    rise smoothly); and the bound is no wider than the CPU time the job had used by its
    sampler's first read, at 25 J a CPU-second, and 5 % of the figure (docs/energy.md)."""
    n = NodeReader(powered, "[node_reader]\ncarbon_intensity = 400\n").start(period=period)
    try:
        samples, s, _r = run_job(str(tmp_path), n.env(), ["python3", "-c", BUSY, str(seconds)])
    finally:
        n.close()
    used = cpu(s)
    assert used >= seconds
    for part, per in (("cpu", 25), ("dram", 5)):
        figure, bound = s[f"{part}_energy_joules"], s[f"{part}_energy_error_joules"]
        truth = per * used
        print(f"\n{part}: period {period} s, job {s['wall_seconds']:.2f} s, {used:.2f} CPU s:"
              f" figure {figure:.2f} J, truth {truth:.2f} J, bound ± {bound:.2f} J")
        assert abs(figure - truth) <= bound + 0.03 * truth, (part, figure, truth, bound)
        assert 0 < bound <= per * cpu(samples[0]) + 0.05 * figure, (part, bound, samples[0])
    assert s["energy_error_joules"] == pytest.approx(
        s["cpu_energy_error_joules"] + s["dram_energy_error_joules"], abs=0.002)
    assert s["co2e_error_grams"] == pytest.approx(s["energy_error_joules"] / 3.6e6 * 400,
                                                  rel=1e-3, abs=2e-6)    # 6 decimals
    assert s["energy_method"].startswith("cpu,dram: RAPL counters x the job's share of the "
                                         "node's busy CPU time")


def test_a_reader_restart_widens_the_bound_by_the_gap(powered, tmp_path):
    """The CPU time of a gap where the reader restarted is in no total: the bound covers
    it at the cost a CPU-second had after it."""
    n = NodeReader(powered).start(period=0.1)
    job = subprocess.Popen([JOBMON, "run", "--interval=0.1", "--store=none",
                            f"--summary={tmp_path}/s.json", "--", "python3", "-c", BUSY, "2"],
                           env=n.env(), stderr=subprocess.PIPE, text=True)
    try:
        n.wait("energy.json", after_seq=n.head("energy.json")["seq"] + 5)
        n.stop()
        n.start(period=0.1)
        job.communicate(timeout=60)
    finally:
        n.close()
    s = json.load(open(f"{tmp_path}/s.json"))
    truth = 25 * cpu(s)
    assert s["cpu_energy_joules"] < truth - 2          # the gap's CPU time is not in it
    assert abs(s["cpu_energy_joules"] - truth) <= s["cpu_energy_error_joules"] + 0.03 * truth


@pytest.mark.parametrize("step", [0.7, 1.5, 3.0, 100.0])
def test_the_bound_holds_where_a_cpu_seconds_cost_changes(step):
    """The apportioning itself (the real EnergyShare), on readings whose truth is known to
    the joule: the node draws 100 W and 300 W by turns of `step` seconds on 4 busy cores,
    the job is busy on one core but for 2.2-5.7 s, it is read every 3 s and the reader
    refreshes every second, so the job's CPU time at each reading is interpolated across
    a stop and a cost that changed. The truth lies within the bound, the bound within
    two thirds of the truth; with constant power it is the CPU time before the first
    reading, at 25 J a CPU-second (docs/energy.md, "Its bound")."""
    from jobmon.probes.node_energy import EnergyShare
    dt = 0.0005

    def power(t):
        return 100.0 if int((t + 10) // step) % 2 == 0 else 300.0

    def rate(t):
        return 1.0 if t < 2.2 or t >= 5.7 else 0.0

    def integral(f, a, b):
        n = int(round((b - a) / dt))
        return sum(f(a + (i + 0.5) * dt) for i in range(n)) * dt

    def reading(t):
        return {"gen": "g", "mono": t, "rapl": {"cpu": integral(power, -10, t)},
                "busy_s": 4 * (t + 10), "capacity_s": 8 * (t + 10), "share": "busy",
                "period": 1.0}

    truth = integral(lambda t: power(t) / 4 * rate(t), 0, 10)
    e = EnergyShare(None, None)
    for read, latest in ((0.1, -0.5), (3.1, 2.5), (6.1, 5.5), (9.1, 8.5), (10.0, 9.5)):
        e.history.append((read, integral(rate, 0, read)))     # as update() does
        e.take(reading(latest))
    e.take(reading(10.5))                                    # the one after the end
    e.finish(10.0)
    figure, bound = e.joules["cpu"], e.errors["cpu"]
    assert abs(figure - truth) <= bound + 1e-6, (figure, truth, bound)
    assert bound <= 2 / 3 * truth, (bound, truth)
    if step == 100.0:
        assert bound == pytest.approx(25 * 0.1)
