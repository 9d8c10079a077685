"""Scheduler job cgroups on cgroup v2, made for real with mkdir and the processes placed in
their leaves as the schedulers place them; read through jobmon.cgroups.existing() and
jobmon.probes.select(). The names are illustrative: jobmon finds cgroups from
/proc/<pid>/cgroup and never parses their names."""
import os
import subprocess

import tree
from helpers import TEST_USER, cpu_tolerance, shared_tmpdir
from jobrun import MiB, Run, cpu_tree, job

from jobmon import cgroups
from jobmon.probes import select

SLURM = ("cpuset", "cpu", "io", "memory", "pids")
SLURM_BELOW_SCOPE = ("cpuset", "cpu", "memory")   # what Slurm's cgroup/v2 enables there
TASK_MEM = 24 * MiB


class Placed:
    """Tasks the test starts in given cgroups and reaps, and so knows the CPU of (from
    wait4, less what each used before it moved itself in)."""

    def __init__(self):
        self.procs = []
        self.cpu = 0.0

    def task(self, cgroup, burn=0.0, mem=0):
        p = subprocess.Popen(job("task", cgroup, burn, mem), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
        word, premove = p.stdout.readline().split()
        assert word == b"ready"
        self.cpu -= float(premove)
        self.procs.append(p)
        return p

    def end(self):
        for p in self.procs:
            p.stdin.close()
            _, _, ru = os.wait4(p.pid, 0)
            p.returncode = 0
            self.cpu += ru.ru_utime + ru.ru_stime


def _slurm_job(jobid):
    scope = tree.make("system.slice/guest_slurmstepd.scope", SLURM)
    tree.enable(scope, SLURM)
    job_dir = os.path.join(scope, f"job_{jobid}")
    leaves = {}
    os.mkdir(job_dir)
    tree.enable(job_dir, SLURM_BELOW_SCOPE)
    for step, tasks in (("step_extern", 1), ("step_0", 2)):
        s = os.path.join(job_dir, step)
        os.mkdir(s)
        tree.enable(s, SLURM_BELOW_SCOPE)
        os.mkdir(os.path.join(s, "slurm"))
        os.mkdir(os.path.join(s, "user"))
        tree.enable(os.path.join(s, "user"), SLURM_BELOW_SCOPE)
        leaves[step] = os.path.join(s, "slurm")
        for n in range(tasks):
            leaves[f"{step}/task_{n}"] = os.path.join(s, "user", f"task_{n}")
            os.mkdir(leaves[f"{step}/task_{n}"])
    os.mkdir(os.path.join(scope, "slurmd"))
    return scope, job_dir, leaves


def test_slurm_job_tree(raw_guest):
    """system.slice/<node>_slurmstepd.scope/job_N/step_X/{slurm,user/task_N}: the job's
    cgroup counts every step's processes in the leaves below it."""
    scope, job_dir, leaves = _slurm_job(42)
    outside = tree.sleeper(os.path.join(scope, "slurmd"))
    placed = Placed()
    try:
        for leaf in ("step_extern", "step_0", "step_extern/task_0"):   # stepds, extern sleep
            placed.task(leaves[leaf])
        t0 = placed.task(leaves["step_0/task_0"], 0.3, TASK_MEM)
        placed.task(leaves["step_0/task_1"], 0.2, TASK_MEM)
        mine = cgroups.existing(t0.pid)
        assert mine.version == 2 and mine.dirs["v2"] == leaves["step_0/task_0"]
        probe = select(cgroups=cgroups.JobCgroups(2, {"v2": job_dir}))
        v = probe.read()
        assert v["procs"] == 5 and sorted(probe.pids()) == sorted(p.pid for p in placed.procs)
        assert v["mem_resident_bytes"] >= 2 * TASK_MEM
        assert "read_bytes" in v   # io.stat at job_N: io is on at the scope
        assert probe.alive()
        task_probe = select(cgroups=mine)
        assert task_probe.read()["procs"] == 1
        assert "read_bytes" not in task_probe.read()   # Slurm gives no io below job_N
    finally:
        placed.end()
        tree.stop(outside)
    v = probe.read()
    assert abs(v["cpu_user_seconds"] + v["cpu_system_seconds"] - placed.cpu) \
        <= cpu_tolerance(placed.cpu), (v, placed.cpu)
    assert int(tree.words(job_dir, "memory.peak")[0]) >= 2 * TASK_MEM
    assert probe.tasks_peak() == 5
    assert not probe.alive()
    probe.close()
    task_probe.close()


def test_jobmon_in_a_slurm_task_cgroup(raw_guest, test_user):
    """`srun jobmon run --cgroup=existing`: the task's cgroup holds jobmon and the job."""
    scope, job_dir, leaves = _slurm_job(43)
    task = leaves["step_0/task_0"]
    r = Run(["--cgroup=existing"], cpu_tree(_shared(), 32 * MiB), user=TEST_USER, cgroup=task)
    assert r.summary["method"] == "cgroup-v2", r.stderr
    usage = _usage(task)
    assert abs(usage - r.total_cpu) <= cpu_tolerance(r.total_cpu), (usage, r.total_cpu)
    assert r.cpu <= r.total_cpu + cpu_tolerance(r.total_cpu)
    assert abs(_usage(job_dir) - usage) < 0.001


def test_condor_job_tree(raw_guest, test_user):
    """HTCondor >= 24.8: each job in a .scope below a per-job .slice. The wrapper (jobmon as
    the job's user) runs in the .scope and measures it; the .slice holds all the scope
    used."""
    slice_dir = tree.make("system.slice/htcondor/condor_var_lib_condor_execute_slot1_1@host.slice")
    tree.enable(slice_dir)
    scope = os.path.join(slice_dir, "condor_var_lib_condor_execute_slot1_1@host.scope")
    os.mkdir(scope)
    r = Run(["--cgroup=existing"], cpu_tree(_shared(), 32 * MiB), user=TEST_USER, cgroup=scope)
    assert r.summary["method"] == "cgroup-v2", r.stderr
    assert abs(_usage(scope) - r.total_cpu) <= cpu_tolerance(r.total_cpu)
    probe = select(cgroups=cgroups.JobCgroups(2, {"v2": slice_dir}))
    v = probe.read()
    assert abs(v["cpu_user_seconds"] + v["cpu_system_seconds"] - r.total_cpu) \
        <= cpu_tolerance(r.total_cpu)
    assert v["procs"] == 0 and not probe.alive()
    probe.close()


def _usage(d):
    with open(os.path.join(d, "cpu.stat")) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("usage_usec")) / 1e6


def _shared():
    return shared_tmpdir("jobmon-truth-")
