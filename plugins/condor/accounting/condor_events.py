"""HTCondor's job event log as jobmon records: one per run of a job, from its execute event
to the event that ended it (terminated, evicted, ...), read with htcondor2.JobEventLog
(offline, no daemon). Event times are the writer's local time, as the bindings read them.
"""
import re

from .condor_records import KiB, MiB, NUMBERS, Record, wants

USAGE = re.compile(r"Usr (\d+) (\d+):(\d+):(\d+), Sys (\d+) (\d+):(\d+):(\d+)")


def usage_seconds(text):
    """'Usr 0 00:56:52, Sys 0 00:01:01' -> (3412.0, 61.0)."""
    m = USAGE.search(text or "")
    if not m:
        return None, None
    d = [int(x) for x in m.groups()]
    return (float(d[0] * 86400 + d[1] * 3600 + d[2] * 60 + d[3]),
            float(d[4] * 86400 + d[5] * 3600 + d[6] * 60 + d[7]))


def eventlog_records(path, wanted):
    """One record per run (execute event to eviction, termination, ...) of the `wanted`
    jobs ({cluster: a set of procs, or None for all}) in a job event log."""
    import htcondor2
    runs, last, out = {}, {}, []
    for ev in htcondor2.JobEventLog(path).events(stop_after=0):
        if not wants(wanted, ev.cluster, ev.proc):
            continue
        key, t, e = (ev.cluster, ev.proc), int(ev.type), dict(ev.items())
        r = runs.get(key)
        if t == 1:   # execute: a run begins
            n = (last[key].run if key in last else 0) + 1
            r = runs[key] = last[key] = Record(
                source="eventlog", cluster=ev.cluster, proc=ev.proc, job=f"{ev.cluster}.{ev.proc}",
                run=n, runs=n, status="running", start_time=float(ev.timestamp),
                host=e.get("SlotName"))
            props = e.get("ExecuteProps")
            if props is not None:
                _set_provisioned(r, props)
            out.append(r)
        elif t == 6 and r is not None:   # image size: HTCondor's polled memory
            r.rss_bytes = max(r.rss_bytes or 0, (e.get("ResidentSetSize") or 0) * KiB)
            r.memory_usage_bytes = max(r.memory_usage_bytes or 0, (e.get("MemoryUsage") or 0) * MiB)
        elif t in (2, 4, 5, 7, 24) and r is not None:   # the run ends
            _end_run(r, t, e, ev.timestamp)
            runs.pop(key)
        elif t == 12 and key in last:   # held: before the run's eviction (the schedd
            h = last[key]                # writes it at once, the shadow the run's end after
            if h.status == "running":    # the vacate time; an exec failure's hold comes
                h.status = "held"        # with no eviction at all), or right after it (its
                h.end_time = float(ev.timestamp)   # code said so), or while idle (not
                h.wall_seconds = h.end_time - h.start_time   # this run's end)
            if h.status == "held":
                h.hold_reason, h.hold_code = e.get("HoldReason"), e.get("HoldReasonCode")
                h.hold_subcode = e.get("HoldReasonSubCode")
        elif t == 9 and key in last:   # aborted: removed (likewise)
            a = last[key]
            if a.status == "running":
                a.status = "removed"
            a.remove_reason = e.get("Reason")
    return out


def _end_run(r, t, e, timestamp):
    r.end_time = float(timestamp)
    r.wall_seconds = r.end_time - r.start_time
    r.cpu_user_seconds, r.cpu_system_seconds = usage_seconds(e.get("RunRemoteUsage"))
    if t == 5:
        r.status = "completed"
        if e.get("TerminatedNormally"):
            r.exit_code = e.get("ReturnValue")
        else:
            r.signal = e.get("TerminatedBySignal")
        if e.get("TimeExecuteUsage") is not None:
            r.execute_seconds = float(e["TimeExecuteUsage"])
        r.cpus_usage = e.get("CpusUsage")
        if e.get("MemoryUsage") is not None:
            r.memory_usage_bytes = e["MemoryUsage"] * MiB
        if e.get("DiskUsage") is not None:
            r.disk_usage_bytes = e["DiskUsage"] * KiB
        for attr, (field, scale) in NUMBERS.items():
            if attr.startswith("Request") and e.get(attr) is not None:
                setattr(r, field, e[attr] * scale)
        _set_provisioned(r, e)
    else:   # held or removed before this event said so (above); else the code says it
        r.vacate_reason, r.vacate_code = e.get("Reason"), e.get("ReasonCode")
        code = r.vacate_code
        if r.status not in ("held", "removed"):
            r.status = "held" if isinstance(code, int) and 0 < code < 1000 else \
                "removed" if code == 1023 else "evicted"
        if r.status == "held" and r.hold_code is None:
            r.hold_code, r.hold_reason = code, r.vacate_reason
            r.hold_subcode = e.get("ReasonSubCode")
        if r.status == "removed" and r.remove_reason is None:
            r.remove_reason = r.vacate_reason


def _set_provisioned(r, ad):
    for attr, field, scale in (("Cpus", "cpus_provisioned", 1), ("GPUs", "gpus_provisioned", 1),
                               ("Memory", "memory_provisioned_bytes", MiB),
                               ("Disk", "disk_provisioned_bytes", KiB)):
        v = ad.get(attr)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            setattr(r, field, v * scale)
