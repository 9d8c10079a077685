"""Stores hold jobs and their samples for `jobmon query` and `jobmon list`.

Read interface (every store): jobs(limit) -> [job dict with summary], job(job_id, user=None)
-> JobRecord of the latest run (by that user) or None; its info["users"] lists every user
with a run of that job id. The embedded store is also a sink for the per-job sampler.
"""


class JobRecord:
    """One run of a job: its description + summary, and its samples in time order."""

    def __init__(self, info, samples):
        self.info = info          # job fields and "summary" (dict or None while running)
        self.samples = samples    # [sample dict]

    @property
    def summary(self):
        return self.info.get("summary") or {}
