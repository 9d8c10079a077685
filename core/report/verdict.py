"""The verdict a job's report opens with: the cores it used of those it was given, its
memory peak of what it was given, how it ended and why, and the most useful advice written
in the job's own submit syntax (its scheduler's, which its object writes: request_line;
`jobmon run`'s tags). A model, no rendering: it only picks from and rewrites the report's
figures and the advice jobmon.summary.advice gave. Read side, standard library only."""
from .. import schedulers
from ..schedulers.interface import whole_memory
from ..summary.efficiency import KERNEL, RESIDENT, SAMPLED

# the peak that sizes the job, named short (the memory table below says what each is)
PEAK_NAME = {RESIDENT: "resident peak", KERNEL: "kernel peak", SAMPLED: "sampled peak"}
# which advice the verdict names: what keeps the next run from failing first, then the
# largest waste, then the rest; a rule not named here comes after these, in its order
# (data_incomplete last: the verdict's data line says as much)
FIRST = ("oom_killed", "memory_near_limit", "memory_thrashing", "cpu_oversubscribed",
         "gpu_idle", "cpu_underused", "memory_overrequested", "one_node_busy",
         "killed_at_end", "io_bound", "stalled", "memory_leak", "cpu_contended",
         "no_allocation", "short_job", "data_incomplete")


# how a `jobmon run` job asks for a resource (its tags): cores, memory (bytes), GPUs; a
# scheduler's job asks in its own syntax (its object's request_line)
LOCAL = {"cores": lambda n: f"--tag request_cpus={n}",
         "memory_bytes": lambda b: "--tag request_memory=" + whole_memory(b, ("GiB", "MiB")),
         "gpus": lambda n: f"--tag request_gpus={n}"}


def submit_syntax(scheduler, ask):
    """What `ask` ({"cores": N}, {"memory_bytes": B}, {"gpus": N}) reads as in the job's
    own submit syntax: its scheduler's (a submit file's line, a batch script's), else
    `jobmon run`'s tags; one statement a resource."""
    sched = schedulers.find(scheduler)
    line = sched.request_line if sched else lambda k, n: LOCAL[k](n) if k in LOCAL else None
    lines = [line(k, int(v)) for k, v in (ask or {}).items() if k in LOCAL and v is not None]
    return [x for x in lines if x is not None]


def pick(advice):
    """The most useful piece of advice (FIRST), or None."""
    if not advice:
        return None
    order = {rule: i for i, rule in enumerate(FIRST)}
    return min(advice, key=lambda a: (order.get(a["rule"], len(FIRST)), advice.index(a)))


def build(s, eff, advice, header, state, nodes=1):
    """{"outcome": {"state", "text"}, "cores": {"used", "given", "percent"},
    "memory": {"peak", "peak_name", "given", "percent"}, "advice": {"rule", "text",
    "submit": [statements], "more": N} or None}; a figure nobody stated is None. A run on
    several nodes: its cores against the job's, its memory its largest node's peak (no
    one figure of the nodes' is measured against the job's memory)."""
    wall = s.get("wall_seconds") or 0
    cpu = (s.get("cpu_user_seconds") or 0) + (s.get("cpu_system_seconds") or 0)
    cores = eff.get("cores_allocated")
    used = cpu / wall if wall else None
    peak = eff.get("mem_sizing_peak_bytes") or s.get("rss_peak_bytes")
    mem = eff.get("mem_allocated_bytes") or eff.get("mem_requested_bytes")
    name = PEAK_NAME.get(eff.get("mem_sizing_basis"), "peak") \
        if eff.get("mem_sizing_peak_bytes") else "resident peak"
    if nodes > 1:
        name, mem = name + " of its largest node", None
    if state == "running":
        outcome = {"state": "running", "text": "figures up to its latest sample"}
    elif eff.get("outcome") or s.get("outcome"):
        outcome = {"state": eff.get("outcome") or s.get("outcome"),
                   "text": eff.get("outcome_reason") or s.get("outcome_reason") or
                   header.get("status")}
    else:
        outcome = {"state": "ended", "text": header.get("status")}
    if s.get("cut_short"):
        outcome["text"] = f"{outcome['text']}; cut short: figures up to its last sample"
    best = pick(advice)
    reasons = [r for r in str(s.get("completeness_reasons") or "").split("; ") if r]
    return {
        "outcome": outcome, "wall_seconds": wall or None,
        "data": {"percent": s.get("completeness_percent"), "reasons": reasons},
        "cores": {"used": used, "given": cores,
                  "percent": 100 * used / cores if used is not None and cores else None},
        "memory": {"peak": peak, "given": mem, "peak_name": name, "nodes": nodes,
                   "percent": 100 * peak / mem if peak and mem else None},
        "advice": None if best is None else {
            "rule": best["rule"], "text": best["text"], "more": len(advice) - 1,
            "submit": submit_syntax(header.get("scheduler"), best.get("ask"))},
    }
