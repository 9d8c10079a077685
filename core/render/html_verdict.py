"""The HTML report's verdict box (jobmon.report.verdict): how the run ended and why, the
cores and memory it used of what it was given as bars, the most useful advice in the job's
own submit syntax. Everything from the job is escaped here. Standard library only."""
import html

from ..printable import clean, fixed
from .units import human


def esc(value):
    return html.escape("" if value is None else clean(value), quote=True)


def _bar(percent):
    if percent is None:
        return ""
    over = " over" if percent > 100 else ""
    return (f'<span class="bar{over}"><span style="width:{min(percent, 100.0):.1f}%">'
            "</span></span>")


def _row(label, percent, text):
    pct = "" if percent is None else f"{fixed(percent, '.0f')} %"
    return (f"<tr><th>{esc(label)}</th><td>{_bar(percent)}</td><td>{esc(pct)}</td>"
            f"<td>{esc(text)}</td></tr>")


def layout(v):
    """(title, body) of the verdict, or None for a value of another shape."""
    if not isinstance(v, dict) or not {"outcome", "cores", "memory"} <= set(v):
        return None
    out, c, m, a = v["outcome"], v["cores"], v["memory"], v.get("advice")
    wall = f", {human(v['wall_seconds'], 's')}" if v.get("wall_seconds") else ""
    head = (f"running{wall} so far: {out['text']}" if out["state"] == "running"
            else f"{out['state']}: {out['text']}{wall}")
    rows = [_row("cores", c["percent"], (f"{fixed(c['used'] or 0, '.2f')} used of "
                                         f"{c['given']:g}") if c["given"] else
                 f"{fixed(c['used'] or 0, '.2f')} used of none stated")]
    if m["peak"] or m["given"]:
        rows.append(_row("memory", m["percent"],
                         f"{human(m['peak'], 'bytes') if m['peak'] else '-'} {m['peak_name']}"
                         + (f" of {human(m['given'], 'bytes')}" if m["given"]
                            else (" of none stated" if m.get("nodes", 1) == 1 else ""))))
    body = [f'<p class="outcome">{esc(head)}</p>',
            f'<table class="verdict">{"".join(rows)}</table>']
    d = v.get("data") or {}
    if isinstance(d, dict) and isinstance(d.get("reasons"), list) and d["reasons"] and \
            not (isinstance(d.get("percent"), (int, float)) and d["percent"] >= 100):
        covers = f"covers {fixed(d['percent'], 'g')} % of the run: " \
            if isinstance(d.get("percent"), (int, float)) else ""
        body.append(f'<p class="data">data: {esc(covers + "; ".join(map(str, d["reasons"])))}'
                    "</p>")
    if a:
        more = f", {a['more']} more below" if a.get("more") else ""
        if a.get("submit"):
            body.append("<p>next time: " + " ".join(f"<code>{esc(x)}</code>"
                                                   for x in a["submit"])
                        + f' <small class="rule">{esc(a["rule"])}{esc(more)}</small></p>')
            body.append(f'<p class="note">{esc(a["text"])}</p>')
        else:
            body.append(f'<p>{esc(a["text"])} <small class="rule">{esc(a["rule"])}'
                        f"{esc(more)}</small></p>")
    return "Verdict", "".join(body)
