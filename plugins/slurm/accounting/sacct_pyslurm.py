"""The optional pyslurm backend of the Slurm accounting source: slurmdbd through the
Slurm library itself, no sacct process per lookup. Used only where the site asks for it
(slurm.accounting = "pyslurm"): sacct --json reads more of a job.

pyslurm is built against one Slurm release's headers (pyslurm 22.5.x for Slurm 22.05,
24.11.x for 24.11 ...) and its ABI does not carry over: a pyslurm of another release
either fails to import or misreads the library. So it is used only when it imports and
its release (major.minor of pyslurm.__version__) is the running Slurm's (`sacct
--version`). What pyslurm gives, checked with pyslurm 22.5.3 built for Slurm 22.05.8 against
sacct on the same jobs (tests/fixtures/pyslurm-22.5):
- a job's last run only: its jobs are kept by id, and no filter asks slurmdbd for a
  requeued job's earlier runs (sacct -D does);
- a step's total CPU from its TRES usage, in milliseconds before pyslurm 24.11 and seconds
  since, 10 ms steps; user and system CPU in whole seconds;
- array task 0 as no task id (pyslurm reads a zero as "not set").
Read side only; pyslurm is imported here, never on a job's path.
"""
import re
import subprocess

from jobmon.accounting import AccountingError, Source
from .sacct_parse import job_value
from .sacct_records import Record, Step, aggregate, number_runs


def slurm_release(sacct="sacct", env=None):
    """(major, minor) of the running Slurm, from `sacct --version` ("slurm 22.05.8",
    "slurm-wlm 22.05.8"), or None."""
    try:
        out = subprocess.run([sacct, "--version"], capture_output=True, text=True, env=env,
                             timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"(\d+)\.(\d+)\.\d+", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def pyslurm_release(version):
    """(major, minor) of a pyslurm version: "23.2.2" -> (23, 2), "24.11.0" -> (24, 11)."""
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def matches(pyslurm_version, slurm):
    return slurm is not None and pyslurm_release(pyslurm_version) == slurm


def source(sacct="sacct", env=None):
    """A PyslurmSource where an importable pyslurm matches the running Slurm, else None."""
    try:
        import pyslurm
    except Exception:      # absent, or built for another Slurm (ImportError, OSError)
        return None
    if not matches(getattr(pyslurm, "__version__", ""), slurm_release(sacct, env)):
        return None
    return PyslurmSource(pyslurm)


class PyslurmSource(Source):
    name = "pyslurm"

    def __init__(self, pyslurm):
        self.pyslurm = pyslurm
        # a step's TRES CPU: milliseconds before pyslurm 24.11
        self.cpu_unit = 1e-3 if pyslurm_release(pyslurm.__version__) < (24, 11) else 1.0

    def lookup(self, job_id):
        job_id = str(job_id).strip()
        m = re.fullmatch(r"(\d+)(?:([_+])(\d+))?", job_id)
        if not m:
            raise AccountingError(f"not a Slurm job id: {job_id!r}")
        db = self.pyslurm.db
        try:
            jobs = db.Jobs.load(db.JobFilter(ids=[int(m.group(1))]))
        except Exception as e:   # pyslurm.RPCError and friends
            raise AccountingError(f"pyslurm: {e}")
        out = [record_from_job(j, self.cpu_unit) for j in jobs.values()]
        if m.group(2):
            out = [r for r in out if r.job == job_id]
        return number_runs(out)


def _stat(stats, name):
    return getattr(stats, name, None) if stats is not None else None


def step_from_pyslurm(s, cpu_unit=1.0):
    st = s.stats
    code, sig = _exit(s)
    cpu = _stat(st, "total_cpu_time")
    return Step(step=str(s.id).split(".")[-1], name=s.name, state=s.state,
                exit_code=code, signal=sig, start_time=s.start_time, end_time=s.end_time,
                elapsed_seconds=s.elapsed_time,
                cpu_user_seconds=_stat(st, "user_cpu_time"),
                cpu_system_seconds=_stat(st, "system_cpu_time"),
                cpu_seconds=None if cpu is None else round(cpu * cpu_unit, 3),
                max_rss_bytes=_stat(st, "max_resident_memory"),
                max_rss_task=_stat(st, "max_resident_memory_task"),
                max_rss_node=_stat(st, "max_resident_memory_node"),
                max_vmsize_bytes=_stat(st, "max_virtual_memory"),
                read_bytes=_stat(st, "max_disk_read"), write_bytes=_stat(st, "max_disk_write"),
                ntasks=getattr(s, "ntasks", None), nodes=getattr(s, "nodelist", None))


def _exit(obj):
    code, sig = getattr(obj, "exit_code", None), getattr(obj, "exit_code_signal", None)
    if sig:
        return None, sig
    return code, None


def record_from_job(j, cpu_unit=1.0):
    code, sig = _exit(j)
    mem = getattr(j, "memory", None)           # MiB
    r = Record(job_id_raw=str(j.id), name=j.name, user=j.user_name, account=j.account,
               partition=j.partition, qos=j.qos, cluster=j.cluster, nodes=j.nodelist,
               num_nodes=j.num_nodes, state=j.state, exit_code=code, signal=sig,
               cancelled_by=getattr(j, "cancelled_by", None),
               submit_time=j.submit_time, start_time=j.start_time, end_time=j.end_time,
               elapsed_seconds=j.elapsed_time,
               timelimit_seconds=None if not j.time_limit else j.time_limit * 60,
               req_cpus=j.cpus, alloc_cpus=j.cpus,
               req_mem_bytes=None if mem is None else mem << 20, source="pyslurm",
               steps=[step_from_pyslurm(s, cpu_unit) for s in (j.steps or {}).values()])
    task = getattr(j, "array_task_id", None)
    if getattr(j, "array_id", None) and task is None and j.id != j.array_id:
        task = 0                 # a task of its own id reads task 0 as not set
    if getattr(j, "array_id", None) and task is not None:
        r.array_job_id, r.array_task_id = str(j.array_id), str(task)
    if getattr(j, "het_job_id", None) and j.het_job_offset is not None:
        r.het_job_id, r.het_job_offset = str(j.het_job_id), str(j.het_job_offset)
    r.job = job_value(r.job_id_raw, r.array_job_id, r.array_task_id, r.het_job_id,
                      r.het_job_offset)
    return aggregate(r)
