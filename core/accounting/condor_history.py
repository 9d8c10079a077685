"""What HTCondor itself recorded about a job: from a schedd (htcondor2: its history, its
job epoch history and its queue), from history files (condor_history's, and job epoch
files), or from job event logs (condor_events.py).

Read side only (`jobmon query`): the bindings are imported when a lookup needs them. Each
Record describes one run of one job (ClusterId.ProcId) in jobmon's units (FIELDS);
condor_compare.compare() sets one beside jobmon's summary of the same run.

History files: records are separated by `*** ` banner lines (`*** Offset = ... ClusterId =
... ProcId = ...` after each record; epoch files: `*** EPOCH ClusterId=... RunInstanceId=...`).
classad2.parseAds would silently merge them, so the text is split on the banners first and
only the records whose banner names a wanted job are parsed.
"""
import glob
import os
import re

from . import AccountingError, Source

MiB, KiB = 1 << 20, 1 << 10
STATUS = {1: "idle", 2: "running", 3: "removed", 4: "completed", 5: "held",
          6: "transferring_output", 7: "suspended"}
SOURCE_ORDER = ("epoch", "eventlog", "history", "schedd", "queue")   # per run first

# field -> (unit, meaning); every field is None when HTCondor did not record it
FIELDS = {
    "job": ("", "ClusterId.ProcId"),
    "cluster": ("", "ClusterId"), "proc": ("", "ProcId"),
    "global_job_id": ("", "GlobalJobId (schedd#cluster.proc#qdate)"),
    "schedd": ("", "the schedd, from GlobalJobId"), "owner": ("", "Owner"),
    "source": ("", "schedd (its history), queue (a job still queued), history (a history "
                   "file), epoch (the schedd's or a file's) or eventlog"),
    "run": ("", "which run this record describes, 1 = the first (jobmon's run number)"),
    "runs": ("count", "NumJobStarts: runs the job had when this was recorded"),
    "run_instance": ("", "an epoch record's RunInstanceId, as its banner gives it"),
    "status": ("", "JobStatus (idle, running, removed, completed, held, ...); for an "
                   "event-log run, how it ended (completed, evicted, held, removed)"),
    "exit_code": ("", "ExitCode (None when the job died by a signal or never exited)"),
    "signal": ("", "ExitSignal when ExitBySignal"),
    "start_time": ("s", "JobCurrentStartDate (event log: the execute event), s since epoch"),
    "end_time": ("s", "CompletionDate, s since epoch; None for a removed job"),
    "wall_seconds": ("s", "wall time of this run on the slot (LastRemoteWallClockTime)"),
    "execute_seconds": ("s", "time the job itself ran in this run, spawn to exit "
                             "(ActivationExecutionDuration / TimeExecuteUsage)"),
    "cpu_user_seconds": ("s", "RemoteUserCpu of this run"),
    "cpu_system_seconds": ("s", "RemoteSysCpu of this run"),
    "cpu_user_seconds_all_runs": ("s", "CumulativeRemoteUserCpu, every run"),
    "cpu_system_seconds_all_runs": ("s", "CumulativeRemoteSysCpu, every run"),
    "wall_seconds_all_runs": ("s", "RemoteWallClockTime, every run"),
    "badput_seconds": ("s", "slot time of the runs that did not complete the job "
                            "(evicted, held, removed): RemoteWallClockTime less the "
                            "completing run's"),
    "cpus_usage": ("cores", "CpusUsage: mean cores used"),
    "memory_usage_bytes": ("bytes", "MemoryUsage evaluated (MB): HTCondor's polled peak of "
                                    "anon+shmem (cgroup) or summed RSS (procd)"),
    "rss_bytes": ("bytes", "ResidentSetSize (KiB): largest polled RSS"),
    "image_size_bytes": ("bytes", "ImageSize (KiB)"),
    "disk_usage_bytes": ("bytes", "DiskUsage (KiB): size of the scratch directory"),
    "read_bytes": ("bytes", "BlockReadKbytes"), "write_bytes": ("bytes", "BlockWriteKbytes"),
    "request_cpus": ("count", "RequestCpus"), "request_gpus": ("count", "RequestGPUs"),
    "request_memory_bytes": ("bytes", "RequestMemory (MB) evaluated"),
    "request_disk_bytes": ("bytes", "RequestDisk (KiB) evaluated"),
    "cpus_provisioned": ("count", "CpusProvisioned"), "gpus_provisioned": ("count", "GPUsProvisioned"),
    "memory_provisioned_bytes": ("bytes", "MemoryProvisioned (MB)"),
    "disk_provisioned_bytes": ("bytes", "DiskProvisioned (KiB)"),
    "hold_reason": ("", "HoldReason, else LastHoldReason"),
    "hold_code": ("", "HoldReasonCode, else LastHoldReasonCode"),
    "hold_subcode": ("", "HoldReasonSubCode, else LastHoldReasonSubCode"),
    "remove_reason": ("", "RemoveReason"),
    "vacate_reason": ("", "VacateReason (why the last run was evicted)"),
    "vacate_code": ("", "VacateReasonCode"),
    "host": ("", "the slot it ran in (LastRemoteHost, RemoteHost, event log SlotName)"),
}
# attribute -> (field, scale); evaluated, so expressions (MemoryUsage) give numbers
NUMBERS = {"RemoteUserCpu": ("cpu_user_seconds", 1), "RemoteSysCpu": ("cpu_system_seconds", 1),
            "CumulativeRemoteUserCpu": ("cpu_user_seconds_all_runs", 1),
            "CumulativeRemoteSysCpu": ("cpu_system_seconds_all_runs", 1),
            "RemoteWallClockTime": ("wall_seconds_all_runs", 1),
            "LastRemoteWallClockTime": ("wall_seconds", 1),
            "ActivationExecutionDuration": ("execute_seconds", 1.0),
            "CpusUsage": ("cpus_usage", 1), "MemoryUsage": ("memory_usage_bytes", MiB),
            "ResidentSetSize": ("rss_bytes", KiB), "ImageSize": ("image_size_bytes", KiB),
            "DiskUsage": ("disk_usage_bytes", KiB), "BlockReadKbytes": ("read_bytes", KiB),
            "BlockWriteKbytes": ("write_bytes", KiB), "NumJobStarts": ("runs", 1),
            "RequestCpus": ("request_cpus", 1), "RequestGPUs": ("request_gpus", 1),
            "RequestMemory": ("request_memory_bytes", MiB),
            "RequestDisk": ("request_disk_bytes", KiB),
            "CpusProvisioned": ("cpus_provisioned", 1), "GPUsProvisioned": ("gpus_provisioned", 1),
            "MemoryProvisioned": ("memory_provisioned_bytes", MiB),
            "DiskProvisioned": ("disk_provisioned_bytes", KiB)}
