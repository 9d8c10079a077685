"""Which cgroup directories are a Slurm job's: names for the core's search
(jobmon.cgroups.search), which never assumes where they are.

Shapes Slurm makes (the search finds each without knowing it):
  v1:  <hierarchy>/slurm[_<node>]/uid_<uid>/job_<id>/step_<s>/task_<t>
  v2:  <root>/system.slice/slurmstepd.scope/job_<id>/step_<s>/{slurm,user/task_<t>}
       <root>/system.slice/<node>_slurmstepd.scope/...   (several slurmd on one host)
       .../slurmstepd.scope/<SLUID>/...                  (26.05 and later, unless
                                                          CgroupJobIdPaths=yes)
Standard library only.
"""
import os
import re

from .job import SLUID

_OTHER = re.compile(r"(job_[0-9]+|step_.*|task_[0-9]+)\Z")


def wanted(environ):
    """Directory names that are this job's: job_<id>, and its SLUID where it has one."""
    names = set()
    jid = environ.get("SLURM_JOB_ID")
    if jid:
        names.add(f"job_{jid}")
    sluid = environ.get("SLURM_JOB_SLUID")
    if sluid and SLUID.match(sluid):
        names.update({sluid, sluid.lower(), sluid.upper()[0].lower() + sluid.upper()[1:]})
    return names


def skipper(environ):
    """skip(name): True for directories not to look inside: other jobs' (job_N, a
    SLUID), steps and tasks, and other users' (uid_N on v1)."""
    uid = environ.get("SLURM_JOB_UID")
    mine = f"uid_{uid}" if uid else None

    def skip(name):
        if _OTHER.match(name) or SLUID.match(name):
            return True
        return name.startswith("uid_") and mine is not None and name != mine
    return skip


def chooser(environ):
    """choose(paths) -> path or None: where several slurmd run on one host each has a
    tree of its own (slurm_<node> on v1, <node>_slurmstepd.scope on v2): this node's,
    never another node's (the same job has a directory there too)."""
    node = environ.get("SLURMD_NODENAME", "")

    def owner(path):
        for part in path.split(os.sep):
            if part.startswith("slurm_"):
                return part[len("slurm_"):]
            if part.endswith("_slurmstepd.scope"):
                return part[:-len("_slurmstepd.scope")]
        return None

    def choose(paths):
        ours = [p for p in paths if owner(p) == node]
        shared = [p for p in paths if owner(p) is None]
        return (ours or shared or [None])[0]
    return choose


# below each step on v2: the leaf of the step's slurmstepd (the tasks are below "user"):
# Slurm's cgroup/v2 plugin puts it in job_N/step_X/slurm, so the job's cgroup counts its
# CPU and processes with the job's (on v1 slurmstepd stays out of cpuacct's job tree);
# sacct leaves them out, and the attach mode takes them out (jobmon.attach.probe)
OWN_LEAVES = ("slurm",)
# the parent of a step's tasks (comm): when they have all exited, slurmstepd kills what
# is left in the step (proctrack)
TASK_PARENT = "slurmstepd"


def step_name(dirname):
    """The step id of a step's cgroup directory (step_batch -> batch, step_0 -> 0), or
    None for anything else."""
    if dirname.startswith("step_") and len(dirname) > 5:
        return dirname[5:]
    return None
