"""Right-sizing of job arrays and batches: the distribution of peak memory and CPU over a
batch's tasks, and a concrete request that fits them ("request 2.5 GiB: covers 99 % of the
tasks' peaks").

A batch is the jobs one submission made, by one user (jobmon.summary.batches.batch_of). A task
is one job id: its peak is the largest over its runs and nodes, its CPU the most cores it
kept busy on average in a run. A step's record (12345_7.batch, tag parent_job) is no task:
its job's own record holds it. The peak is the one that sizes a job
(jobmon.summary.efficiency.sizing_peak): the resident peak where jobmon reaped the job, else the
kernel's exact one (page cache included); a batch with sampled peaks says so.

Read side, standard library only.
"""
import math

from ..summary.batches import batch_of
from ..summary.efficiency import RESIDENT, KERNEL, SAMPLED
from ..printable import size
from . import job_efficiency
from .distribution import quantile
from .runs import is_step

MiB, GiB = 1 << 20, 1 << 30
DEFAULTS = {
    "rightsize_coverage_percent": 99.0,   # share of the tasks the suggestion must fit
    "rightsize_headroom_percent": 10.0,   # added to the covered peak before rounding up
    "rightsize_min_tasks": 3,             # smaller batches get no suggestion
}
CORE_SLACK = 0.05   # a task averaging 2.04 cores fits 2 cores (it would run ~2 % slower)
def covering(values, coverage):
    """The smallest of `values` that at least `coverage` (0..1) of them do not exceed
    (nearest rank: sorted x[ceil(coverage * n) - 1])."""
    xs = sorted(values)
    return xs[max(math.ceil(coverage * len(xs) - 1e-9), 1) - 1]


def round_memory(nbytes):
    """Up to a request people write: 64 MiB steps below 1 GiB, 0.1 GiB below 10 GiB,
    0.5 GiB below 100 GiB, whole GiB above."""
    step = 64 * MiB if nbytes < GiB else GiB / 10 if nbytes < 10 * GiB else \
        GiB / 2 if nbytes < 100 * GiB else GiB
    return int(math.ceil(nbytes / step - 1e-9) * step)


def memory_text(nbytes):
    """'2.5 GiB', '2 GiB' or '384 MiB' for a rounded request."""
    return size(nbytes, short=True)


def _stats(values):
    xs = sorted(values)
    return {"n": len(xs), "p10": quantile(xs, 0.1), "p50": quantile(xs, 0.5),
            "p90": quantile(xs, 0.9), "max": xs[-1] if xs else None}


def _common(values):
    """The value most tasks share (ties: the largest), None when none is known."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    return max(set(known), key=lambda v: (known.count(v), v))


def tasks_of(records):
    """{(user, kind, name): {job id: task}} of the ended records that belong to a batch;
    a task: peak memory, cores used, and what it requested."""
    out = {}
    for rec in records:
        s = rec.get("summary")
        b = batch_of(rec)
        if not s or b is None or is_step(rec):
            continue
        tasks = out.setdefault((rec.get("user") or "", *b), {})
        t = tasks.setdefault(str(rec.get("job")), {"peak": None, "basis": None, "cores": None,
                                                   "mem_req": None, "cores_req": None})
        alloc = job_efficiency.figures_of(rec)
        wall = s.get("wall_seconds") or 0
        cores = ((s.get("cpu_user_seconds") or 0) + (s.get("cpu_system_seconds") or 0)) / wall \
            if wall > 0 else None
        peak, basis = alloc.get("mem_sizing_peak_bytes"), alloc.get("mem_sizing_basis")
        if peak is not None:
            t["peak"] = max(t["peak"] or 0, peak)
            t["basis"] = weakest(t["basis"], basis)
        if cores is not None:
            t["cores"] = max(t["cores"] or 0.0, cores)
        t["mem_req"] = alloc["mem_requested_bytes"] or t["mem_req"]
        t["cores_req"] = alloc["cores_requested"] or t["cores_req"]
    return out


# what a batch's peaks are, the least certain first: one sampled peak makes them all
# "may have missed a spike"
_BASIS_ORDER = (SAMPLED, KERNEL, RESIDENT)
_BASIS_NOTE = {SAMPLED: " (sampled peaks: a spike between samples may be missed)",
               KERNEL: " (the kernel's peaks, page cache included)", RESIDENT: ""}


def weakest(a, b):
    """The less certain of two peaks' bases (None: neither known)."""
    known = [x for x in (a, b) if x in _BASIS_ORDER]
    return min(known, key=_BASIS_ORDER.index) if known else None