_STRINGS = {"GlobalJobId": "global_job_id", "Owner": "owner", "RemoveReason": "remove_reason",
            "VacateReason": "vacate_reason"}


class Record:
    """One run of one job as HTCondor recorded it (FIELDS: names, units, meanings)."""
    __slots__ = tuple(FIELDS)

    def __init__(self, **values):
        for name in FIELDS:
            setattr(self, name, values.get(name))

    def as_dict(self):
        return {name: getattr(self, name) for name in FIELDS}

    def __repr__(self):
        return f"Record({self.job!r}, run={self.run!r}, source={self.source!r})"


def parse_job_id(text):
    """"4711" (every proc), "4711.0", or a GlobalJobId "schedd#4711.0#qdate" ->
    (cluster, proc or None, GlobalJobId or None); ValueError if it is none of them."""
    text = text.strip()
    gid = None
    g = re.fullmatch(r"[^#\s]+#(\d+\.\d+)#\d+", text)
    if g:
        gid, text = text, g.group(1)
    m = re.fullmatch(r"(\d+)(?:\.(\d+))?", text)
    if not m:
        raise ValueError(f"not an HTCondor job id: {text!r} (CLUSTER, CLUSTER.PROC or a GlobalJobId)")
    return int(m.group(1)), (int(m.group(2)) if m.group(2) is not None else None), gid


