"""The verdict a job's terminal report opens with (jobmon.report.verdict): 3-5 lines, a bar
for each resource as used of given, the advice in the job's own submit syntax."""
from rich.markup import escape
from rich.table import Table

from ..printable import clean, fixed
from . import units

BAR = 20
EIGHTHS = " ▏▎▍▌▋▊▉"


def esc(value):
    return escape(clean(value))


def human(value, unit=""):
    return escape(units.human(value, unit))


def bar(percent, width=BAR):
    """A bar of `width` cells, `percent` of it filled (in eighths of a cell); past 100 %
    full, and a '+' in its last cell."""
    if percent is None:
        return " " * width
    cells = max(0.0, min(percent, 100.0)) * width / 100
    whole, part = int(cells), int((cells - int(cells)) * 8)
    filled = "█" * whole + (EIGHTHS[part] if part and whole < width else "")
    text = f"[cyan]{filled}[/cyan][dim]{'·' * (width - len(filled))}[/dim]"
    return text if percent <= 100 else f"[red]{'█' * (width - 1)}+[/red]"


def _pct(p):
    return "     " if p is None else f"{fixed(p, '.0f'):>3} %"


def lines(rep):
    """[(label, text)] of the verdict: the outcome, cores, memory, advice."""
    v, h = rep["verdict"], rep["header"]
    out = v["outcome"]
    wall = f", {human(v['wall_seconds'], 's')}" if v.get("wall_seconds") else ""
    if out["state"] == "running":
        first = f"running{wall} so far: {esc(out['text'])}"
    else:
        first = f"[bold]{esc(out['state'])}[/bold]: {esc(out['text'])}{wall}"
    rows = [("job " + esc(h["job"]), first)]
    c, m = v["cores"], v["memory"]
    if c["given"]:
        cores = f"{fixed(c['used'] or 0, '.2f')} used of {c['given']:g}"
    else:
        cores = (f"{fixed(c['used'], '.2f')} used" if c["used"] is not None else "-") + \
            " of none stated"
    rows.append(("cores", f"{bar(c['percent'])} {_pct(c['percent'])}  {cores}"))
    if m["peak"] or m["given"]:
        peak = human(m["peak"], "bytes") if m["peak"] else "-"
        given = f" of {escape_size(m['given'])}" if m["given"] else \
            " of none stated" if m.get("nodes", 1) == 1 else ""
        rows.append(("memory", f"{bar(m['percent'])} {_pct(m['percent'])}  "
                               f"{peak} {esc(m['peak_name'])}{given}"))
    d = v.get("data") or {}
    if d.get("reasons") and (d.get("percent") or 0) < 100:   # something is missing
        covers = f"covers {fixed(d['percent'], 'g')} % of the run: " \
            if d.get("percent") is not None else ""
        rows.append(("data", esc(covers + "; ".join(d["reasons"]))))
    a = v.get("advice")
    if a:
        more = f", {a['more']} more below" if a["more"] else ""
        if a["submit"]:
            rows.append(("next time", "[bold]" + esc("   ".join(a["submit"])) + "[/bold]"
                         f"  [dim]({esc(a['rule'])}{more})[/dim]"))
            rows.append(("", esc(a["text"])))
        else:
            rows.append(("advice", f"{esc(a['text'])}  [dim]({esc(a['rule'])}{more})[/dim]"))
    return rows


def escape_size(nbytes):
    return esc(units.size(nbytes, short=True))


def show(rep, console):
    if not rep.get("verdict"):
        return
    t = Table.grid(padding=(0, 1))
    t.add_column(style="bold", no_wrap=True)
    t.add_column(overflow="fold")
    rows = lines(rep)
    head_label, head = rows[0]
    console.print(f"[bold]{head_label}[/bold] — {head}")
    for label, text in rows[1:]:
        t.add_row(label, text)
    console.print(t)
