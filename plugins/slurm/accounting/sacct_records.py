"""Slurm's accounting records in jobmon's units: a Record per allocation (a job, an array
task, a het job component, one run of a requeued job) with its Steps, whichever backend
read them (sacct.py, sacct_json.py, sacct_pyslurm.py). Read side only."""

# Record field -> (unit, meaning); None where Slurm did not record it
FIELDS = {
    "job": ("", "the id users type: 12345, 12345_7 (array task), 12345+1 (het component)"),
    "job_id_raw": ("", "JobIDRaw: this allocation's own numeric id"),
    "array_job_id": ("", "ArrayJobID"), "array_task_id": ("", "ArrayTaskID"),
    "het_job_id": ("", "HetJobID"), "het_job_offset": ("", "HetJobOffset"),
    "run": ("", "which run of a requeued job, 1 = the first (sacct -D, by start; a "
                "record that never started last)"),
    "name": ("", "JobName"), "user": ("", "User"), "account": ("", "Account"),
    "partition": ("", "Partition"), "qos": ("", "QOS"), "cluster": ("", "Cluster"),
    "nodes": ("", "NodeList"), "num_nodes": ("count", "NNodes"),
    "state": ("", "State, first word (COMPLETED, FAILED, CANCELLED, TIMEOUT, ...)"),
    "cancelled_by": ("", "the uid in `CANCELLED by UID`"),
    "exit_code": ("", "ExitCode's code (None when the job died by a signal)"),
    "signal": ("", "ExitCode's signal, when it died by one"),
    "submit_time": ("s", "Submit, s since the epoch"), "start_time": ("s", "Start"),
    "end_time": ("s", "End"), "elapsed_seconds": ("s", "Elapsed"),
    "timelimit_seconds": ("s", "Timelimit (None: unlimited)"),
    "req_cpus": ("count", "ReqCPUS"), "alloc_cpus": ("count", "AllocCPUS"),
    "req_mem_bytes": ("bytes", "ReqMem"), "alloc_mem_bytes": ("bytes", "AllocTRES mem"),
    "alloc_gpus": ("count", "AllocTRES gres/gpu"),
    "alloc_tres": ("", "AllocTRES as {name: count}, mem in bytes"),
    "cpu_user_seconds": ("s", "UserCPU summed over the steps"),
    "cpu_system_seconds": ("s", "SystemCPU summed over the steps"),
    "cpu_seconds": ("s", "TotalCPU: summed over the steps"),
    "max_rss_bytes": ("bytes", "MaxRSS: the largest of any step's (sampled every "
                               "JobAcctGatherFrequency; v1 anonymous memory only)"),
    "max_rss_step": ("", "the step that had it"),
    "max_vmsize_bytes": ("bytes", "MaxVMSize, largest of any step's"),
    "read_bytes": ("bytes", "TRESUsageInTot fs/disk summed over steps (each step's "
                            "leader process only)"),
    "write_bytes": ("bytes", "TRESUsageOutTot fs/disk summed over steps"),
    "partial": ("", "True for a record sacct made from the job's end message alone "
                    "(slurmdbd has not its start yet): figures may be missing"),
    "source": ("", "sacct-json, sacct-text or pyslurm"),
    "steps": ("", "[Step]: batch, extern, 0, 1 ..."),
}
STEP_FIELDS = ("step", "name", "state", "exit_code", "signal", "start_time", "end_time",
               "elapsed_seconds", "cpu_user_seconds", "cpu_system_seconds", "cpu_seconds",
               "max_rss_bytes", "max_rss_task", "max_rss_node", "max_vmsize_bytes",
               "read_bytes", "write_bytes", "ntasks", "nodes")
class Record:
    __slots__ = tuple(FIELDS)

    def __init__(self, **values):
        for name in FIELDS:
            setattr(self, name, values.get(name))
        if self.steps is None:
            self.steps = []

    def as_dict(self):
        d = {name: getattr(self, name) for name in FIELDS}
        d["steps"] = [s.as_dict() for s in self.steps]
        return d

    def step(self, step_id):
        return next((s for s in self.steps if s.step == step_id), None)

    def __repr__(self):
        return f"Record({self.job!r}, run={self.run!r}, state={self.state!r})"


class Step:
    __slots__ = STEP_FIELDS

    def __init__(self, **values):
        for name in STEP_FIELDS:
            setattr(self, name, values.get(name))

    def as_dict(self):
        return {name: getattr(self, name) for name in STEP_FIELDS}

    def __repr__(self):
        return f"Step({self.step!r})"


def aggregate(rec):
    """Job figures from its steps: CPU and disk bytes summed, MaxRSS the largest."""
    steps = rec.steps
    if not steps:
        return rec
    for field in ("cpu_user_seconds", "cpu_system_seconds", "cpu_seconds", "read_bytes",
                  "write_bytes"):
        vals = [getattr(s, field) for s in steps if getattr(s, field) is not None]
        if vals:
            setattr(rec, field, round(sum(vals), 6))
    top = max((s for s in steps if s.max_rss_bytes is not None),
              key=lambda s: s.max_rss_bytes, default=None)
    if top is not None:
        rec.max_rss_bytes, rec.max_rss_step = top.max_rss_bytes, top.step
    vm = [s.max_vmsize_bytes for s in steps if s.max_vmsize_bytes is not None]
    rec.max_vmsize_bytes = max(vm) if vm else None
    return rec


def number_runs(records):
    """run = 1, 2 ... for the runs of a requeued job (sacct -D lists each), in the order
    they really started. A record that never started (no Start: the job pending again
    after a requeue, held or not, or cancelled before it ran again) comes after them all:
    sacct lists it beside the real runs, and the sampler's runs are the ones that ran."""
    by_id = {}
    for r in records:
        by_id.setdefault(r.job_id_raw, []).append(r)
    for runs in by_id.values():
        runs.sort(key=lambda r: (not r.start_time, r.start_time or 0, r.submit_time or 0))
        for i, r in enumerate(runs, 1):
            r.run = i
    return records
