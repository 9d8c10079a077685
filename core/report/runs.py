"""Records -> jobs -> runs -> hosts.

A store gives one record per job run per host. A job the scheduler ran more than once
(evicted, held and released, requeued) has several runs, told apart by the run the plugin
recorded (HTCondor's start count, Slurm's restart count); a job with no run recorded
(`jobmon run`) has one run per record. A multi-node job has one record per node in the
same run.
"""


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


def by_job(records):
    """{job id: [Run, oldest first]}, jobs in the order of their newest record."""
    jobs = {}
    for r in records:
        jobs.setdefault(r.get("job"), []).append(r)
    out = {}
    for job, recs in jobs.items():
        runs = {}
        for r in recs:
            # a run the plugin named; else each record is a run of its own
            key = (str(r["run"]), r.get("user")) if r.get("run") is not None \
                else ("record", r.get("host"), r.get("start_time"), r.get("user"))
            runs.setdefault(key, []).append(r)
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
