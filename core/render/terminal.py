"""The terminal report (rich): header, totals and peaks, and a sample table."""
from rich.console import Console
from rich.table import Table
from rich.markup import escape

from .. import schedulers
from ..printable import clean, fixed
from . import units
from .units import short_status


def esc(value):
    """Text from a job or a store, for rich markup: cleaned (jobmon.printable), escaped."""
    return escape(clean(value))


def human(value, unit=""):
    return escape(units.human(value, unit))


when = units.when


def show(rep, console=None):
    from . import verdict_text
    console = console or Console()
    h = rep["header"]
    verdict_text.show(rep, console)     # the verdict first; the job's id in full there
    run = f"run {esc(h['run'])}" if h.get("run") and len(rep["runs"]) > 1 else "ran"
    console.print()
    console.print(f"{run} on {esc(h['host'])} as {esc(h['user'])} — {esc(h['status'])} — "
                  f"measured by {esc(h['method'])}")
    console.print(f"started {when(h['start_time'])}, ended {when(h['end_time'])}")
    _hanging(console, [
        ("command:", esc(' '.join(map(str, h['command']))) if h.get("command") else None),
        ("tags:", ", ".join(f"{esc(k)}={esc(v)}" for k, v in h["tags"].items())
         if h["tags"] else None)])
    show_ownership(rep, console)
    _pairs(console, "efficiency", rep.get("efficiency") or ())
    show_memory(rep.get("memory") or (), console)
    if rep.get("oom"):
        console.print("[bold]out of memory[/bold]")
        _hanging(console, [(" ", esc(line)) for line in rep["oom"]])
    show_node(rep.get("node") or (), console)
    if rep.get("advice"):
        console.print("[bold]advice[/bold]")
        _hanging(console, [("  -", f"{esc(a['text'])}  [dim]({a['rule']})[/dim]")
                           for a in rep["advice"]])
    show_actions(rep.get("actions") or (), console)
    if rep.get("scheduler"):
        show_scheduler(rep["scheduler"], console)
    _pairs(console, "totals and peaks", rep["totals"])
    if len(rep["runs"]) > 1:
        show_runs(rep["runs"], console)
    if rep["hosts"]:
        _pairs(console, "balance across nodes", rep.get("balance") or ())
        ht = Table(title=f"per node ({len(rep['hosts'])})")
        ids = [str(x["host"]) for x in rep["hosts"]]
        for col in ("node", "status", "wall", "CPU s", "CPU %", "memory peak"):
            if col == "node":
                _column(ht, "job", ids, header=col)
            else:
                ht.add_column(col, justify="right", overflow="fold")
        for x in rep["hosts"]:
            ht.add_row(esc(x["host"]), esc(short_status(x)), human(x.get("wall_seconds"), "s"),
                       fixed(x.get("cpu_seconds") or 0), human(x.get("cpu_percent"), "%"),
                       human(x.get("memory_peak_bytes"), "bytes"))
        console.print(ht)
    samples = rep["samples"]
    if samples:
        step = max(1, len(samples) // 20)  # at most ~20 rows; the last one always shown
        rows = samples[::step]
        if rows[-1] is not samples[-1]:
            rows.append(samples[-1])
        st = compact_table(f"samples ({len(samples)}, every {step}th shown)" if step > 1
                           else f"samples ({len(samples)})")
        for col in ("t (s)", "cores", "CPU s", "resident", "cache", "disk read",
                    "disk written", "procs"):   # local block I/O only (docs/reports.md)
            st.add_column(col, justify="right", no_wrap=True)
        for x in rows:
            st.add_row(fixed(x.get("elapsed_seconds", 0), ".1f"), _num(x.get("cpu_cores")),
                       _num((x.get("cpu_user_seconds") or 0)
                            + (x.get("cpu_system_seconds") or 0)),
                       *(_size(x.get(k)) for k in ("mem_resident_bytes", "mem_cache_bytes",
                                                   "read_bytes", "write_bytes")),
                       esc(x.get("procs", "-")))
        console.print(st)


def _hanging(console, rows):
    """(label, text) lines whose text, wrapped, goes on under itself, not at column 0;
    rows without text are left out."""
    t = Table.grid(padding=(0, 1))
    t.add_column(no_wrap=True)
    t.add_column(overflow="fold")
    for label, text in rows:
        if text:
            t.add_row(label, text)
    console.print(t)


def compact_table(title):
    """A table without outer borders or column rules: the most figures per line."""
    from rich import box
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                 padding=(0, 1), collapse_padding=True)


def _num(v):
    return "-" if v is None else fixed(v)


def _size(v):
    return "-" if v is None else escape(units.size(v, short=True))