def suggest(tasks, limits=None):
    """The right-sizing of one batch's tasks ([task] as tasks_of makes them)."""
    lim = dict(DEFAULTS, **(limits or {}))
    coverage = min(lim["rightsize_coverage_percent"] / 100.0, 1.0)
    peaks = [t["peak"] for t in tasks if t["peak"] is not None]
    cores = [t["cores"] for t in tasks if t["cores"] is not None]
    out = {"tasks": len(tasks), "peak_memory_bytes": _stats(peaks), "cores_used": _stats(cores),
           "mem_requested_bytes": _common([t["mem_req"] for t in tasks]),
           "cores_requested": _common([t["cores_req"] for t in tasks]),
           "peak_basis": None, "memory_bytes": None, "memory_covers_percent": None,
           "cores": None, "cores_cover_percent": None, "advice": []}
    if len(tasks) < lim["rightsize_min_tasks"]:
        return out
    for t in tasks:
        out["peak_basis"] = weakest(out["peak_basis"], t.get("basis"))
    if peaks:
        need = covering(peaks, coverage) * (1 + lim["rightsize_headroom_percent"] / 100.0)
        mem = round_memory(need)
        out["memory_bytes"] = mem
        out["memory_covers_percent"] = 100.0 * sum(p <= mem for p in peaks) / len(peaks)
        out["advice"].append(f"request {memory_text(mem)}: covers "
                             f"{math.floor(out['memory_covers_percent'])} % of the tasks' peaks"
                             + _BASIS_NOTE.get(out["peak_basis"], "")
                             + _against(out["mem_requested_bytes"], mem, memory_text))
    if cores:
        n = max(1, math.ceil(covering(cores, coverage) - CORE_SLACK))
        out["cores"] = n
        out["cores_cover_percent"] = 100.0 * sum(c <= n + CORE_SLACK for c in cores) / len(cores)
        out["advice"].append(f"request {n} core{'s' if n > 1 else ''}: covers "
                             f"{math.floor(out['cores_cover_percent'])} % of the tasks' "
                             f"average CPU use" + _against(out["cores_requested"], n,
                                                           lambda c: f"{c:g}"))
    return out


def _against(requested, suggested, text):
    if requested is None:
        return ""
    return " (as requested)" if text(requested) == text(suggested) else \
        f" (requested {text(requested)})"


def _larger(a, b):
    return b if a is None else a if b is None else max(a, b)


def merge_tasks(into, other):
    """Adds the tasks of `other` ({batch: {job id: task}}, of later runs) into `into`: a
    task's peak and cores are its largest, its requests the latest known."""
    for batch, tasks in other.items():
        mine = into.setdefault(batch, {})
        for job, t in tasks.items():
            m = mine.get(job)
            if m is None:
                mine[job] = dict(t)
                continue
            if t["peak"] is not None:
                m["peak"], m["basis"] = _larger(m["peak"], t["peak"]), weakest(m["basis"],
                                                                               t["basis"])
            m["cores"] = _larger(m["cores"], t["cores"])
            m["mem_req"] = t["mem_req"] or m["mem_req"]
            m["cores_req"] = t["cores_req"] or m["cores_req"]
    return into


def suggestions(tasks_by_batch, limits=None, top=None):
    """Every batch of {(user, kind, name): {job id: task}} with its tasks' distributions
    and suggestion, the largest batches first."""
    out = []
    for (user, kind, name), tasks in tasks_by_batch.items():
        out.append(dict(suggest(list(tasks.values()), limits), user=user, kind=kind,
                        name=name))
    out.sort(key=lambda b: (-b["tasks"], b["user"], b["kind"], b["name"]))
    return out[:top] if top else out


def rightsize(records, limits=None, top=None):
    """suggestions() for the batches of `records`."""
    return suggestions(tasks_of(records), limits, top)
