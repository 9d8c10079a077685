"""jobmon's InfluxDB schema (docs/schema.md): what a job, a sample and the shipper become
as points, and back. Standard library only: the spool writer uses it inside the job.

Measurements:
  jobmon_sample   one point per job per host per interval
  jobmon_job      one point per job run, timestamped at its start: written when the job
                  starts (description) and again at its end (summary fields added to the
                  same point -- same series and time, so InfluxDB merges them)
  jobmon_shipper  the node shipper's own counters (shipped, dropped, quarantined)
"""
import json

from . import lineprotocol as lp
from ..metrics import SAMPLE_NAMES, SUMMARY_FIELDS

SAMPLE = "jobmon_sample"
JOB = "jobmon_job"
SHIPPER = "jobmon_shipper"
MEASUREMENTS = (SAMPLE, JOB)       # what a spool file may hold

# tags set by the node shipper, overriding whatever a spool file says (kernel-checked
# owner, the node's name, the site's cluster name)
SHIPPER_TAGS = ("cluster", "host", "user")
# tags written by the sampler: the job id, the scheduler, and the job tags (--tag, or from
# the scheduler plugin) with one of these bounded-cardinality names
JOB_TAGS = ("job", "scheduler")
PROMOTED_TAGS = ("account", "group", "partition", "queue")
ALL_TAGS = SHIPPER_TAGS + JOB_TAGS + PROMOTED_TAGS

# summary fields that are tags or travel as JSON text
_SUMMARY_NUMBERS = tuple(n for n, _u, _m in SUMMARY_FIELDS
                         if n not in ("job", "host", "user", "method"))


def _ns(seconds):
    return int(round(seconds * 1e6)) * 1000   # microsecond-exact, like the stored start_time


def job_tags(job):
    tags = {"job": job.get("job"), "scheduler": job.get("scheduler")}
    for k in PROMOTED_TAGS:
        v = (job.get("tags") or {}).get(k)
        if v:
            tags[k] = v
    return tags


def sample_line(tags, sample):
    values = {k: sample[k] for k in SAMPLE_NAMES if k in sample}
    values["elapsed_seconds"] = sample.get("elapsed_seconds")
    if sample.get("method"):
        values["method"] = sample["method"]
    return lp.point(SAMPLE, tags, values, sample["time"])


def job_line(job, summary=None):
    """The job's point: its description, plus the summary once it has ended."""
    values = {"method": job.get("method") or "", "start_time": job.get("start_time"),
              "interval": job.get("interval"),
              "command": json.dumps(job.get("command") or [], ensure_ascii=False),
              "tags": json.dumps(job.get("tags") or {}, ensure_ascii=False, sort_keys=True)}
    if summary:
        values.update({k: summary.get(k) for k in _SUMMARY_NUMBERS})
        if summary.get("method"):
            values["method"] = summary["method"]
        values["ended"] = 1
    return lp.point(JOB, job_tags(job), values, _ns(job["start_time"]))


# --- reading back (rows from InfluxQL `SELECT *`, tags merged in) ---

def job_from_row(row):
    """The job dict (with "summary") that the embedded store's read side gives."""
    tags = _json(row.get("tags"), {})
    info = {"job": row.get("job"), "host": row.get("host"), "user": row.get("user"),
            "method": row.get("method"), "start_time": row.get("start_time"),
            "tags": tags, "command": _json(row.get("command"), []),
            "interval": row.get("interval"), "scheduler": row.get("scheduler"), "summary": None}
    if row.get("ended"):
        s = {k: row.get(k) for k in _SUMMARY_NUMBERS}
        s.update({k: info[k] for k in ("job", "host", "user", "method", "tags", "command")})
        info["summary"] = s
    return info


def sample_from_row(row):
    s = {"time": row["time"], "elapsed_seconds": row.get("elapsed_seconds"),
         "method": row.get("method")}
    s.update({k: row[k] for k in SAMPLE_NAMES if row.get(k) is not None})
    return s


def _json(text, default):
    try:
        return json.loads(text) if text else default
    except ValueError:
        return default