def show_ownership(rep, console):
    """Whose job the run shown is, where it is not plainly its job's; the claims on it."""
    own = rep.get("ownership") or {}
    if own.get("verdict") == "claim":
        console.print(f"[bold red]a claim by another user, not this job's run:[/bold red] "
                      f"{esc(own['why'])}")
    elif own.get("verdict") == "unconfirmed":
        console.print("[dim]whose job: unconfirmed (the scheduler's record of it not read "
                      "yet)[/dim]")
    claims = rep.get("claims") or ()
    if claims:
        console.print(f"[bold]claims by other users[/bold] ({len(claims)}, not this job's: "
                      "see one with --user)")
    for c in claims:
        run = f" run {esc(c['run'])}" if c.get("run") else ""
        console.print(f"  {esc(c['job'])}{run} by {esc(c['user'])} on {esc(c['host'])}, "
                      f"started {when(c['start_time'])}: {esc(c['why'])}")


def show_actions(actions, console):
    """`jobmon act`'s warnings and actions on the job (docs/actions.md), oldest first."""
    if actions:
        console.print(f"[bold]actions on this idle job[/bold] ({len(actions)})")
    for a in actions:
        dry = " (dry run)" if a.get("dry_run") else ""
        run = f" run {esc(a['run'])}" if a.get("run") else ""
        console.print(f"  {when(a['time'] / 1e9)}{run}: [bold]{esc(a.get('action'))}"
                      f"[/bold]{dry} by {esc(a.get('actor'))}: {esc(a.get('outcome'))}")
        console.print(f"    {esc(a.get('reason'))}")


def _pairs(console, title, rows):
    if not rows:
        return
    t = Table(title=title, show_header=False, box=None)
    t.add_column(style="bold", overflow="fold")
    t.add_column(justify="right", overflow="fold")
    for name, value, unit in rows:
        t.add_row(esc(name), human(value, unit) if unit else esc(value))
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
        t.add_row(esc(r["name"]), human(r["value"], "bytes"), esc(r["meaning"]))
    console.print(t)


def show_node(rows, console):
    """Energy and network, each figure with its scope and method: a node's apportioned
    energy or a device's is never shown as the job's own exact figure; below them, what is
    not available and why, and what a figure leaves out."""
    if not rows:
        return
    figures = [r for r in rows if r["unit"]]
    console.print("[bold]energy and network[/bold]" + (" (scope, method)" if figures else ""))
    if figures:
        t = Table(box=None, show_header=False, pad_edge=False)
        t.add_column(style="bold", overflow="fold", ratio=2)
        t.add_column(justify="right", no_wrap=True)
        t.add_column(overflow="fold", ratio=3)
        for r in figures:
            note = f"; {r['note']}" if r.get("note") else ""
            t.add_row(esc(r["name"]), human(r["value"], r["unit"]) + (
                f" ± {human(r['error'], r['unit'])}" if r.get("error") is not None else ""),
                      esc(f"{r['scope']}, {r['method']}{note}"))
        console.print(t)
    _hanging(console, [(esc(r["name"]) + ":", esc(r["value"])) for r in rows
                       if not r["unit"]])


def show_scheduler(sch, console):
    """What the scheduler recorded, and where it disagrees with jobmon, and why."""
    if sch.get("note"):
        console.print(f"[bold]{esc(sch['name'])}[/bold]: {esc(sch['note'])}")
        return
    _pairs(console, f"{sch['name']} recorded ({sch.get('source')})", sch["figures"])
    for d in sch.get("differences") or ():
        unit = d.get("unit") or ""
        theirs = next((d[t] for t in schedulers.tags() if t in d), None)   # under its tag
        console.print(f"  - {esc(d['field'])}: jobmon {human(d['jobmon'], unit)}, "
                      f"{esc(sch['name'])} {human(theirs, unit)}: "
                      f"{esc(d['reason'])}")


def show_runs(runs, console):
    rt = Table(title=f"runs ({len(runs)}; earlier runs' time was lost to the restart)")
    for col in ("run", "started", "hosts", "status", "wall", "CPU s"):
        rt.add_column(col)
    for r in runs:
        rt.add_row(esc(r["run"]), when(r["start_time"]), esc(", ".join(r["hosts"])),
                   esc(r["status"]), human(r["wall_seconds"], "s"),
                   "-" if r["cpu_seconds"] is None else fixed(r["cpu_seconds"]))
    console.print(rt)


