"""Run the real `jobmon run` (the .venv console script) on the guest's jobs and read back
what it reported and what the jobs measured of themselves."""
import json
import os
import resource
import subprocess

import reaper
from helpers import JOBMON, PYTHON, as_user, cpu_tolerance, shared_tmpdir

JOBS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs")
MiB = 1 << 20
TIMEOUT = 180   # one job under emulation takes 3-15 s


def job(name, *args):
    return [PYTHON, os.path.join(JOBS, name + ".py")] + [str(a) for a in args]


class Run:
    """One `jobmon run`: its summary, samples (--out), stderr, and the resources jobmon and
    everything it reaped used (wait4 on it: the test is its parent)."""

    def __init__(self, args, cmd, user=None, cgroup=None, interval=2, out_path=None):
        self.dir = shared_tmpdir("jobmon-guest-")   # writable by the test user too
        self.summary_path = os.path.join(self.dir, "summary.json")
        self.out_path = out_path or os.path.join(self.dir, "samples.jsonl")
        argv = [JOBMON, "run", f"--interval={interval}", f"--summary={self.summary_path}",
                f"--out={self.out_path}", f"--store={os.path.join(self.dir, 'store.db')}"]
        argv += list(args) + ["--"] + list(cmd)
        if user:
            argv = as_user(argv, user)   # setpriv execs jobmon: still our child
        if cgroup:   # started in that cgroup: the cgroup sees all but enter.py's start-up
            premove = os.path.join(self.dir, "premove")
            argv = job("enter", cgroup, premove, "--") + argv
        before = _children_cpu()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.pid = p.pid   # enter.py execs (setpriv execs) jobmon: one process
        self.stdout, err = p.communicate(timeout=TIMEOUT)
        # jobmon and all it reaped (the job, whole): what the test, its parent, sees
        self.total_cpu = _children_cpu() - before
        if cgroup:
            with open(premove) as f:
                self.total_cpu -= float(f.read())
        self.stderr = err.decode(errors="replace")
        assert p.returncode == 0, f"jobmon run exited {p.returncode}: {self.stderr}"
        with open(self.summary_path) as f:
            self.summary = json.load(f)
        with open(self.out_path) as f:
            self.samples = [json.loads(line) for line in f if line.strip()]

    @property
    def cpu(self):
        return self.summary["cpu_user_seconds"] + self.summary["cpu_system_seconds"]


def _children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def cpu_tree(tmp_dir, spike, wait_for=None):
    """argv of the cpu_tree job, under a reaper, writing its truth below tmp_dir; with
    wait_for (a `--out` file), its spike waits for the first sample there."""
    return [reaper.path()] + job("cpu_tree", os.path.join(tmp_dir, "truth"), spike,
                                 reaper.path(), *([wait_for] if wait_for else []))


class TreeTruth:
    """What cpu_tree measured of itself: CPU of every process (from the reapers: the top
    one's output is the job's stdout), the spike, the cgroups it and jobmon ran in."""

    def __init__(self, tmp_dir, top_output):
        base = os.path.join(tmp_dir, "truth")
        with open(base) as f:
            info = json.load(f)
        with open(base + ".daemon", "rb") as f:
            self.cpu = reaper.cpu(top_output) + reaper.cpu(f.read())
        self.spike = info["spike"]
        self.spike_hwm = info["spike_hwm"]   # VmHWM: includes shared pages not charged here
        self.cgroup = info["cgroup"].strip().partition("::")[2]
        self.jobmon_cgroup = info["jobmon_cgroup"].strip().partition("::")[2]


def run_tree(args, spike=96 * MiB, spike_after_first_sample=False, **kw):
    """`jobmon run ARGS -- cpu_tree`; returns (Run, TreeTruth). spike_after_first_sample:
    the spike waits until the first sample is written, so that a run whose next sample is
    the final one has no sample that sees it (however late the first one comes)."""
    d = shared_tmpdir("jobmon-truth-")
    out = os.path.join(d, "samples.jsonl") if spike_after_first_sample else None
    r = Run(args, cpu_tree(d, spike, wait_for=out), out_path=out, **kw)
    return r, TreeTruth(d, r.stdout)


def check_tree(r, t, method="cgroup-v2"):
    """jobmon's numbers against the job's own, as tight as the project's goal."""
    s = r.summary
    assert s["method"] == method, (s["method"], r.stderr)
    assert s["exit_code"] == 0 and s["signal"] is None
    assert s["rss_peak_bytes"] >= 0.9 * t.spike_hwm, (s["rss_peak_bytes"], t.spike_hwm)
    if method == "cgroup-v2":
        # the kernel's high-water mark of the cgroup saw the spike (whatever was sampled);
        # above it only the rest of the job (two Pythons, page tables, cache)
        assert s["mem_peak_bytes"] is not None, s
        assert t.spike <= s["mem_peak_bytes"] <= t.spike_hwm + 64 * MiB, \
            (s["mem_peak_bytes"], t.spike, t.spike_hwm)
    check_cpu(r.cpu, t.cpu)


def check_cpu(got, truth):
    """Within max(1 %, 0.05 s). jobmon's exec trampoline (a fork of jobmon, 30-70 ms of CPU
    under emulation as it execs) runs in the job's cgroup and is reaped into jobmon's
    RUSAGE_CHILDREN; jobmon takes it off again (launcher.spawn's overhead)."""
    print(f"CPU: jobmon {got:.4f} s, the job's own {truth:.4f} s, {got - truth:+.4f} s "
          f"(tolerance {cpu_tolerance(truth):.4f} s)")
    assert abs(got - truth) <= cpu_tolerance(truth), \
        f"CPU {got:.4f} s against the job's own {truth:.4f} s"


def cgroup_of(pid):
    with open(f"/proc/{pid}/cgroup") as f:
        return f.read().strip().partition("::")[2]
