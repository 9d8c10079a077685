"""The read interface every store has (Store), and one run of a job read back (JobRecord).

A store holds *records*: one per job run per host (a job the scheduler ran twice has two
runs; a multi-node job one record per node). Standard library only: the embedded store is
also a sink for the per-job sampler.
"""
HOUR = 3600


class Store:
    def jobs(self, limit=20, user=None):
        """The most recent records (of `user`, when given), newest first: job dicts with
        "summary" (or None)."""
        raise NotImplementedError

    def records(self, ref, user=None):
        """Every record of the jobs `ref` (a jobmon.stores.ids.JobRef) stands for, by
        `user` when given, newest first. Each is a job dict (job, run, host, user,
        scheduler, start_time, tags, command, interval, method, summary) that samples()
        takes back."""
        raise NotImplementedError

    def summaries(self, since=None, until=None, user=None, fields=None):
        """Every record of a job run that started in [since, until) (seconds since the
        epoch; None: open), by `user` when given, oldest first: job dicts as records()
        gives them, "summary" None while the job runs. Reads no samples. fields: the
        summary fields the caller needs (a store may leave others out); None: all."""
        raise NotImplementedError

    def summaries_by_hour(self, since, until, user=None, fields=None):
        """(hour, summaries() of the runs that started in it) of every hour touching
        [since, until) (the first and last may be partial), oldest first, holding no more
        than a read's worth: an hour, here."""
        t = since
        while t < until:
            end = min((t // HOUR + 1) * HOUR, until)
            yield int(t // HOUR) * HOUR, self.summaries(t, end, user, fields=fields)
            t = end

    def samples(self, record):
        """One record's samples, in time order."""
        raise NotImplementedError

    def alike(self, user, key, value, until):
        """The records of `user`'s runs that started before `until` (seconds since the
        epoch) and ran the same thing: their `key` (jobmon.stores.fingerprint.KEYS) is
        `value`; newest first, as summaries() gives them (steps included). Here: every
        run of the user's before `until`, looked through (a store that can select by the
        hash itself does so)."""
        from .fingerprint import of
        return [r for r in reversed(self.summaries(None, until, user))
                if of(r)[key] == value]

    def unreconciled(self, since=None, host=None):
        """The records `jobmon reconcile` has yet to settle, started at or after `since`,
        of `host` where the store holds several nodes' (None: all), oldest first: job
        dicts as records() gives them, summary None where there is no end-of-job record."""
        raise NotImplementedError

    def latest(self, since):
        """The latest sample of every record that sent one at or after `since` (seconds
        since the epoch): [{"job", "run", "host", "user", "scheduler", "cluster", the
        promoted tags, "sample": the sample}] -- the jobs running now, for `jobmon act`."""
        raise NotImplementedError

    def actions(self, since=None, jobs=None):
        """`jobmon act`'s warnings and actions (jobmon.influx.schema.action_from_row) at
        or after `since`, of the job ids `jobs` where given, oldest first; [] where the
        store has none."""
        return []

    def rollups(self, parts, since, until, keys=None):
        """(hour, part, key, text) of the stored hourly rollups of the hours in [since,
        until), of those parts (and keys, when given): jobmon.report.rollup. [] where the
        store keeps none."""
        return []

    def breakdowns(self, record, last=None):
        """One record's per-process breakdowns, in time order (the `last` ones only, when
        given); [] where the store has none."""
        return []

    def job(self, job_id, user=None):
        """The latest record of exactly job_id (by `user`, when given) with its samples,
        or None; its info["users"] lists every user with a record of that id."""
        from .ids import JobRef
        records = self.records(JobRef(job_id, [job_id]))
        users = sorted({r.get("user") or "" for r in records})
        records = [r for r in records if not user or r.get("user") == user]
        if not records:
            return None
        info = dict(records[0], users=users)
        return JobRecord(info, self.samples(records[0]))


class JobRecord:
    """One run of a job: its description + summary, and its samples in time order."""

    def __init__(self, info, samples):
        self.info = info          # job fields and "summary" (dict or None while running)
        self.samples = samples    # [sample dict]

    @property
    def summary(self):
        return self.info.get("summary") or {}
