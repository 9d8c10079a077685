"""What HTCondor itself recorded about a job: from a schedd (htcondor2: its history, its
job epoch history and its queue), from history files (condor_history's, and job epoch
files), or from job event logs (condor_events.py).

Read side only (`jobmon query`): the bindings are imported when a lookup needs them. Each
Record (condor_records.py) describes one run of one job (ClusterId.ProcId) in jobmon's units;
condor_compare.compare() sets one beside jobmon's summary of the same run.

History files: records are separated by `*** ` banner lines (`*** Offset = ... ClusterId =
... ProcId = ...` after each record; epoch files: `*** EPOCH ClusterId=... RunInstanceId=...`).
classad2.parseAds would silently merge them, so the text is split on the banners first and
only the records whose banner names a wanted job are parsed.
"""
import glob
import os
import re

from jobmon.accounting import AccountingError, Source
from .condor_ends import _int, _number, _string, _time, only_vacate, run_end, vacated
from .condor_events import eventlog_records
from .condor_records import KiB, MiB, NUMBERS, Record, wants

STATUS = {1: "idle", 2: "running", 3: "removed", 4: "completed", 5: "held",
          6: "transferring_output", 7: "suspended"}
SOURCE_ORDER = ("epoch", "eventlog", "history", "schedd", "queue")   # per run first

_STRINGS = {"GlobalJobId": "global_job_id", "Owner": "owner", "RemoveReason": "remove_reason",
            "VacateReason": "vacate_reason"}


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
    for field, attr in (("hold_reason", "HoldReason"), ("hold_code", "HoldReasonCode"),
                        ("hold_subcode", "HoldReasonSubCode")):
        v = _string(ad, attr) if field == "hold_reason" else _int(ad, attr)
        if v is None:
            last = "Last" + attr
            v = _string(ad, last) if field == "hold_reason" else _int(ad, last)
        setattr(r, field, v)
    r.vacate_code = _int(ad, "VacateReasonCode")
    run_end(r, ad, source)
    if r.wall_seconds_all_runs is not None:
        good = (r.wall_seconds or 0) if r.status == "completed" else 0
        r.badput_seconds = max(r.wall_seconds_all_runs - good, 0)
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


def records_from_ad(ad, source, banner=None):
    """[record_from_ad()], and for a job's ad (history, schedd, queue) also the run before
    its last where the ad says how that one ended: its last vacate (LastVacateTime) fell
    between that run's start (JobLastStartDate) and the last run's (JobCurrentStartDate)."""
    last = record_from_ad(ad, source, banner)
    out = [last]
    t, since, until = (_time(ad, a) for a in ("LastVacateTime", "JobLastStartDate",
                                              "JobCurrentStartDate"))
    code, reason, subcode = (_int(ad, "VacateReasonCode"), _string(ad, "VacateReason"),
                             _int(ad, "VacateReasonSubCode"))
    if code is None:   # cleared by a release or a restart: the job's only vacate, if one
        code = only_vacate(ad)
        if code is not None and code == _int(ad, "LastHoldReasonCode"):
            reason, subcode = _string(ad, "LastHoldReason"), _int(ad, "LastHoldReasonSubCode")
    if source == "epoch" or (last.run or 0) < 2 or None in (t, since, until, code) or \
            not since <= t < until:
        return out
    prev = Record(source=source, job=last.job, cluster=last.cluster, proc=last.proc,
                  global_job_id=last.global_job_id, schedd=last.schedd, owner=last.owner,
                  run=last.run - 1, runs=last.run - 1, start_time=since, end_time=t,
                  wall_seconds=t - since, vacate_code=code, vacate_reason=reason)
    vacated(prev, subcode)
    return out + [prev]


# --- history files ----------------------------------------------------------------------------

BANNER = re.compile(r'(\w+)\s*=\s*("(?:[^"\\]|\\.)*"|\S+)')


def parse_banner(line):
    """`*** Offset = 0 ClusterId = 4711 ...` or `*** EPOCH ClusterId=1 ...` -> {key: text},
    plus "epoch": True for an epoch record, "spawn": True for HTCondor 25's SPAWN record
    (written as a run starts: its ids, no run count, no end)."""
    out = {k: v.strip('"') for k, v in BANNER.findall(line[3:])}
    kind = line[4:].lstrip()
    out["epoch"], out["spawn"] = kind.startswith("EPOCH"), kind.startswith("SPAWN")
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


def history_records(path, wanted, source="history"):
    """Records of the `wanted` jobs ({cluster: procs or None}) in one history or epoch
    file: one pass, whatever their number."""
    import classad2
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for banner, text in split_records(f):
            if not _banner_may_match(banner, wanted) or banner.get("spawn"):
                continue   # a SPAWN ad (HTCondor 25) only says a run began
            ad = classad2.parseOne(text, classad2.ParserType.Old)
            if wants(wanted, _int(ad, "ClusterId"), _int(ad, "ProcId")):
                out += records_from_ad(ad, "epoch" if banner.get("epoch") else source,
                                       banner)
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
            yield path, lambda w, path=path: eventlog_records(path, w)

    def _from_schedd(self, wanted):
        import htcondor2
        if self.schedd == "local":
            schedd = htcondor2.Schedd()
        else:
            ad = htcondor2.Collector().locate(htcondor2.DaemonType.Schedd, self.schedd)
            schedd = htcondor2.Schedd(ad)
        constraint = f"member(ClusterId, {{{', '.join(map(str, sorted(wanted)))}}})"
        out = [r for ad in schedd.history(constraint) for r in records_from_ad(ad, "schedd")]
        out += [record_from_ad(ad, "epoch") for ad in schedd.jobEpochHistory(constraint)
                if _string(ad, "EpochAdType") in (None, "EPOCH")]
        out += [r for ad in schedd.query(constraint) for r in records_from_ad(ad, "queue")]
        return [r for r in out if wants(wanted, r.cluster, r.proc)]


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
    # one source may hold a run twice (an epoch ad written at the job's exit, then again
    # when a policy held it): the one that says more about its end
    return min(mine, key=lambda r: (SOURCE_ORDER.index(r.source), _ENDS.index(r.status)
                                    if r.status in _ENDS else len(_ENDS))) if mine else None


_ENDS = ("held", "removed", "evicted", "completed")


def _paths(spec):
    if not isinstance(spec, str):
        spec = os.pathsep.join(spec)
    out = []
    for pattern in filter(None, spec.split(os.pathsep)):
        out += sorted(glob.glob(pattern)) or [pattern]   # a missing file: its error later
    return out
