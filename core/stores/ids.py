"""What a user's job id means: the records of which jobs to look up.

jobmon stores each job under the id its users type (`--job-id`, or the scheduler's: HTCondor
`Cluster.Proc`, Slurm `12345`, `12345_7` for an array task, `12345+0` for a heterogeneous
component). A query may name one job, or a group of them:

  4711.0                    that HTCondor job
  4711                      job 4711, and every job of HTCondor cluster 4711 / Slurm array 4711
  schedd#4711.0#1700000000  an HTCondor GlobalJobId: job 4711.0 of that submission
  schedd#4711.0             job 4711.0 of that schedd (HTCondor ids are the schedd's own:
                            two schedds' 4711.0 are two jobs, told apart by their `schedd`)
  12345_7, 12345+0          that Slurm array task, that heterogeneous component
  anything else             exactly that id
"""
import re

_GLOBAL = re.compile(r"(?P<schedd>[^#]+)#(?P<job>\d+\.\d+)#\d+")
_OF_SCHEDD = re.compile(r"(?P<schedd>[^#]+)#(?P<job>\d+(?:\.\d+)?)")
_NUMBER = re.compile(r"\d+")


class JobRef:
    """Exact ids, id prefixes (a cluster's or an array's members), and for a GlobalJobId
    the one submission among jobs of that number on other schedds."""

    def __init__(self, text, exact=(), prefixes=(), global_id=None):
        self.text, self.exact, self.prefixes = text, tuple(exact), tuple(prefixes)
        self.global_id = global_id

    def matches(self, info):
        """Does a stored job record (its job id and tags) belong to this reference?"""
        job = info.get("job") or ""
        if self.global_id and (info.get("tags") or {}).get("GlobalJobId") != self.global_id:
            return False
        return job in self.exact or any(job.startswith(p) for p in self.prefixes)

    @property
    def group(self):
        """True when the id may stand for several jobs."""
        return bool(self.prefixes)

    def __repr__(self):
        return f"JobRef({self.text!r}, exact={self.exact}, prefixes={self.prefixes})"


def parse(text):
    m = _GLOBAL.fullmatch(text)
    if m:
        return JobRef(text, [m["job"]], global_id=text)
    if _NUMBER.fullmatch(text):
        return JobRef(text, [text], [text + ".", text + "_"])
    return JobRef(text, [text])


def schedd_of(record):
    """The schedd an HTCondor record's job id is of (the wrapper's `schedd` tag, from the
    job's GlobalJobId), or None."""
    return (record.get("tags") or {}).get("schedd") or None


def split_schedd(text):
    """(job id, schedd) of `schedd#4711.0` (or `schedd#4711`); (text, None) otherwise."""
    m = _OF_SCHEDD.fullmatch(text)
    return (m["job"], m["schedd"]) if m else (text, None)


def typed_ids(records):
    """Each record's id as `jobmon query` takes it: SCHEDD#4711.0 where records of two
    schedds answer to one id (an HTCondor id is its schedd's), else its id."""
    schedds = {}
    for r in records:
        schedds.setdefault(r.get("job"), set()).add(schedd_of(r))
    return [f"{schedd_of(r)}#{r.get('job')}" if schedd_of(r) and len(schedds[r.get("job")]) > 1
            else r.get("job") for r in records]
