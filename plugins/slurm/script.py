"""What a Slurm job ran, as a hash (jobmon.stores.fingerprint), never as text: a batch job's
script, read from slurmd's copy while the job runs; a job without one (`srun`, `salloc`)
its first task's command line. Standard library only.

slurmd keeps the batch script as `<SlurmdSpoolDir>/job<id, zero-padded to 5>/slurm_script`,
owned by the job's user, for as long as the batch step runs, and the batch step's shell
runs it by that path: its command line names the file, so the sampler needs no setting
for where SlurmdSpoolDir is (one per slurmd where a host runs several).
"""
from ...stores.fingerprint import digest, file_digest


def script_tags(identity, pids):
    """{"script_hash": ...} of the job's batch script, found in the command line of one
    of its processes (`pids`); for a job none of whose processes runs a batch script,
    {"command_hash": ...} of its oldest process that belongs to the job (its first
    task: Slurm's own, the extern step's sleeper, have no SLURM_JOB_ID); {} while no
    process tells (or: a batch script this user cannot read)."""
    job = identity.tags.get("job_id") or ""
    if not job.isdigit():
        return {}
    tail = f"/job{int(job):05d}/slurm_script".encode()
    argvs, batch = {}, False
    for pid in sorted(pids):
        argv = _argv(pid)
        if argv is None:
            continue
        argvs[pid] = argv
        for arg in argv[:4]:     # the script, or its interpreter then the script
            if arg.endswith(tail) and arg.startswith(b"/"):
                batch = True
                h = file_digest(arg)
                if h:
                    return {"script_hash": h}
    if batch:
        return {}    # a batch job whose script is out of reach: no other hash stands for it
    tasks = [(_started(pid), pid) for pid in argvs if _of_job(pid, job)]
    tasks = [t for t in tasks if t[0] is not None]
    if not tasks:
        return {}
    first = argvs[min(tasks)[1]]
    return {"command_hash": digest(a.decode("utf-8", "surrogateescape") for a in first)}


def _argv(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            data = f.read(1 << 16)
    except OSError:
        return None
    return data.rstrip(b"\0").split(b"\0") if data else None


def _of_job(pid, job):
    """Whether the process's environment names the job (SLURM_JOB_ID)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        return False
    return f"SLURM_JOB_ID={job}".encode() in data.split(b"\0")


def _started(pid):
    """The process's start time (clock ticks since boot), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        return int(data[data.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None
