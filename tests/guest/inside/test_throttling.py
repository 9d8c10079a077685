"""CPU throttling under a CPU quota on cgroup v2: a real job of 2 spinning processes in a
cgroup whose cpu.max allows 0.5 cores, through the real `jobmon run` and the advice rule
(the host has the same on cgroup v1, cpu.cfs_quota_us: tests/test_throttling.py)."""
import os
import tempfile
import time

import jobrun
import tree
from contention import SPIN
from helpers import PYTHON

from jobmon.config.report import defaults
from jobmon.summary.advice import advise

QUOTA, PERIOD = 50000, 100000     # 0.5 cores
SETUP = 10                        # periods from the command's start to its first read: 1 s
FIELDS = ("cpu_throttled_seconds", "cpu_quota_periods", "cpu_throttled_periods")


def cpu_stat(d):
    return {k: int(v) for k, v in (x.split() for x in open(os.path.join(d, "cpu.stat"))
                                   if x.strip())}


def test_a_job_burning_2_cores_under_cpu_max_of_half_a_core_is_throttled(raw_guest):
    """The cgroup's cpu.weight is the most there is: the quota alone holds the job back,
    so every period it runs a whole one in ends throttled."""
    d = tree.make("jobs/throttled")
    tree.write(d, "cpu.max", f"{QUOTA} {PERIOD}")
    tree.write(d, "cpu.weight", "10000")
    # the job's first act: the cgroup's cpu.stat as the command starts
    at_start = os.path.join(tempfile.mkdtemp(), "cpu.stat")
    job = ["/bin/sh", "-c", f'cat {d}/cpu.stat > {at_start}; exec "$0" "$@"',
           PYTHON, "-c", SPIN, "2", "4"]
    r = jobrun.Run(["--cgroup=existing", "--tag=request_cpus=2"], job, cgroup=d, interval=0.5)
    kernel, after = cpu_stat(d), time.time()
    started = {k: int(v) for k, v in (x.split() for x in open(at_start) if x.strip())}
    s = r.summary
    print({k: s.get(k) for k in FIELDS + ("cpu_throttled_percent", "cpu_cores_avg",
                                          "wall_seconds")}, kernel, started)
    assert s["method"] == "cgroup-v2" and s["cores_allocated"] == 0.5, s
    # jobmon's figures are the kernel's from just before the command starts to its end:
    # jobmon, in the cgroup too, set up before it (seconds under emulation: the kernel's
    # count from the job's own first read leaves that out) and ran on after it (its final
    # read, its exit); the command's start to that first read (fork, exec, the shell) is
    # in jobmon's figures but not in the job's count: up to SETUP periods
    later = int((after - s["end_time"]) * 1e6 / PERIOD) + 2
    for key, field in (("nr_periods", "cpu_quota_periods"),
                       ("nr_throttled", "cpu_throttled_periods")):
        assert -SETUP <= kernel[key] - started[key] - s[field] <= later, (key, s, kernel)
    throttled = (kernel["throttled_usec"] - started["throttled_usec"]) / 1e6
    assert -SETUP * 2 * PERIOD / 1e6 <= throttled - s["cpu_throttled_seconds"] <= \
        later * 2 * PERIOD / 1e6, (s, kernel)
    periods = s["cpu_quota_periods"]
    assert s["cpu_throttled_percent"] == round(100 * s["cpu_throttled_periods"] / periods, 2)
    # every period ends throttled but the first and last (partly outside the run), and
    # those the emulating host took the guest's CPUs away in (94 % throttled in one run)
    assert periods >= 0.5 * s["wall_seconds"] * 1e6 / PERIOD, s
    assert s["cpu_throttled_percent"] >= 75, s
    for field in FIELDS:
        vals = [x[field] for x in r.samples if field in x]
        assert len(vals) == len(r.samples) and vals == sorted(vals), field
    got = {a["rule"]: a["text"] for a in advise(s, defaults())}
    assert got["cpu_throttled"].startswith("held back by its CPU quota in "), got


def test_without_the_cpu_controller_there_is_no_throttling_figure(raw_guest):
    """cpu.stat is in every v2 cgroup; its throttling keys only with the cpu controller."""
    d = tree.make("jobs/no-cpu", ctrls=("memory", "pids"))
    r = jobrun.Run(["--cgroup=existing"], [PYTHON, "-c", SPIN, "1", "0.5"], cgroup=d,
                   interval=0.2)
    s = r.summary
    assert s["method"] == "cgroup-v2", s
    assert all(s.get(k) is None for k in FIELDS + ("cpu_throttled_percent",)), s
