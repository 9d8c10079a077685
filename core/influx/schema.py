"""jobmon's InfluxDB schema (docs/schema.md): what a job, a sample and the shipper become
as points, and back. Standard library only: the spool writer uses it inside the job.

Measurements:
  jobmon_sample   one point per job per host per interval
  jobmon_job      one point per job run, timestamped at its start: written when the job
                  starts (description) and again at its end (summary fields added to the
                  same point -- same series and time, so InfluxDB merges them)
  jobmon_procs    the job's heaviest processes by command name, every [procs] every_seconds
  jobmon_shipper  the node shipper's own counters (shipped, dropped, quarantined)
  jobmon_action   `jobmon act`'s warnings and actions on idle jobs, one point each
  jobmon_rollup   an hour's job runs aggregated, written by `jobmon rollup` (not spooled)
"""
import json

from . import lineprotocol as lp
from ..metrics import SAMPLE_NAMES, SUMMARY_FIELDS, UNITS, bounds
from ..config.schedulers import qualifier_tags

SAMPLE = "jobmon_sample"
JOB = "jobmon_job"
SHIPPER = "jobmon_shipper"
PROCS = "jobmon_procs"             # the per-process breakdown, every [procs] every_seconds
ACTION = "jobmon_action"           # `jobmon act`'s (docs/actions.md); never in a spool file
ROLLUP = "jobmon_rollup"           # an hour's job runs aggregated (jobmon.report.rollup)
MEASUREMENTS = (SAMPLE, JOB, PROCS)   # what a spool file may hold
# the raw series, in `influxdb.samples_database` when the site keeps them apart from the
# summaries (a short retention for these, a long one for the rest: docs/influxdb3.md)
SAMPLE_MEASUREMENTS = (SAMPLE, PROCS)

# tags set by the node shipper, overriding whatever a spool file says (kernel-checked
# owner, the node's name, the site's cluster name)
SHIPPER_TAGS = ("cluster", "host", "user")
# tags written by the sampler: the job id, the scheduler, the run (a job the scheduler ran
# more than once: evicted, requeued), the instance its id is of where a scheduler has
# several (its plugin's qualifier tags: two instances' 4711.0 are two jobs), and the job
# tags (--tag, or from the scheduler plugin) with one of these bounded-cardinality names
QUALIFIER_TAGS = qualifier_tags()
JOB_TAGS = ("job", "scheduler", "run") + QUALIFIER_TAGS
PROMOTED_TAGS = ("account", "group", "partition", "queue")
ALL_TAGS = SHIPPER_TAGS + JOB_TAGS + PROMOTED_TAGS

# the summary fields of the job point (the others are its tags, or method)
_SUMMARY_VALUES = tuple(n for n, _u, _r, _m in SUMMARY_FIELDS
                        if n not in ("job", "host", "user", "method"))
_SUMMARY_TEXTS = tuple(n for n in _SUMMARY_VALUES if UNITS.get(n) == "text")
# JSON texts of the job point are bounded, so every line jobmon writes stays under
# MAX_LINE_BYTES (the spool writer reserves that much room for the end-of-job line)
MAX_COMMAND_BYTES, MAX_TAGS_BYTES = 8192, 2048
# the summary's texts: 256 characters each, the advice (several rules' lines) more
TEXT_CHARS = {"advice": 1024, "reason": 1024}
MAX_LINE_BYTES = 32768


def _field_type(name):
    if UNITS.get(name) == "text":
        return "str"
    return "int" if lp.FIELD_IS_INT[name] else "float"


HASHES = ("command_hash", "script_hash")   # jobmon.stores.fingerprint's, from the job's tags
# fields of the job point that only the shipper and `jobmon reconcile` write, never a
# job's own spool lines: whose job it is (jobmon.report.ownership)
SETTLED = ("ownership",)
# Every field a spool line may carry, with its one InfluxDB type: the shipper refuses any
# other key (a field named like a tag would shadow it in `SELECT *`) and any other type
# (the first type written into a shard is the only one the server accepts there after).
FIELD_TYPES = {
    SAMPLE: dict({n: _field_type(n) for n in SAMPLE_NAMES},
                 elapsed_seconds="float", method="str"),
    JOB: dict({n: _field_type(n) for n in _SUMMARY_VALUES if n not in SETTLED},
              method="str", command="str", tags="str", start_time="float",
              interval="float", ended="int", lost_points="int",
              command_hash="str", script_hash="str"),
}
FIELD_TYPES[PROCS] = {"procs_top": "str", "procs": "int", "elapsed_seconds": "float",
                      "window_seconds": "float"}
