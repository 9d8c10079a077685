"""Slurm's end of `jobmon act`: the controller's word on the jobs (`squeue --json`, one
call for all of a pass's jobs) and the action on one job: `scontrol requeuehold` (the job
goes back to pending, held: `scontrol release` lets it run again) or `scancel`. Both act
on the raw job id the controller gave, never on an id from a job's record; scancel only
where the job still runs as the same user (--state, --user).

The job opts out with the word `jobmon-actions=no` in its comment (sbatch
--comment=jobmon-actions=no, or `scontrol update JobId=N Comment=...` while it runs).
Slurm 22.05 writes numbers plain and states as words; later releases wrap them
({"set", "number"}, lists): both are read."""
import json
import os
import re
import shutil
import subprocess

from .accounting.sacct_json import _n, _state
from .accounting.sacct_parse import job_value
from .card import comment_asks
from jobmon.actions import ActionError, LiveJob, Scheduler

OPT_OUT_WORD = "jobmon-actions"
TIMEOUT = 60                     # seconds a Slurm command may take
JOB_ID = re.compile(r"\d+(?:[_+]\d+)?")
MANY = 400                       # job ids per squeue call (its command line stays small)


class Slurm(Scheduler):
    name = "slurm"

    def __init__(self, action="requeuehold", bindir=None, env=None):
        self.action = action
        self.env = env
        path = bindir or (env or os.environ).get("PATH")
        self.programs = {p: shutil.which(p, path=path) or p
                         for p in ("squeue", "scontrol", "scancel")}

    def _run(self, program, *args):
        argv = [self.programs[program], *args]
        try:
            return subprocess.run(argv, capture_output=True, text=True, env=self.env,
                                  timeout=TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ActionError(f"{program}: {e}")

    def jobs(self, records):
        ids = sorted({str(r.get("job")) for r in records if JOB_ID.fullmatch(str(r.get("job")))})
        out = {}
        for i in range(0, len(ids), MANY):
            wanted = ids[i:i + MANY]
            r = self._run("squeue", "--json", f"--jobs={','.join(wanted)}")
            if r.returncode and "Invalid job id" in r.stderr:
                continue          # none of them is known any more (over, or never Slurm's)
            if r.returncode:
                raise ActionError(f"squeue: {' '.join(r.stderr.split())[:300]}")
            try:
                doc = json.loads(r.stdout)
            except ValueError as e:
                raise ActionError(f"squeue --json: not JSON ({e})")
            for j in doc.get("jobs") or []:
                live = live_job(j)
                if live.job in wanted:
                    out[live.job] = live
        return out

    def act(self, live, reason):
        if self.action == "requeuehold":
            r = self._run("scontrol", "requeuehold", live.act_id)
        else:
            r = self._run("scancel", "--state=RUNNING", f"--user={live.user}", live.act_id)
        said = " ".join((r.stdout + r.stderr).split())[:300]
        if r.returncode:
            raise ActionError(f"{self.action} of job {live.act_id}: exit {r.returncode}: "
                              f"{said}")
        return f"{self.action} {live.act_id}" + (f": {said}" if said else "")


def live_job(j):
    """A LiveJob from one job of `squeue --json`."""
    raw = _n(j.get("job_id"))
    jid = job_value(raw, _n(j.get("array_job_id")) or None, _n(j.get("array_task_id")),
                    _n(j.get("het_job_id")) or None, _n(j.get("het_job_offset")))
    return LiveJob(jid, str(raw), j.get("user_name"), _state(j.get("job_state")) == "RUNNING",
                   opted_out=comment_asks(j.get("comment"), OPT_OUT_WORD) is False,
                   mail=j.get("mail_user") or None, nodes=j.get("nodes"))