def show_group(job_id, reports, console=None):
    """Several jobs (a cluster, an array): one line each, and the sums. Each job's memory
    peak is the one that sizes it (summary.efficiency.sizing_peak: an attach-mode
    sampler's job's is the kernel's, which a sampled resident peak can miss by far). A long
    id is shortened in the table, in full below it."""
    from ..summary.efficiency import BASIS_TEXT, sizing_peak
    from .short_ids import Ids
    console = console or Console()
    t = Table(title=f"jobs of {esc(job_id)} ({len(reports)})")
    short = Ids()
    ids = [short(rep["header"]["job"]) for rep in reports]
    for col in ("job", "runs", "hosts", "status", "wall", "CPU s", "memory peak"):
        _column(t, col, ids)
    cpu_all = wall_all = 0.0
    bases = set()
    for rep in reports:
        h, tot = rep["header"], {name: v for name, v, _u in rep["totals"]}
        cpu = (tot.get("CPU user") or 0) + (tot.get("CPU system") or 0)
        cpu_all += cpu
        wall_all += tot.get("wall time") or 0
        peak, basis = sizing_peak(rep.get("summary") or {})
        bases.add(basis)
        t.add_row(esc(short(h["job"])), str(max(len(rep["runs"]), 1)), esc(h["host"]),
                  esc(h["status"]), human(tot.get("wall time"), "s"), fixed(cpu),
                  human(peak, "bytes"))
    console.print(t)
    for line in short.legend(console.width):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    console.print(f"total: {len(reports)} jobs, {human(wall_all, 's')} of wall time, "
                  f"{fixed(cpu_all)} CPU s (latest run of each)")
    said = sorted(BASIS_TEXT[b] for b in bases if b in BASIS_TEXT)
    if said:
        console.print(f"memory peak: the one that sizes each job ({', '.join(said)})")


def _column(table, name, ids, header=None):
    """A job id (or a node's name) is never cut: its column is as wide as the longest; the
    others fold."""
    if name == "job":
        table.add_column(header or name, no_wrap=True, min_width=max(map(len, ids), default=3))
    else:
        table.add_column(name, overflow="fold")


# `jobmon list`: (header, alignment); the job id first, the status last (it takes the rest)
LIST_COLUMNS = (("USER", "<"), ("HOST", "<"), ("STARTED", "<"), ("WALL", ">"), ("CPU s", ">"),
                ("PEAK", ">"), ("HOW", "<"), ("STATUS", "<"))
# how each probe is named in a narrow column
METHOD_SHORT = {"cgroup-v1": "v1", "cgroup-v2": "v2"}


def list_lines(jobs, width=80):
    """`jobmon list` as plain lines of at most `width` columns: one row a job, its columns
    as wide as their longest cell; a job id too long for the line gets a line of its own
    (never cut), its figures on the next; a status that does not fit goes on a line of
    its own below."""
    from .live import duration
    rows = []
    for j in jobs:
        s = j.get("summary") or {}
        cpu = (s.get("cpu_user_seconds") or 0) + (s.get("cpu_system_seconds") or 0)
        method = str(j.get("method") or "-")
        rows.append([clean(j.get("job")), clean(j.get("user") or "-"),
                     clean(j.get("host") or "-"),
                     when(j.get("start_time"), "%m-%d %H:%M"),
                     duration(s.get("wall_seconds")) if s else "-",
                     fixed(cpu) if s else "-",
                     units.size(s["rss_peak_bytes"], short=True) if s.get("rss_peak_bytes")
                     is not None else "-", clean(METHOD_SHORT.get(method, method)),
                     clean(short_status(s))])
    widths = [max([len(h)] + [len(r[i + 1]) for r in rows])
              for i, (h, _a) in enumerate(LIST_COLUMNS)]
    rest_width = sum(widths[:-1]) + len(widths)        # the columns after the id, spaced
    jw = max(3, min(max([len(r[0]) for r in rows] + [3]), width - rest_width - 6))

    def rest(cells):
        return "".join(f" {c:{a}{w}}" for c, (_h, a), w in zip(cells[:-1], LIST_COLUMNS, widths))

    lines = [f"{'JOB':<{jw}}" + rest([h for h, _a in LIST_COLUMNS]) + " STATUS"]
    for r in rows:
        head = f"{r[0]:<{jw}}" if len(r[0]) <= jw else None
        if head is None:              # never cut: the id alone, its figures below
            lines.append(r[0])
            head = " " * jw
        line = head + rest(r[1:]) + " " + r[-1]
        if len(line) > width:         # the status below, where it fits
            lines += [head + rest(r[1:]), " " * (jw + 1) + r[-1]]
        else:
            lines.append(line)
    return [x.rstrip() for x in lines]


def show_list(jobs, console=None):
    console = console or Console()
    console.print("recent jobs (newest first)", highlight=False)
    for line in list_lines(jobs, console.width):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
