"""`sacct --json` documents -> Records. Slurm 22.05 writes openapi/dbv0.0.38; later
releases wrap numbers as {"set", "infinite", "number"} and states as lists: both read.
Read side only."""
from .sacct_parse import job_value
from .sacct_records import Record, Step, aggregate, number_runs


def _n(v):
    """A JSON number, whichever shape this Slurm writes it in ({"set", "number"} since
    23.02's data_parser, plain before); None when unset."""
    if isinstance(v, dict):
        if not v.get("set", True) or v.get("infinite"):
            return None
        v = v.get("number")
    return v


def _usec(t):
    """{"seconds", "microseconds"} -> seconds (22.05 leaves microseconds > 1e6)."""
    if not isinstance(t, dict):
        return _n(t)
    return (_n(t.get("seconds")) or 0) + (_n(t.get("microseconds")) or 0) / 1e6


def _tres_count(items, kind, name=None):
    for t in items or []:
        if t.get("type") == kind and (name is None or t.get("name") == name):
            return _n(t.get("count")), t
    return None, None


def _state(s):
    cur = s.get("current") if isinstance(s, dict) else s
    if isinstance(cur, list):
        cur = cur[0] if cur else None
    return cur


def _exit(e):
    """(exit code, signal) of a JSON exit_code object."""
    if not isinstance(e, dict):
        return None, None
    status = e.get("status")
    status = status[0] if isinstance(status, list) and status else status
    sig = _n((e.get("signal") or {}).get("id", (e.get("signal") or {}).get("signal_id")))
    if status == "SIGNALED" and sig:
        return None, sig
    return _n(e.get("return_code")), None


def step_from_json(s):
    t = s.get("time") or {}
    tres = s.get("tres") or {}
    req = tres.get("requested") or {}
    rss, rss_item = _tres_count(req.get("max"), "mem")
    vm, _ = _tres_count(req.get("max"), "vmem")
    rd, _ = _tres_count(req.get("total"), "fs", "disk")
    wr, _ = _tres_count((tres.get("consumed") or {}).get("total"), "fs", "disk")
    code, sig = _exit(s.get("exit_code"))
    user, system = _usec(t.get("user")), _usec(t.get("system"))
    step = s.get("step") or {}
    sid = step.get("id")
    if isinstance(sid, dict):          # 23.02+: {"job_id", "step_id": "batch", ...}
        sid = sid.get("step_id")
    return Step(step=str(sid).split(".")[-1] if sid is not None else None,
                name=step.get("name"), state=_state(s.get("state")), exit_code=code,
                signal=sig, start_time=_n(t.get("start")), end_time=_n(t.get("end")),
                elapsed_seconds=_n(t.get("elapsed")), cpu_user_seconds=user,
                cpu_system_seconds=system,
                cpu_seconds=None if user is None else round(user + (system or 0), 6),
                max_rss_bytes=rss, max_rss_task=rss_item and rss_item.get("task"),
                max_rss_node=rss_item and rss_item.get("node"), max_vmsize_bytes=vm,
                read_bytes=rd, write_bytes=wr, ntasks=_n((s.get("tasks") or {}).get("count")),
                nodes=(s.get("nodes") or {}).get("range"))


def record_from_json(j):
    arr, het = j.get("array") or {}, j.get("het") or {}
    t = j.get("time") or {}
    alloc = {}
    for item in (j.get("tres") or {}).get("allocated") or []:
        key = item.get("type") + (f"/{item['name']}" if item.get("name") else "")
        alloc[key] = _n(item.get("count"))
    if alloc.get("mem") is not None:
        alloc["mem"] = alloc["mem"] << 20           # MB in the JSON
    state = _state(j.get("state"))
    code, sig = _exit(j.get("exit_code"))
    limit = _n(t.get("limit"))
    r = Record(job_id_raw=str(j.get("job_id")), name=j.get("name"), user=j.get("user"),
               account=j.get("account"), partition=j.get("partition") or None,
               qos=j.get("qos"), cluster=j.get("cluster"), nodes=j.get("nodes"),
               num_nodes=_n(j.get("allocation_nodes")), state=state, exit_code=code,
               signal=sig, submit_time=_n(t.get("submission")), start_time=_n(t.get("start")),
               end_time=_n(t.get("end")), elapsed_seconds=_n(t.get("elapsed")),
               timelimit_seconds=None if limit is None else limit * 60,
               req_cpus=_n((j.get("required") or {}).get("CPUs")),
               alloc_cpus=alloc.get("cpu"), alloc_mem_bytes=alloc.get("mem"),
               alloc_gpus=alloc.get("gres/gpu"), alloc_tres=alloc or None,
               source="sacct-json",
               steps=[step_from_json(s) for s in j.get("steps") or []])
    mem = _n((j.get("required") or {}).get("memory"))
    r.req_mem_bytes = None if mem is None else mem << 20
    if _n(arr.get("job_id")) and _n(arr.get("task_id")) is not None:
        r.array_job_id, r.array_task_id = str(_n(arr["job_id"])), str(_n(arr["task_id"]))
    if _n(het.get("job_id")) and _n(het.get("job_offset")) is not None:
        r.het_job_id, r.het_job_offset = str(_n(het["job_id"])), str(_n(het["job_offset"]))
    r.job = job_value(r.job_id_raw, r.array_job_id, r.array_task_id, r.het_job_id,
                      r.het_job_offset)
    r.partial = r.name == "allocation" and not r.partition
    if state == "CANCELLED" and j.get("kill_request_user"):
        r.cancelled_by = str(j["kill_request_user"])
    return aggregate(r)


def records_from_json(doc):
    return number_runs([record_from_json(j) for j in doc.get("jobs") or []])