def record_from_ad(ad, source, banner=None):
    """A Record from a job ad (classad2.ClassAd): a history or epoch record, a queue ad."""
    r = Record(source=source)
    for attr, (field, scale) in NUMBERS.items():
        v = _number(ad, attr)
        setattr(r, field, None if v is None else v * scale)
    for attr, field in _STRINGS.items():
        setattr(r, field, _string(ad, attr))
    r.cluster, r.proc = _int(ad, "ClusterId"), _int(ad, "ProcId")
    if r.cluster is not None and r.proc is not None:
        r.job = f"{r.cluster}.{r.proc}"
    if r.global_job_id and "#" in r.global_job_id:
        r.schedd = r.global_job_id.split("#")[0]
    r.status = STATUS.get(_int(ad, "JobStatus"))
    if _number(ad, "ExitBySignal"):
        r.signal = _int(ad, "ExitSignal")
    else:
        r.exit_code = _int(ad, "ExitCode")
    r.start_time = _time(ad, "JobCurrentStartDate")
    r.end_time = _time(ad, "CompletionDate")
    if r.wall_seconds_all_runs is not None:
        good = (r.wall_seconds or 0) if r.status == "completed" else 0
        r.badput_seconds = max(r.wall_seconds_all_runs - good, 0)
    for field, attr in (("hold_reason", "HoldReason"), ("hold_code", "HoldReasonCode"),
                        ("hold_subcode", "HoldReasonSubCode")):
        v = _string(ad, attr) if field == "hold_reason" else _int(ad, attr)
        if v is None:
            last = "Last" + attr
            v = _string(ad, last) if field == "hold_reason" else _int(ad, last)
        setattr(r, field, v)
    r.vacate_code = _int(ad, "VacateReasonCode")
    r.host = _string(ad, "LastRemoteHost") or _string(ad, "RemoteHost")
    # the run: NumJobStarts counts this run once it started, in an epoch ad (written as its
    # run ends) as in a final one (which describes the job's last run)
    if r.runs:
        r.run = int(r.runs)
    if banner and str(banner.get("RunInstanceId", "")).isdigit():
        r.run_instance = int(banner["RunInstanceId"])
    if r.wall_seconds is None and source in ("epoch", "queue") and r.runs == 1:
        r.wall_seconds = r.wall_seconds_all_runs
    return r


# --- history files ----------------------------------------------------------------------------

BANNER = re.compile(r'(\w+)\s*=\s*("(?:[^"\\]|\\.)*"|\S+)')


def parse_banner(line):
    """`*** Offset = 0 ClusterId = 4711 ...` or `*** EPOCH ClusterId=1 ...` -> {key: text},
    plus "epoch": True for an epoch record."""
    out = {k: v.strip('"') for k, v in BANNER.findall(line[3:])}
    out["epoch"] = line[4:].lstrip().startswith("EPOCH")
    return out


def split_records(lines):
    """(banner dict, record text) for every record of a history or epoch file, whether its
    banner follows the record (history files) or precedes it."""
    chunk, banner_first, pending = [], None, None
    for line in lines:
        if line.startswith("*** "):
            banner = parse_banner(line)
            if banner_first is None:
                banner_first = not any(x.strip() for x in chunk)
            if banner_first:
                if pending is not None:
                    yield pending, "".join(chunk)
                pending, chunk = banner, []
            else:
                yield banner, "".join(chunk)
                chunk = []
        else:
            chunk.append(line)
    if banner_first and pending is not None:
        yield pending, "".join(chunk)
    elif any(x.strip() for x in chunk):
        yield {}, "".join(chunk)   # a record still being written, or a file without banners


def wants(wanted, cluster, proc):
    """Is job cluster.proc among `wanted` ({cluster: a set of procs, or None for all})?"""
    procs = wanted.get(cluster, ())
    return procs is None or proc in procs


def history_records(path, wanted, source="history"):
    """Records of the `wanted` jobs ({cluster: procs or None}) in one history or epoch
    file: one pass, whatever their number."""
    import classad2
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for banner, text in split_records(f):
            if not _banner_may_match(banner, wanted):
                continue
            ad = classad2.parseOne(text, classad2.ParserType.Old)
            if wants(wanted, _int(ad, "ClusterId"), _int(ad, "ProcId")):
                out.append(record_from_ad(ad, "epoch" if banner.get("epoch") else source,
                                          banner))
    return out


def _banner_may_match(banner, wanted):
    try:
        cluster = int(banner["ClusterId"]) if "ClusterId" in banner else None
        proc = int(banner["ProcId"]) if "ProcId" in banner else None
    except ValueError:
        return True
    if cluster is None:
        return True
    if cluster not in wanted:
        return False
    return proc is None or wants(wanted, cluster, proc)


# --- the source ---------------------------------------------------------------------------------

