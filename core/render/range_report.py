"""`jobmon report` over a time range: the terminal layout (readable at 80 columns; a job id
is never cut), JSON (the whole model) and CSV (one row per group).

Gets the model jobmon.report.aggregate builds (with "batches" from jobmon.report.rightsize);
never queries.
"""
import csv
import io
import json

from ..printable import clean, fixed, significant, size as _size
from .units import when as _when

# CSV columns: a group's key and counts, its efficiency quantiles, its sums
CSV_COLUMNS = ("by", "key", "jobs", "goodput", "badput", "unknown", "unconfirmed", "local",
               "suspects",
               "cpu_efficiency_p10", "cpu_efficiency_p50", "cpu_efficiency_p90",
               "mem_efficiency_p10", "mem_efficiency_p50", "mem_efficiency_p90",
               "wall_hours", "provisioned_core_hours", "used_core_hours", "idle_core_hours",
               "idle_canonical_core_hours", "gpu_hours", "idle_gpu_hours", "energy_jobs",
               "energy_kwh", "co2e_kg", "energy_error_kwh", "co2e_error_kg",
               "energy_unbounded_jobs")


def to_json(model):
    return json.dumps(model, indent=2, sort_keys=True, default=str)


def to_csv(model, for_terminal=False):
    """One row per group, then the row of all jobs (key "all"); for_terminal: every
    text cleaned (jobmon.printable)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for g in model["groups"] + [model["total"]]:
        row = dict(g, by=model["by"])
        for what in ("cpu", "mem"):
            d = g[f"{what}_efficiency_percent"]
            for q in ("p10", "p50", "p90"):
                row[f"{what}_efficiency_{q}"] = _round(d[q])
        cells = [_round(row.get(c)) for c in CSV_COLUMNS]
        w.writerow([clean(c) if for_terminal and isinstance(c, str) else c for c in cells])
    return buf.getvalue()


def _round(v):
    return round(v, 4) if isinstance(v, float) else ("" if v is None else v)


def when(ts):
    return "…" if ts is None else _when(ts, "%Y-%m-%d %H:%M")


def hours(h):
    if h is None:
        return "-"
    return fixed(h, ",.0f" if h >= 1000 else ".1f" if h >= 10 else ".2f")


def percents(dist):
    """'p10/p50/p90' of a distribution, whole percent; '-' for none."""
    if not dist["n"]:
        return "-"
    return "/".join(fixed(dist[q], ".0f") for q in ("p10", "p50", "p90"))


def size(nbytes):
    return "-" if nbytes is None else _size(nbytes, short=True)


def allocated(row):
    """'8c 32.0G 1g': cores, memory and GPUs the job was given ('?' unknown)."""
    parts = [f"{row['cores_allocated']:g}c" if row.get("cores_allocated") else "?c",
             size(row.get("mem_allocated_bytes")) if row.get("mem_allocated_bytes") else "?"]
    if row.get("gpus_allocated"):
        parts.append(f"{row['gpus_allocated']:g}g")
    return " ".join(parts)


def show(model, console=None):
    from rich.console import Console
    from .short_ids import Ids
    console = console or Console()
    ids = Ids()     # the job ids the tables shorten, in full at the end
    _header(model, console)
    _claims(model, console, ids)
    _actions(model.get("actions"), console, ids)
    if model["jobs"]:
        _groups(model, console)
        _wasters(model, console, ids)
        _suspects(model, console, ids)
        _batches(model, console)
    for line in ids.legend(console.width):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _header(model, console):
    from .terminal import esc
    t = model["total"]
    console.print(f"[bold]{model['jobs']:,} job runs[/bold] started {when(model['since'])} "
                  f"– {when(model['until'])}, by {esc(model['by'])}")
    if model["running"]:
        console.print(f"({model['running']} still running, not counted)")
    if not model["jobs"]:
        console.print("no ended job in this range (see --since, --until, --user)")
        return
    console.print(f"goodput {t['goodput']:,} · badput {t['badput']:,}"
                  + (f" · unknown {t['unknown']:,}" if t["unknown"] else "")
                  + f" · idle {hours(t['idle_canonical_core_hours'])} canonical core-h"
                  + (f" · idle {hours(t['idle_gpu_hours'])} of {hours(t['gpu_hours'])} GPU-h"
                     if t["gpu_hours"] else "")
                  + f" · {model['suspect_count']} suspects")
    if t["unconfirmed"]:
        console.print(f"({t['unconfirmed']:,} counted unconfirmed: the scheduler has not "
                      "said whose job they are yet)")
    if t.get("incomplete"):
        console.print(f"({t['incomplete']:,} of them with data covering too little of the run "
                      "for advice: their figures are counted, their advice withheld)")
    if t.get("energy_jobs"):
        console.print(f"energy {significant(t['energy_kwh'])}{_pm(t, 'energy_error_kwh')} kWh "
                      f"(GPUs' counters, CPU and DRAM apportioned: docs/energy.md), "
                      f"{t['energy_jobs']:,} of {t['jobs']:,} job runs measured"
                      + (f" · {significant(t['co2e_kg'])}{_pm(t, 'co2e_error_kg')} kgCO2e "
                         "(estimated)" if t["co2e_kg"] else ""))
        console.print(BOUNDS_SAID + (
            f"; {t['energy_unbounded_jobs']:,} of the runs have no bound (recorded before "
            "jobmon gave one): their error is in no ±" if t.get("energy_unbounded_jobs")
            else ""))


# how `jobmon report` adds up the runs' energy bounds (docs/energy.md, "Its bound")
BOUNDS_SAID = ("± the sum of the runs' bounds, a worst case (their errors may cancel); "
               "it covers timing, not the model that shares a node's CPU and DRAM energy "
               "by CPU time, which the data cannot bound")


def _pm(g, key):
    """" ± bound" of a group's sum, where there is one."""
    return f" ± {significant(g[key])}" if g.get(key) else ""




