"""What a user's job id means: the records of which jobs to look up.

jobmon stores each job under the id its users type (`--job-id`, or the scheduler's). A query
may name one job, or a group of them; which, each scheduler says (jobmon.schedulers, its
object's id parts, where its ids are listed):

  N                  job N, and every job its schedulers group under N (`id_members`:
                     N.M, N_M)
  a global id        the one submission it names (`global_id`)
  INSTANCE#ID        job ID of that instance of the scheduler (`split_qualified`,
                     `qualifier`): two instances' jobs of one id are two jobs
  anything else      exactly that id
"""
import re

from .. import schedulers

_NUMBER = re.compile(r"\d+")


class JobRef:
    """Exact ids, id prefixes (a cluster's or an array's members), and for a GlobalJobId
    the one submission among jobs of that number on other instances."""

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
    for sched in schedulers.all():
        named = sched.global_id(text)
        if named:
            return JobRef(text, [named[0]], global_id=named[1])
    if _NUMBER.fullmatch(text):
        return JobRef(text, [text], [text + sep for sched in schedulers.all()
                                     for sep in sched.id_members])
    return JobRef(text, [text])


def instance_of(record):
    """The scheduler instance a record's job id is of (its scheduler's qualifier), or None."""
    return next(filter(None, (s.qualifier(record) for s in schedulers.all())), None)


def instance_in(row):
    """The instance a flat row names (the store's latest rows, `jobmon act`'s records: the
    job's tags as fields of their own, under its scheduler's qualifier_tag), or None."""
    return next(filter(None, (row.get(s.qualifier_tag) for s in schedulers.all()
                              if s.qualifier_tag)), None)


def split_instance(text):
    """(job id, instance) of an id qualified with the instance it is of; (text, None)
    otherwise."""
    for sched in schedulers.all():
        job, instance = sched.split_qualified(text)
        if instance is not None:
            return job, instance
    return text, None


def typed_ids(records):
    """Each record's id as `jobmon query` takes it: INSTANCE#ID where records of two
    instances answer to one id (a job id is its instance's), else its id."""
    instances = {}
    for r in records:
        instances.setdefault(r.get("job"), set()).add(instance_of(r))
    return [f"{instance_of(r)}#{r.get('job')}" if instance_of(r)
            and len(instances[r.get("job")]) > 1 else r.get("job") for r in records]