# every field stored in a measurement: what a spool line may carry, and the settled ones
STORED_TYPES = dict(FIELD_TYPES, **{JOB: dict(FIELD_TYPES[JOB], **{n: "str" for n in SETTLED})})
# a warning or action of `jobmon act` on a job (jobmon.actions): written by it alone,
# straight to the server -- the shipper takes no jobmon_action line from a spool file
STORED_TYPES[ACTION] = {"action": "str", "dry_run": "int", "outcome": "str", "reason": "str",
                        "resources": "str", "idle_seconds": "float", "warned_at": "float",
                        "actor": "str", "scheduler_user": "str", "scheduler_job": "str",
                        "hosts": "str"}
ACTION_TAGS = ALL_TAGS                # the tags of the job's record
MAX_PROCS_TOP_BYTES = 16384      # the breakdown's JSON text (well under MAX_LINE_BYTES)
assert not set(ALL_TAGS) & set().union(*STORED_TYPES.values())


def _ns(seconds):
    return int(round(seconds * 1e6)) * 1000   # microsecond-exact, like the stored start_time


def job_tags(job):
    tags = {"job": job.get("job"), "scheduler": job.get("scheduler")}
    if job.get("run") is not None:
        tags["run"] = str(job["run"])
    for k in QUALIFIER_TAGS + PROMOTED_TAGS:
        v = (job.get("tags") or {}).get(k)
        if v:
            tags[k] = v
    return tags


def sample_line(tags, sample):
    values = {k: sample[k] for k in SAMPLE_NAMES if k in sample}
    values["elapsed_seconds"] = sample.get("elapsed_seconds")
    if sample.get("method"):
        values["method"] = _method(sample["method"])
    return lp.point(SAMPLE, tags, values, sample["time"])


def procs_line(tags, record):
    """The breakdown's point (jobmon.probes.breakdown): the groups as one JSON text, with
    command lines dropped first, then the last groups, should it be too long."""
    top = list(record.get("top") or [])
    text = json.dumps(top, ensure_ascii=False, separators=(",", ":"))
    if len(text.encode("utf-8", "surrogatepass")) > MAX_PROCS_TOP_BYTES:
        top = [{k: v for k, v in g.items() if k != "cmdline"} for g in top]
        while top:
            text = json.dumps(top, ensure_ascii=False, separators=(",", ":"))
            if len(text.encode("utf-8", "surrogatepass")) <= MAX_PROCS_TOP_BYTES:
                break
            top.pop()
        text = text if top else "[]"
    values = {"procs_top": text, "procs": record.get("procs")}
    for k in ("elapsed_seconds", "window_seconds"):
        if record.get(k) is not None:
            values[k] = float(record[k])
    return lp.point(PROCS, tags, values, record["time"])


def procs_from_row(row):
    """A breakdown record from a row (InfluxQL) or the embedded store's columns."""
    out = {"time": row["time"], "elapsed_seconds": row.get("elapsed_seconds"),
           "window_seconds": row.get("window_seconds"), "procs": row.get("procs"),
           "top": _json(row.get("procs_top"), [])}
    bounds().clean(out)
    return out


def job_line(job, summary=None, lost_points=0, tags=None):
    """The job's point: its description, plus the summary once it has ended (with the
    points the spool could not take, `lost_points`). tags: default job_tags(job)."""
    values = {"method": _method(job.get("method")), "start_time": job.get("start_time"),
              "interval": job.get("interval"),
              "command": _command_text(job.get("command") or []),
              "tags": _tags_text(job.get("tags") or {})}
    # what the run ran, as its own fields too: `jobmon query --like` selects by them
    # (jobmon.stores.fingerprint), where the tags' JSON text would have to be searched
    for k in HASHES:
        v = (job.get("tags") or {}).get(k)
        if isinstance(v, str) and v:
            values[k] = v[:64]
    if summary:
        values.update({k: summary.get(k) for k in _SUMMARY_VALUES if k not in SETTLED})
        for k in _SUMMARY_TEXTS:   # one type per field, bounded
            if values.get(k) is not None:
                values[k] = str(values[k])[:TEXT_CHARS.get(k, 256)]
        if summary.get("method"):
            values["method"] = _method(summary["method"])
        values["ended"] = 1
        values["lost_points"] = lost_points
    return lp.point(JOB, tags or job_tags(job), values, _ns(job["start_time"]))


def correction_line(point, summary):
    """A job point's correction (`jobmon reconcile`): the summary's fields, at the series
    (every tag as stored) and time of the point they correct -- InfluxDB merges them into
    it, a field written again replacing its value. point: the store's "_point"."""
    tags = {k: point[k] for k in ALL_TAGS if point.get(k) not in (None, "")}
    values = {k: summary.get(k) for k in _SUMMARY_VALUES}
    for k in _SUMMARY_TEXTS:
        if values[k] is not None:
            values[k] = str(values[k])[:TEXT_CHARS.get(k, 256)]
    values["ended"] = 1
    return lp.point(JOB, tags, values, int(point["time"]))