def _claims(model, console, ids):
    """Runs under a job id the scheduler says is another user's: counted nowhere."""
    from .terminal import esc
    rows = model.get("claims") or []
    if not rows:
        return
    t = _table(f"claims by other users, not counted ({model['claim_count']}"
               + (f", {len(rows)} shown" if model["claim_count"] > len(rows) else "") + ")")
    _job_column(t, rows, ids)
    t.add_column("user", overflow="fold")
    t.add_column("why", overflow="fold")
    for r in rows:
        t.add_row(esc(ids(r["job"])), esc(r["user"]), esc(r["why"]))
    console.print(t)


def _actions(acted, console, ids):
    """`jobmon act`'s warnings and actions in the range (docs/actions.md)."""
    from .terminal import esc
    if not acted or not (acted["warnings"] or acted["actions"] or acted["dry_runs"]):
        return
    console.print(f"idle allocations: {acted['warnings']} warned, {acted['actions']} held "
                  "or cancelled" + (f" ({acted['failed']} failed)" if acted["failed"] else "")
                  + (f"; dry runs: {acted['dry_runs']}" if acted["dry_runs"] else ""))
    if not acted["latest"]:
        return
    t = _table("latest warnings and actions (jobmon act)")
    t.add_column("when")
    _job_column(t, acted["latest"], ids)
    for name in ("user", "action", "outcome"):
        t.add_column(name, overflow="fold")
    for a in acted["latest"]:
        t.add_row(when(a["time"] / 1e9), esc(ids(a["job"])), esc(a["user"]), esc(a["action"]),
                  esc(a["outcome"]))
    console.print(t)


def _table(title):
    from .terminal import compact_table
    return compact_table(title)


def _groups(model, console):
    from .terminal import esc
    t = _table(f"by {model['by']}: CPU and memory efficiency %% (p10/p50/p90), idle hours"
               .replace("%%", "%"))
    t.add_column(model["by"], overflow="fold")
    for name in ("jobs", "good", "bad"):
        t.add_column(name, justify="right")
    t.add_column("CPU %", justify="right", no_wrap=True)
    t.add_column("mem %", justify="right", no_wrap=True)
    t.add_column("idle\ncore-h*", justify="right")
    t.add_column("idle\nGPU-h", justify="right")
    t.add_column("sus-\npects", justify="right")
    energy = bool(model["total"].get("energy_jobs"))      # a site with node readers
    if energy:
        t.add_column("energy\nkWh", justify="right")
        t.add_column("CO2e\nkg", justify="right")
    for g in model["groups"] + ([model["total"]] if len(model["groups"]) > 1 else []):
        cells = [esc(g["key"]), f"{g['jobs']:,}", f"{g['goodput']:,}",
                 f"{g['badput']:,}", percents(g["cpu_efficiency_percent"]),
                 percents(g["mem_efficiency_percent"]), hours(g["idle_canonical_core_hours"]),
                 hours(g["idle_gpu_hours"]) if g["gpu_hours"] else "-", str(g["suspects"])]
        if energy:
            cells += [significant(g["energy_kwh"]) + _pm(g, "energy_error_kwh")
                      if g["energy_jobs"] else "-",
                      significant(g["co2e_kg"]) + _pm(g, "co2e_error_kg")
                      if g["co2e_kg"] else "-"]
        t.add_row(*cells, style="bold" if g is model["total"] else None)
    console.print(t)
    console.print("* canonical core-hours: 1 core + 2 GiB each, whole units only (OSG)")


