"""Slurm: identify a job from the environment slurmd gives its Prolog and Epilog.

That environment (DESIGN §4) has the raw job id, user, uid, account, partition, node and
cluster, and since 25.11 the SLUID; a heterogeneous job's component has SLURM_HET_JOB_ID.
It has no job name, no QOS and, before 23.02, no array ids: what it lacks is joined at
query time from sacct, except the array and het ids, which the sampler reads from the
job's own processes once they run (refine()). Slurm advises prologs not to call Slurm
commands, so nothing here does. Standard library only.
"""
import re

from .. import Identity

SCHEDULER = "slurm"
# Prolog/Epilog environment -> tag
ENV_TAGS = (("SLURM_CLUSTER_NAME", "cluster"), ("SLURM_JOB_ID", "job_id"),
            ("SLURM_JOB_USER", "user"), ("SLURM_JOB_UID", "uid"),
            ("SLURM_JOB_ACCOUNT", "account"), ("SLURM_JOB_PARTITION", "partition"),
            ("SLURMD_NODENAME", "node"), ("SLURM_JOB_SLUID", "sluid"),
            ("SLURM_ARRAY_JOB_ID", "array_job_id"), ("SLURM_ARRAY_TASK_ID", "array_task_id"),
            ("SLURM_HET_JOB_ID", "het_job_id"), ("SLURM_HET_JOB_OFFSET", "het_job_offset"),
            ("SLURM_JOB_NUM_NODES", "num_nodes"), ("SLURM_JOB_RESTART_COUNT", "restart_count"))
# what the job's own processes may add (their environment has them; 22.05's Prolog not)
REFINE_KEYS = ("SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_HET_JOB_ID",
               "SLURM_HET_JOB_OFFSET")
_NUMBER = re.compile(r"[0-9]+\Z")
# a SLUID: "s" and 13 characters of Crockford's base32
SLUID = re.compile(r"[sS][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{13}\Z")


def detect(environ):
    return bool(environ.get("SLURM_JOB_ID")) and bool(
        environ.get("SLURM_SCRIPT_CONTEXT") or environ.get("SLURMD_NODENAME"))


def identify(environ):
    tags = {}
    for key, tag in ENV_TAGS:
        v = environ.get(key)
        if v:
            tags[tag] = v
    cpus = cpus_on_node(environ)
    if cpus is not None:   # the cpuset says it too, except where it is the whole node
        tags["alloc_cpus"] = str(cpus)
    return Identity(job_value(tags), scheduler=SCHEDULER, run=run_number(environ), tags=tags)


_COUNT = re.compile(r"([0-9]+)(?:\(x([0-9]+)\))?\Z")


def cpus_on_node(environ):
    """The CPUs Slurm allocated the job on this node (its AllocCPUS here), from the Prolog's
    SLURM_JOB_CPUS_PER_NODE ("4", "72(x2),36": counts in the order of SLURM_NODELIST);
    None when it cannot be told."""
    counts = []
    for part in (environ.get("SLURM_JOB_CPUS_PER_NODE") or "").split(","):
        m = _COUNT.match(part.strip())
        if not m:
            return None
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    if not counts:
        return None
    if len(set(counts)) == 1:
        return counts[0]
    nodes = expand_hostlist(environ.get("SLURM_NODELIST") or "")
    me = environ.get("SLURMD_NODENAME")
    if me in nodes and len(nodes) == len(counts):
        return counts[nodes.index(me)]
    return None


def expand_hostlist(text):
    """Slurm's host list ("node[01-03,7],gpu5") -> ["node01", "node02", "node03", "node7",
    "gpu5"]; [] for a form it does not know (more than one bracket in a name)."""
    names, depth, start = [], 0, 0
    parts = []
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    for part in filter(None, (p.strip() for p in parts)):
        if "[" not in part:
            names.append(part)
            continue
        head, _, rest = part.partition("[")
        ranges, _, tail = rest.partition("]")
        if "[" in tail or "]" in tail:
            return []
        for r in ranges.split(","):
            lo, _, hi = r.partition("-")
            if not (_is_number(lo) and (not hi or _is_number(hi))):
                return []
            for n in range(int(lo), int(hi or lo) + 1):
                names.append(f"{head}{str(n).zfill(len(lo))}{tail}")
    return names


def job_value(tags):
    """The id users type: 12345, 12345_7 for an array task, 12345+1 for the second
    component of a heterogeneous job; the raw ids stay in the tags."""
    raw = tags.get("job_id")
    array, task = tags.get("array_job_id"), tags.get("array_task_id")
    if _is_number(array) and _is_number(task):
        return f"{array}_{task}"
    het = tags.get("het_job_id")
    if _is_number(het) and _is_number(raw):
        offset = tags.get("het_job_offset")
        if not _is_number(offset):
            # slurmd gives the Prolog no offset; a het job's components get consecutive
            # ids from one submission, the leader's first
            offset = str(int(raw) - int(het)) if int(raw) >= int(het) else None
        if offset is not None:
            return f"{het}+{offset}"
    return raw


def run_number(environ):
    """This run of the job, 1 for the first: a requeued job runs again under its id."""
    n = environ.get("SLURM_JOB_RESTART_COUNT")
    return int(n) + 1 if _is_number(n) else None


def refine(identity, proc_environ):
    """The identity completed from the environment of one of the job's own processes
    (array ids, which 22.05's Prolog lacks): None when that process does not belong to
    the job (another job id, or none: Slurm's own sleeper in the extern step), else the
    identity, with the ids it adds. Only those ids are taken from the job's processes."""
    if proc_environ.get("SLURM_JOB_ID") != identity.tags.get("job_id"):
        return None
    tags = dict(identity.tags)
    for key, tag in ENV_TAGS:
        v = proc_environ.get(key)
        if key in REFINE_KEYS and tag not in tags and _is_number(v):
            tags[tag] = v
    run = identity.run
    restarts = proc_environ.get("SLURM_RESTART_COUNT")   # set in a requeued job's runs
    if _is_number(restarts):
        tags["restart_count"], run = restarts, int(restarts) + 1
    return Identity(job_value(tags), identity.scheduler, run, tags)


def next_run(identity):
    """The identity of the job's next run on this node (requeued: slurmd runs no new
    Prolog for it); refine() corrects the count from the run's own processes."""
    n = int(identity.tags.get("restart_count") or 0) + 1
    return Identity(identity.job, identity.scheduler, n + 1,
                    dict(identity.tags, restart_count=str(n)))


def needs_refining(identity):
    """True while the job may be an array task we cannot name yet (22.05's Prolog does
    not say; the job's processes do). A het job's component is never an array task."""
    t = identity.tags
    return "array_task_id" not in t and "het_job_id" not in t


def _is_number(v):
    return isinstance(v, str) and bool(_NUMBER.match(v))