class CondorHistory(Source):
    name = "htcondor"

    def __init__(self, schedd="", history=(), event_logs=()):
        self.schedd, self.history, self.event_logs = schedd, list(history), list(event_logs)

    def lookup(self, job_id):
        """Every run of job_id HTCondor recorded, from every configured source, sorted by
        job, run and source (per-run sources first). Raises AccountingError when no source
        could be read, ValueError for an id that is not HTCondor's."""
        return self.lookup_many([job_id], strict=True)[job_id]

    def lookup_many(self, job_ids, strict=False):
        """{job id: lookup(job id)} of many jobs, each source read once (a history file in
        one pass, the schedd in one query). An id that is not HTCondor's has no records
        (strict: ValueError)."""
        asked, wanted = {}, {}
        for j in job_ids:
            try:
                asked[j] = cluster, proc, _gid = parse_job_id(str(j))
            except ValueError:
                if strict:
                    raise
                continue
            if proc is None or wanted.get(cluster, ()) is None:
                wanted[cluster] = None
            else:
                wanted.setdefault(cluster, set()).add(proc)
        out, errors = [], []
        for what, fetch in self._fetchers() if wanted else ():
            try:
                out += fetch(wanted)
            except Exception as e:   # bindings raise their own exception types
                errors.append(f"{what}: {e}")
        if errors and not out:
            raise AccountingError("; ".join(errors))
        out.sort(key=lambda r: (r.cluster or 0, r.proc or 0, r.run or 0,
                                SOURCE_ORDER.index(r.source)))
        result = {j: [] for j in job_ids}
        for j, (cluster, proc, gid) in asked.items():
            result[j] = [r for r in out if r.cluster == cluster and proc in (None, r.proc)
                         and (not gid or r.global_job_id in (None, gid))]
        return result

    def _fetchers(self):
        if self.schedd:
            yield f"schedd {self.schedd}", self._from_schedd
        for path in self.history:
            yield path, lambda w, path=path: history_records(path, w)
        for path in self.event_logs:
            yield path, lambda w, path=path: _eventlog(path, w)

    def _from_schedd(self, wanted):
        import htcondor2
        if self.schedd == "local":
            schedd = htcondor2.Schedd()
        else:
            ad = htcondor2.Collector().locate(htcondor2.DaemonType.Schedd, self.schedd)
            schedd = htcondor2.Schedd(ad)
        constraint = f"member(ClusterId, {{{', '.join(map(str, sorted(wanted)))}}})"
        out = [record_from_ad(ad, "schedd") for ad in schedd.history(constraint)]
        out += [record_from_ad(ad, "epoch") for ad in schedd.jobEpochHistory(constraint)]
        out += [record_from_ad(ad, "queue") for ad in schedd.query(constraint)]
        return [r for r in out if wants(wanted, r.cluster, r.proc)]


def _eventlog(path, wanted):
    from .condor_events import eventlog_records
    return eventlog_records(path, wanted)


def source(cfg, schedd=None, history=None, event_log=None):
    """The HTCondor source the site configuration ([condor] schedd, history, event_log)
    names, or None when it names none; arguments override it. history and event_log
    hold paths or glob patterns (rotated files: history*), separated by ':'."""
    c = cfg["condor"] if cfg is not None else {}
    schedd = c.get("schedd", "") if schedd is None else schedd
    history = _paths(c.get("history", "") if history is None else history)
    event_logs = _paths(c.get("event_log", "") if event_log is None else event_log)
    if not (schedd or history or event_logs):
        return None
    return CondorHistory(schedd, history, event_logs)


def pick(records, job, run=None):
    """The record of one run of `job` ("4711.0") to set beside jobmon's: that run's
    (None: the last one), from a per-run source where there is one."""
    mine = [r for r in records if r.job == job]
    if run is None and mine:
        run = max(r.run or 0 for r in mine)
    mine = [r for r in mine if (r.run or 0) == (run or 0)]
    return min(mine, key=lambda r: SOURCE_ORDER.index(r.source)) if mine else None


def _paths(spec):
    if not isinstance(spec, str):
        spec = os.pathsep.join(spec)
    out = []
    for pattern in filter(None, spec.split(os.pathsep)):
        out += sorted(glob.glob(pattern)) or [pattern]   # a missing file: its error later
    return out


# --- ClassAd values -----------------------------------------------------------------------------

def _number(ad, attr):
    if attr not in ad:
        return None
    try:
        v = ad.eval(attr)
    except Exception:
        return None
    if isinstance(v, bool):
        return int(v)
    return v if isinstance(v, (int, float)) else None


def _int(ad, attr):
    v = _number(ad, attr)
    return int(v) if v is not None else None


def _string(ad, attr):
    if attr not in ad:
        return None
    try:
        v = ad.eval(attr)
    except Exception:
        return None
    return v if isinstance(v, str) else None


def _time(ad, attr):
    v = _number(ad, attr)
    return float(v) if v is not None and v > 0 else None
