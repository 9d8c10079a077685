"""Records -> jobs -> runs -> hosts.

A store gives one record per job run per host. A job the scheduler ran more than once
(evicted, held and released, requeued) has several runs, told apart by the run the plugin
recorded (the scheduler's start or restart count); a job with no run recorded
(`jobmon run`) has one run per record. A multi-node job has one record per node in the
same run. A job's steps (12345.batch, 12345.0, ...: tag parent_job) have records of
their own, beside the job's: their figures are inside the job's (its cgroup holds every
step), so they are no runs -- counts, shares and distributions leave them out.
"""
from ..stores.ids import instance_of


class Run:
    def __init__(self, job, key, records):
        self.job, self.key, self.records = job, key, records   # records: one per host

    @property
    def start_time(self):
        return min(r.get("start_time") or 0 for r in self.records)

    @property
    def hosts(self):
        return sorted({r.get("host") or "" for r in self.records})

    @property
    def users(self):
        return sorted({r.get("user") or "" for r in self.records})

    @property
    def label(self):
        """How the run is named to users (and chosen with --run)."""
        return str(self.key) if not isinstance(self.key, tuple) else None


def is_step(record):
    """True for a step's record (a job's 12345.batch, 12345_7.0: tag parent_job)."""
    return bool((record.get("tags") or {}).get("parent_job"))


def run_key(record):
    """What tells a record's run apart: the run the plugin named, by its user (and its pool,
    where a store holds several; the instance its id is of, where its scheduler's ids are
    an instance's: two instances' 4711.0 are two jobs); else the record itself (one run
    per record)."""
    if record.get("run") is not None:
        return (str(record["run"]), record.get("user"), record.get("cluster"),
                instance_of(record))
    return ("record", record.get("host"), record.get("start_time"), record.get("user"))


def job_runs(records):
    """[[record of each node]] of every job run among `records`, steps left out, in the
    order each run first appears."""
    runs = {}
    for r in records:
        if not is_step(r):
            runs.setdefault((r.get("job"),) + run_key(r), []).append(r)
    return list(runs.values())


def by_job(records):
    """{job id: [Run, oldest first]}, jobs in the order of their newest record."""
    jobs = {}
    for r in records:
        jobs.setdefault(r.get("job"), []).append(r)
    out = {}
    for job, recs in jobs.items():
        runs = {}
        for r in recs:
            runs.setdefault(run_key(r), []).append(r)
        ordered = sorted(runs.items(), key=lambda kv: min(x.get("start_time") or 0 for x in kv[1]))
        out[job] = [Run(job, k[0] if k[0] != "record" else k, v) for k, v in ordered]
    return out


def choose(runs, wanted=None):
    """The run asked for with --run (its label, or its position from 1), else the latest."""
    if wanted is None:
        return runs[-1]
    for run in runs:
        if run.label == wanted:
            return run
    if wanted.isdigit() and all(r.label is None for r in runs) and 1 <= int(wanted) <= len(runs):
        return runs[int(wanted) - 1]
    return None