def _job_column(t, rows, ids):
    """The job id column: as wide as the longest id as shown (a long one shortened,
    jobmon.render.short_ids), never wrapped or cut."""
    width = max([len(ids(r["job"])) for r in rows] + [3])
    t.add_column("job", no_wrap=True, min_width=width, overflow="ignore")


def _wasters(model, console, ids):
    """The top wasters: the GPU and held-idle columns only where a row has them, so that
    the table fits 80 columns."""
    from .terminal import esc
    rows = model["top_wasters"]
    if not rows:
        return
    gpus = any(r.get("gpu_hours") or r.get("idle_gpu_hours") for r in rows)
    held = any(held_idle(r) != "-" for r in rows)
    t = _table("top wasters: idle canonical core-hours + idle GPU-hours")
    _job_column(t, rows, ids)
    t.add_column("user", overflow="fold", min_width=min(8, max(len(r["user"]) for r in rows)))
    t.add_column("given", no_wrap=True)
    t.add_column("CPU/mem\n%", justify="right", no_wrap=True)
    t.add_column("idle\ncore-h*", justify="right", no_wrap=True)
    if gpus:
        t.add_column("idle\nGPU-h", justify="right", no_wrap=True)
    if held:
        t.add_column("held idle", overflow="fold")
    t.add_column("outcome", overflow="fold")
    for r in rows:
        cells = [esc(ids(r["job"])), esc(r["user"]), allocated(r),
                 f"{_pct(r['cpu_efficiency_percent'])}/{_pct(r['mem_efficiency_percent'])}",
                 hours(r["idle_canonical_core_hours"])]
        cells += [hours(r["idle_gpu_hours"])] if gpus else []
        cells += [held_idle(r)] if held else []
        t.add_row(*cells, esc(r["outcome"] or "-"))
    console.print(t)


def held_idle(r):
    """"idle cores 12m, GPUs 1h05m": the allocations a run held idle at a stretch past the
    site's idle_allocation_seconds, each its longest stretch; "-" for none."""
    from .live import duration
    flagged = (r.get("idle_allocation") or "").split(",")
    parts = [f"{name} {duration(r.get(field))}" for kind, name, field in (
        ("cores", "cores", "cpu_idle_longest_seconds"),
        ("gpus", "GPUs", "gpu_unused_longest_seconds")) if kind in flagged]
    return "idle " + ", ".join(parts) if parts else "-"


def _pct(v):
    return "-" if v is None else fixed(v, ".0f")


def _suspects(model, console, ids):
    from .terminal import esc
    rows = model["suspects"]
    if not rows:
        return
    more = model["suspect_count"] - len(rows)
    t = _table(f"suspects ({model['suspect_count']}"
               + (f", {len(rows)} shown" if more else "") + ")")
    _job_column(t, rows, ids)
    t.add_column("user", overflow="fold")
    t.add_column("why", overflow="fold")
    for r in rows:
        t.add_row(esc(ids(r["job"])), esc(r["user"]), esc("; ".join(map(str, r["why"]))))
    console.print(t)


def _batches(model, console):
    from .terminal import esc
    batches = [b for b in model.get("batches") or [] if b["advice"]]
    if not batches:
        return
    console.print("[bold]arrays and batches: right-sizing[/bold]")
    for b in batches:
        pk, cu = b["peak_memory_bytes"], b["cores_used"]
        console.print(f"{esc(b['kind'])} {esc(b['name'])} of {esc(b['user'])}, "
                      f"{b['tasks']} tasks", no_wrap=True, overflow="ignore", crop=False)
        if pk["n"]:
            console.print(f"  peak memory p50 {size(pk['p50'])}, p90 {size(pk['p90'])}, "
                          f"max {size(pk['max'])}")
        if cu["n"]:
            console.print(f"  cores used p50 {fixed(cu['p50'])}, p90 {fixed(cu['p90'])}, "
                          f"max {fixed(cu['max'])}")
        for line in b["advice"]:
            console.print(f"  → {esc(line)}")
