"""The batch script's hash (jobmon.stores.fingerprint): what a Slurm batch job ran, read from
slurmd's own copy while the job runs, never stored as text. Standard library only.

slurmd keeps the script as `<SlurmdSpoolDir>/job<id, zero-padded to 5>/slurm_script`,
owned by the job's user, for as long as the batch step runs, and the batch step's shell
runs it by that path: its command line names the file, so the sampler needs no setting
for where SlurmdSpoolDir is (one per slurmd where a host runs several).
"""
from ...stores.fingerprint import file_digest


def script_tags(identity, pids):
    """{"script_hash": ...} of the job's batch script, found in the command line of one
    of its processes (`pids`); {} where none runs it (yet, or: not a batch job)."""
    job = identity.tags.get("job_id") or ""
    if not job.isdigit():
        return {}
    tail = f"/job{int(job):05d}/slurm_script".encode()
    for pid in sorted(pids):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read(4096).split(b"\0")
        except OSError:
            continue
        for arg in argv[:4]:     # the script, or its interpreter then the script
            if arg.endswith(tail) and arg.startswith(b"/"):
                h = file_digest(arg)
                if h:
                    return {"script_hash": h}
    return {}