def action_line(action):
    """An action's point (jobmon.actions.actor): its job's tags, its fields typed as
    STORED_TYPES says, at its time (ns). Written again with the same time once the
    scheduler has answered: the outcome replaces "pending"."""
    types = STORED_TYPES[ACTION]
    values = {k: (float(v) if types[k] == "float" else int(v) if types[k] == "int" else
                  str(v)[:TEXT_CHARS.get(k, 256)])
              for k, v in action.items() if k in types and v is not None}
    tags = {k: action.get(k) for k in ACTION_TAGS}
    return lp.point(ACTION, tags, values, int(action["time"]))


def action_from_row(row):
    """An action as `jobmon act` made it, from a row (InfluxQL or the embedded store); its
    figures outside their ranges left out (None)."""
    a = {k: row.get(k) for k in ("time", *ACTION_TAGS, *STORED_TYPES[ACTION])}
    for k, like in (("idle_seconds", "cpu_idle_seconds"), ("warned_at", "start_time")):
        if not bounds().ok(like, a[k]):
            a[k] = None
    return a


def _method(name):
    return str(name or "")[:64]


def _command_text(command):
    text = json.dumps(command, ensure_ascii=False)
    if len(text.encode("utf-8", "surrogatepass")) <= MAX_COMMAND_BYTES:
        return text
    # still a JSON list: the command line, cut, and how much was left out
    joined = " ".join(map(str, command)).encode("utf-8", "surrogatepass")
    head = joined[:MAX_COMMAND_BYTES // 2].decode("utf-8", "ignore")
    return json.dumps([f"{head} ...({len(joined)} bytes)"], ensure_ascii=False)


def _tags_text(tags):
    text = json.dumps(tags, ensure_ascii=False, sort_keys=True)
    if len(text.encode("utf-8", "surrogatepass")) <= MAX_TAGS_BYTES:
        return text
    kept = {}
    for k in sorted(tags):    # whole tags, as many as fit, values cut to a fair share
        kept[k] = str(tags[k])[:64]
        if len(json.dumps(kept, ensure_ascii=False).encode("utf-8", "surrogatepass")) \
                > MAX_TAGS_BYTES - 64:
            del kept[k]
            break
    kept["..."] = f"{len(tags)} tags, {len(text)} characters"
    return json.dumps(kept, ensure_ascii=False, sort_keys=True)


# --- reading back: rows of InfluxQL queries that name every column, each tag with
# `::tag` and each field with `::field`, so a field can never pass for a tag ---

def columns(measurement):
    """The select list for a measurement's rows (`jobmon query`, `jobmon list`)."""
    fields = sorted(STORED_TYPES[measurement])
    return ", ".join([f'"{f}"::field' for f in fields] + [f'"{t}"::tag' for t in ALL_TAGS])


def job_from_row(row):
    """The job dict (with "summary") that the embedded store's read side gives."""
    tags = _json(row.get("tags"), {})
    info = {"job": row.get("job"), "host": row.get("host"), "user": row.get("user"),
            "method": row.get("method"), "start_time": row.get("start_time"),
            "tags": tags, "command": _json(row.get("command"), []),
            "interval": row.get("interval"), "scheduler": row.get("scheduler"),
            "run": row.get("run"), "summary": None}
    if row.get("ended"):
        s = {k: row.get(k) for k in _SUMMARY_VALUES}
        s["lost_points"] = row.get("lost_points")
        s.update({k: info[k] for k in ("job", "host", "user", "method", "tags", "command")})
        info["summary"] = s
    return in_range(info, row.get("time"))


def in_range(info, time_ns=None):
    """A job record with every figure outside its valid range left out (None): a forged
    or corrupt one never enters a figure (docs/metrics.md). A start time out of range is
    its point's (time_ns), else None."""
    b = bounds()
    if not b.ok("start_time", info.get("start_time")):
        info["start_time"] = time_ns / 1e9 if isinstance(time_ns, int) and \
            b.ok("start_time", time_ns / 1e9) else None
    if not b.ok("interval", info.get("interval")):
        info["interval"] = None
    s = info.get("summary")
    if isinstance(s, dict) and b.clean(s) and s.get("start_time") is None:
        s["start_time"] = info["start_time"]
    return info


def sample_from_row(row):
    s = {"time": row["time"], "elapsed_seconds": row.get("elapsed_seconds"),
         "method": row.get("method")}
    s.update({k: row[k] for k in SAMPLE_NAMES if row.get(k) is not None})
    return sample_in_range(s)


def sample_in_range(sample):
    """A sample without the figures outside their valid ranges (left out)."""
    for k in bounds().bad(sample):
        if k == "elapsed_seconds":
            sample[k] = None
        else:
            del sample[k]
    return sample


def _json(text, default):
    """The JSON text of a field, or `default` where it is none, not JSON or of another
    kind (a list where an object belongs)."""
    try:
        value = json.loads(text) if text else default
    except (TypeError, ValueError):
        return default
    return value if isinstance(value, type(default)) else default
