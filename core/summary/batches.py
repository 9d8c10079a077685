"""Which batch a job belongs to: the jobs one submission made, as `jobmon report` groups them
for right-sizing, `jobmon query NAME` finds them, and the end-of-job summary names them
(`batch`) for the dashboards. Standard library only, without re (inside every job).

  array     tag array_job_id, or an id 12345_7 (task 7 of array 12345)
  batch     tag JobBatchName (a name given at submission; a DAG manager gives its DAG's)
  dag       tag DAGManJobId (the DAG's nodes, where no batch name is set)
  cluster   an id 4711.3 (proc 3 of cluster 4711) of a scheduler whose ids' members are
            numbered so (its id_members), or of a record that names no scheduler

A DAG's and a cluster's name is a number of a scheduler's instance: it is prefixed with the
instance the job's id is of (`ap01#4711`: the first of its qualifier_tags the job has).
What that takes of the schedulers (Known) is asked of the registered objects only when a
record needs it; a scheduler's job wrapper passes its own (all of them, loaded at every
job's end, would cost it ~2 ms and `re`).
"""


class Known:
    """What batches take of the schedulers: `qualifiers`, the tags that name the instance a
    job id is of; `clustered`, the schedulers whose ids N.M are cluster N's members."""

    __slots__ = ("qualifiers", "clustered")

    def __init__(self, qualifiers=(), clustered=()):
        self.qualifiers, self.clustered = tuple(qualifiers), frozenset(clustered)


_registered = []


def registered():
    """Known of every registered scheduler (jobmon.schedulers), asked once."""
    if not _registered:
        from .. import schedulers
        found = schedulers.all()
        _registered.append(Known([t for s in found for t in s.qualifier_tags],
                                 [s.tag for s in found if "." in s.id_members]))
    return _registered[0]


def _numbered(job, sep):
    """The part before `sep` of an id NUMBER<sep>NUMBER, else None."""
    head, found, tail = job.partition(sep)
    return head if found and head.isdigit() and tail.isdigit() else None


def batch_of(record, known=None):
    """(kind, name) of the batch a record's job belongs to, or None for a lone job.
    record: a job dict with its job id, tags and scheduler; known: a Known (default: the
    registered schedulers', asked only where the record needs it)."""
    tags = record.get("tags") or {}
    job = str(record.get("job") or "")
    task_of = _numbered(job, "_")
    if tags.get("array_job_id") or task_of:
        return "array", str(tags.get("array_job_id") or task_of)
    if tags.get("JobBatchName"):
        return "batch", str(tags["JobBatchName"])
    dag = tags.get("DAGManJobId")
    cluster = None if dag else _numbered(job, ".")
    if not (dag or cluster):
        return None
    known = known or registered()
    scheduler = record.get("scheduler")
    if cluster and scheduler is not None and scheduler not in known.clustered:
        return None
    instance = next((f"{tags[t]}#" for t in known.qualifiers if tags.get(t)), "")
    return ("dag", instance + str(dag)) if dag else ("cluster", instance + cluster)


def batch_text(record, known=None):
    """The batch as the summary names it: "array 12345", "batch nightly", "dag s1#77",
    "cluster s1#4711"; None for a lone job."""
    b = batch_of(record, known)
    return None if b is None else f"{b[0]} {b[1]}"


def in_batch(record, name, known=None):
    """Does the record's job belong to the batch a user names `name`: an array's id, a
    batch's name or a DAG's id (with or without its instance, as report shows it)?"""
    b = batch_of(record, known)
    return b is not None and b[0] != "cluster" and name in (b[1], b[1].rpartition("#")[2])


# the end-of-job figure of its batch, declared (jobmon.metrics.declared)
FIGURES = (
    {"name": "batch", "unit": "text", "range": None, "method": "recorded",
     "meaning": "the batch the job belongs to, as `jobmon report` groups them; absent for a lone "
                "job"},
)
