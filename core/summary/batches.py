"""Which batch a job belongs to: the jobs one submission made, as `jobmon report` groups them
for right-sizing, `jobmon query NAME` finds them, and the end-of-job summary names them
(`batch`) for the dashboards. Standard library only, without re (inside every job).

  Slurm array        tag array_job_id, or an id 12345_7 (task 7 of array 12345)
  HTCondor batch     tag JobBatchName (condor_submit -batch-name; DAGMan sets it to its DAG)
  HTCondor DAG       tag DAGManJobId (the DAG's nodes, where no batch name is set)
  HTCondor cluster   an id 4711.3 (proc 3 of cluster 4711), per schedd
"""


def _numbered(job, sep):
    """The part before `sep` of an id NUMBER<sep>NUMBER, else None."""
    head, found, tail = job.partition(sep)
    return head if found and head.isdigit() and tail.isdigit() else None


def batch_of(record):
    """(kind, name) of the batch a record's job belongs to, or None for a lone job.
    record: a job dict with its job id, tags and scheduler."""
    tags = record.get("tags") or {}
    job = str(record.get("job") or "")
    task_of = _numbered(job, "_")
    if tags.get("array_job_id") or task_of:
        return "array", str(tags.get("array_job_id") or task_of)
    if tags.get("JobBatchName"):
        return "batch", str(tags["JobBatchName"])
    schedd = f"{tags['schedd']}#" if tags.get("schedd") else ""
    if tags.get("DAGManJobId"):
        return "dag", schedd + str(tags["DAGManJobId"])
    cluster = _numbered(job, ".")
    if cluster and record.get("scheduler") in (None, "htcondor"):
        return "cluster", schedd + cluster
    return None


def batch_text(record):
    """The batch as the summary names it: "array 12345", "batch nightly", "dag s1#77",
    "cluster s1#4711"; None for a lone job."""
    b = batch_of(record)
    return None if b is None else f"{b[0]} {b[1]}"


def in_batch(record, name):
    """Does the record's job belong to the batch a user names `name`: a Slurm array's id,
    an HTCondor batch name or DAG id (with or without its schedd, as report shows it)?"""
    b = batch_of(record)
    return b is not None and b[0] != "cluster" and name in (b[1], b[1].rpartition("#")[2])


# the end-of-job figure of its batch, declared (jobmon.metrics.declared)
FIGURES = (
    {"name": "batch", "unit": "text", "range": None, "method": "recorded",
     "meaning": "the batch the job belongs to, as `jobmon report` groups them; absent for a lone "
                "job"},
)
