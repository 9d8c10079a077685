"""The terminal report (rich): header, totals and peaks, and a sample table."""
import datetime

from rich.console import Console
from rich.table import Table
from rich.markup import escape

from .units import human


def when(ts):
    if not ts:
        return "-"
    return datetime.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def show(rep, console=None):
    console = console or Console()
    h = rep["header"]
    run = f" run {escape(h['run'])}" if h.get("run") and len(rep["runs"]) > 1 else ""
    console.print(f"[bold]job {escape(str(h['job']))}[/bold]{run} on {escape(str(h['host']))} "
                  f"as {escape(str(h['user']))} — {escape(h['status'])} — measured by {h['method']}")
    console.print(f"started {when(h['start_time'])}, ended {when(h['end_time'])}"
                  + (f"; command: {escape(' '.join(h['command']))}" if h.get("command") else ""))
    if h["tags"]:
        console.print("tags: " + ", ".join(f"{escape(k)}={escape(str(v))}" for k, v in h["tags"].items()))
    _pairs(console, "efficiency", rep.get("efficiency") or ())
    show_memory(rep.get("memory") or (), console)
    if rep.get("advice"):
        console.print("[bold]advice[/bold]")
        for a in rep["advice"]:
            console.print(f"  - {escape(a['text'])}  [dim]({a['rule']})[/dim]")
    if rep.get("scheduler"):
        show_scheduler(rep["scheduler"], console)
    _pairs(console, "totals and peaks", rep["totals"])
    if len(rep["runs"]) > 1:
        show_runs(rep["runs"], console)
    if rep["hosts"]:
        ht = Table(title="per node")
        for col in ("host", "status", "wall", "CPU s", "resident peak"):
            ht.add_column(col, justify="right" if col != "host" else "left")
        for x in rep["hosts"]:
            cpu = (x.get("cpu_user_seconds") or 0) + (x.get("cpu_system_seconds") or 0)
            ht.add_row(escape(str(x["host"])), _short_status(x), human(x.get("wall_seconds"), "s"),
                       f"{cpu:.2f}", human(x.get("rss_peak_bytes"), "bytes"))
        console.print(ht)
    samples = rep["samples"]
    if samples:
        step = max(1, len(samples) // 20)  # at most ~20 rows; the last one always shown
        rows = samples[::step]
        if rows[-1] is not samples[-1]:
            rows.append(samples[-1])
        st = Table(title=f"samples ({len(samples)}, every {step}th shown)" if step > 1
                   else f"samples ({len(samples)})")
        for col in ("t (s)", "CPU cores", "CPU total s", "resident", "cache", "read", "written", "procs"):
            st.add_column(col, justify="right")
        for x in rows:
            st.add_row(f"{x.get('elapsed_seconds', 0):.1f}", human(x.get("cpu_cores"), "cores"),
                       human((x.get("cpu_user_seconds") or 0) + (x.get("cpu_system_seconds") or 0), "s"),
                       human(x.get("mem_resident_bytes"), "bytes"), human(x.get("mem_cache_bytes"), "bytes"),
                       human(x.get("read_bytes"), "bytes"), human(x.get("write_bytes"), "bytes"),
                       str(x.get("procs", "-")))
        console.print(st)


def _pairs(console, title, rows):
    if not rows:
        return
    t = Table(title=title, show_header=False, box=None)
    t.add_column(style="bold", overflow="fold")
    t.add_column(justify="right", overflow="fold")
    for name, value, unit in rows:
        t.add_row(escape(name), escape(human(value, unit)) if unit else escape(str(value)))
    console.print(t)


def show_memory(rows, console):
    """Every memory figure side by side, each with what it means."""
    if not rows:
        return
    t = Table(title="memory: every definition", box=None)
    t.add_column("figure", style="bold", overflow="fold")
    t.add_column("value", justify="right", no_wrap=True)
    t.add_column("meaning", overflow="fold", ratio=1)
    for r in rows:
        t.add_row(escape(r["name"]), human(r["value"], "bytes"), escape(r["meaning"]))
    console.print(t)


def show_scheduler(sch, console):
    """What HTCondor or Slurm recorded, and where it disagrees with jobmon, and why."""
    if sch.get("note"):
        console.print(f"[bold]{escape(sch['name'])}[/bold]: {escape(sch['note'])}")
        return
    _pairs(console, f"{sch['name']} recorded ({sch.get('source')})", sch["figures"])
    for d in sch.get("differences") or ():
        unit = d.get("unit") or ""
        theirs = d.get("htcondor", d.get("slurm"))
        console.print(f"  - {escape(d['field'])}: jobmon {escape(human(d['jobmon'], unit))}, "
                      f"{escape(sch['name'])} {escape(human(theirs, unit))}: "
                      f"{escape(d['reason'])}")


def show_runs(runs, console):
    rt = Table(title=f"runs ({len(runs)}; earlier runs' time was lost to the restart)")
    for col in ("run", "started", "hosts", "status", "wall", "CPU s"):
        rt.add_column(col)
    for r in runs:
        rt.add_row(escape(str(r["run"])), when(r["start_time"]), escape(", ".join(r["hosts"])),
                   escape(r["status"]), human(r["wall_seconds"], "s"),
                   "-" if r["cpu_seconds"] is None else f"{r['cpu_seconds']:.2f}")
    console.print(rt)


def show_group(job_id, reports, console=None):
    """Several jobs (an HTCondor cluster, a Slurm array): one line each, and the sums."""
    console = console or Console()
    t = Table(title=f"jobs of {escape(job_id)} ({len(reports)})")
    ids = [str(rep["header"]["job"]) for rep in reports]
    for col in ("job", "runs", "hosts", "status", "wall", "CPU s", "resident peak"):
        _column(t, col, ids)
    cpu_all = wall_all = 0.0
    for rep in reports:
        h, tot = rep["header"], {name: v for name, v, _u in rep["totals"]}
        cpu = (tot.get("CPU user") or 0) + (tot.get("CPU system") or 0)
        cpu_all += cpu
        wall_all += tot.get("wall time") or 0
        peak = next((m["value"] for m in rep.get("memory") or ()
                     if m["name"].startswith("footprint")), None)
        t.add_row(escape(str(h["job"])), str(max(len(rep["runs"]), 1)), escape(h["host"]),
                  escape(h["status"]), human(tot.get("wall time"), "s"), f"{cpu:.2f}",
                  human(peak, "bytes"))
    console.print(t)
    console.print(f"total: {len(reports)} jobs, {human(wall_all, 's')} of wall time, "
                  f"{cpu_all:.2f} CPU s (latest run of each)")


def _column(table, name, ids):
    """A job id is never cut: its column is as wide as the longest; the others fold."""
    if name == "job":
        table.add_column(name, no_wrap=True, min_width=max(map(len, ids), default=3))
    else:
        table.add_column(name, overflow="fold")


def _short_status(s):
    if s.get("signal"):
        return f"signal {s['signal']}"
    if s.get("exit_code") is not None:
        return f"exit {s['exit_code']}"
    return "no summary" if s and s.get("end_time") is None else "running?"


def show_list(jobs, console=None):
    console = console or Console()
    t = Table(title="recent jobs")
    ids = [str(j.get("job")) for j in jobs]
    for col in ("job", "host", "user", "started", "status", "wall", "CPU s", "resident peak", "method"):
        _column(t, col, ids)
    for j in jobs:
        s = j.get("summary") or {}
        status = _short_status(s)
        cpu = (s.get("cpu_user_seconds") or 0) + (s.get("cpu_system_seconds") or 0)
        t.add_row(escape(str(j.get("job"))), escape(str(j.get("host"))), escape(str(j.get("user"))),
                  when(j.get("start_time")), status, human(s.get("wall_seconds"), "s"),
                  f"{cpu:.2f}" if s else "-", human(s.get("rss_peak_bytes"), "bytes"),
                  str(j.get("method")))
    console.print(t)
