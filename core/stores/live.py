"""The jobs running on this node and their latest samples, read without a database: from
the node's spool files (what the samplers write for the shipper, jobmon.sinks.spool) and
from an embedded store. For `jobmon top` and `jobmon watch`.

Spool files: a sampler holds an exclusive flock on its file for as long as it lives, so a
file whose lock cannot be shared belongs to a running job (the same test as the shipper's,
the lock taken and given back at once). Each file starts with the job's own point; the
latest samples and breakdown are in its tail, which is all that is read. Job users write
these files: a line that is not jobmon line protocol (core/influx/grammar.py) is skipped.
Listing the spool needs the shipper's group or root (docs/security.md).

Embedded store: records of this host without an end-of-job record whose last sample is
recent (a record whose sampler died keeps no summary but stops getting samples).
"""
import errno
import fcntl
import os
import pwd
import re
import stat
import time

from ..influx import grammar, schema

TAIL_BYTES = 64 << 10        # of a spool file read per refresh: ~140 samples
_TAG = re.compile(rb",((?:[^,=\\ ]|\\.)+)=((?:[^,=\\ ]|\\.)*)")
_FIELD = re.compile(rb'((?:[^,=\\ ]|\\.)+)=("(?:[^"\\]|\\.)*"|[^, ]+)')
_UNESCAPE = re.compile(rb"\\(.)")


class LiveJob:
    """A running job: its description, its latest samples (time order) and breakdown."""

    def __init__(self, info, samples, procs, source):
        self.info = info          # job dict as the stores give it (job, user, tags, ...)
        self.samples = samples
        self.procs = procs        # the latest breakdown record, or None
        self.source = source      # "spool" or "store"

    @property
    def job(self):
        return self.info.get("job")


def parse_line(line):
    """(measurement, {tag: text}, {field: value}, time ns) of one line of jobmon line
    protocol, or None for any other line."""
    m = grammar.LINE.fullmatch(line)
    if m is None or not grammar.valid(line):
        return None
    meas, tags, rest = grammar.PARTS.fullmatch(line).groups()
    tag = {_text(k): _text(v) for k, v in _TAG.findall(tags)}
    cut = rest.rindex(b" ")
    fields = {_text(k): _value(v) for k, v in _FIELD.findall(rest[1:cut])}
    return meas.decode(), tag, fields, int(rest[cut + 1:])


def _text(raw):
    return _UNESCAPE.sub(rb"\1", raw).decode("utf-8", "replace")


def _value(raw):
    if raw.startswith(b'"'):
        return _text(raw[1:-1])
    if raw.endswith(b"i"):
        return int(raw[:-1])
    if raw in (b"true", b"false"):
        return raw == b"true"
    return float(raw)


def _owner(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def read_spool_file(path, last=60, host=None):
    """The LiveJob of one spool file whose sampler still runs, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None          # nobody holds it: the job is over
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                return None
        head = os.pread(fd, schema.MAX_LINE_BYTES, 0)
        head = head[:head.find(b"\n") + 1]
        start = max(st.st_size - max(TAIL_BYTES, last * 1024), len(head))
        tail = os.pread(fd, st.st_size - start, start)
    finally:
        os.close(fd)
    first = parse_line(head)
    if first is None or first[0] != schema.JOB:
        return None
    if start > len(head):
        tail = tail[tail.find(b"\n") + 1:]      # the first line may be cut
    tail = tail[:tail.rfind(b"\n") + 1]         # a line being written: not yet
    samples, procs = [], None
    for line in tail.splitlines(True):
        p = parse_line(line)
        if p is None:
            continue
        row = dict(p[1], **p[2], time=p[3])
        if p[0] == schema.SAMPLE:
            samples.append(schema.sample_from_row(row))
        elif p[0] == schema.PROCS:
            procs = schema.procs_from_row(row)
    _meas, tags, fields, t = first
    info = schema.job_from_row(dict(tags, **fields, time=t))
    # whose job: the owner, as the kernel says (a root-owned file says it itself)
    if st.st_uid != 0 or not info.get("user"):
        info["user"] = _owner(st.st_uid)
    info["host"] = host or os.uname().nodename
    return LiveJob(info, samples[-last:], procs, "spool")


def spool_jobs(directory, last=60):
    """Running jobs of the node's spool directory (PermissionError if it cannot be
    listed; FileNotFoundError if there is none)."""
    out = []
    with os.scandir(directory) as it:
        names = [e.path for e in it if e.name.endswith(".lp") and not e.name.startswith(".")
                 and not e.name.endswith(".end.lp")]
    for path in sorted(names):
        job = read_spool_file(path, last)
        if job is not None:
            out.append(job)
    return out


def store_jobs(store, last=60, host=None, now=None):
    """Running jobs of an embedded store (a jobmon.stores.local.LocalStore) on `host`
    (default: this node)."""
    host = host or os.uname().nodename
    now = time.time() if now is None else now
    out = []
    for rec in store.unfinished(host):
        samples = store.last_samples(rec, last)
        interval = rec.get("interval") or 10.0
        seen = samples[-1]["time"] / 1e9 if samples else rec.get("start_time") or 0
        if now - seen > 3 * interval + 30:      # its sampler is gone
            continue
        procs = store.breakdowns(rec, last=1)
        out.append(LiveJob(rec, samples, procs[-1] if procs else None, "store"))
    return out


def running(spool_dir=None, store=None, last=60):
    """(jobs, problems): the running jobs from the spool directory and the store given
    (either may be None), each job once; problems: why a source could not be read."""
    jobs, problems = [], []
    if spool_dir:
        try:
            jobs += spool_jobs(spool_dir, last)
        except FileNotFoundError:
            pass
        except OSError as e:
            problems.append(f"cannot list the spool {spool_dir}: {e.strerror} (run as root "
                            f"or in the shipper's group)")
    if store is not None:
        seen = {_key(j) for j in jobs}
        jobs += [j for j in store_jobs(store, last) if _key(j) not in seen]
    return jobs, problems


def _key(job):
    """What tells a running job apart in both sources: two users' or two scheduler
    instances' jobs of one id may start in the same second."""
    from .ids import instance_of
    return (job.job, job.info.get("run"), job.info.get("user"), instance_of(job.info),
            round(job.info.get("start_time") or 0))


def fold_breakdowns(records, limit=10):
    """A job's command names over all its breakdowns, busiest first: {comm, procs_max,
    cpu_mean (over every breakdown, 0 where absent), cpu_max, rss_max, seen}."""
    groups = {}
    for rec in records:
        for g in rec.get("top") or ():
            x = groups.setdefault(g.get("comm") or "?", {
                "comm": g.get("comm") or "?", "procs_max": 0, "cpu_sum": 0.0, "cpu_max": 0.0,
                "rss_max": 0, "seen": 0})
            cores = g.get("cpu_cores") or 0.0
            x["procs_max"] = max(x["procs_max"], g.get("procs") or 0)
            x["cpu_sum"] += cores
            x["cpu_max"] = max(x["cpu_max"], cores)
            x["rss_max"] = max(x["rss_max"], g.get("rss_bytes") or 0)
            x["seen"] += 1
    out = []
    for x in groups.values():
        x["cpu_mean"] = round(x.pop("cpu_sum") / len(records), 3)
        out.append(x)
    out.sort(key=lambda x: (-x["cpu_mean"], -x["rss_max"]))
    return out[:limit]
