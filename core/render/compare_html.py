"""Runs side by side as one self-contained HTML page (jobmon.report.compare's model): the
headline, who each run was, the figures and their change. No script at all: its
Content-Security-Policy allows none, and every text from a job (ids, users, hosts) is
escaped."""
from .html_tables import esc
from .units import human, when

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="jobmon">
<title>{title}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }}
h1 {{ font-size: 1.3em; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ padding: .25em .8em; border-bottom: 1px solid #ddd; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
td.up {{ color: #a33; }} td.down {{ color: #276; }}
p.headline {{ font-size: 1.15em; font-weight: 600; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p class="headline">{headline}</p>
{body}
<footer>Made by jobmon (jobmon compare, jobmon query --like). change: the run's figure over
its baseline's (the first run, or the median of the earlier runs). Times are the local
time of the machine that wrote the page.</footer>
</body>
</html>
"""


def _change(r):
    if r["ratio"] is None:
        return "<td></td>"
    cls = "up" if r["ratio"] > 1.1 else "down" if r["ratio"] < 0.9 else ""
    return f'<td class="{cls}">{r["ratio"]:.2f}×</td>'


def _figures(rows, first, second):
    """The figures table: `first` and `second` name the columns and which side each is."""
    head = "".join(f"<th>{esc(name)}</th>" for name, _side in (first, second))
    body = "".join(
        f"<tr><td>{esc(r['label'])}</td>"
        + "".join(f"<td>{esc(human(r[side], r['unit']))}</td>" for _n, side in (first, second))
        + _change(r) + "</tr>" for r in rows)
    return f"<table><tr><th>figure</th>{head}<th>change</th></tr>{body}</table>"


def _runs(columns):
    rows = "".join(
        f"<tr><td>{esc(c['label'])}</td><td>{esc(c.get('user') or '')}</td>"
        f"<td>{esc(c.get('host') or '')}</td><td>{esc(when(c.get('start_time')))}</td>"
        f"<td>{esc(c.get('end') or '')}</td><td>{esc(c.get('outcome') or '')}</td>"
        f"<td>{esc(human(c['figures'].get('wall_seconds'), 's'))}</td>"
        f"<td>{esc(c.get('script_hash') or c.get('command_hash') or '')}</td></tr>"
        for c in columns)
    return ("<table><tr><th>run</th><th>user</th><th>host</th><th>started</th><th>end</th>"
            f"<th>outcome</th><th>wall</th><th>hash</th></tr>{rows}</table>")


def compare_page(model):
    base, subject = model["columns"][0], model["columns"][-1]
    body = _runs(model["columns"]) + _figures(
        model["rows"], (base["label"], "baseline"), (subject["label"], "subject"))
    return PAGE.format(title=esc(f"jobmon — {subject['label']} against {base['label']}"),
                       headline=esc(model["headline"]), body=body)


def like_page(model):
    subject = model["columns"][0]
    body = _runs(model["columns"][:1])
    if model["earlier"]:
        body += _figures(model["rows"], (subject["label"], "subject"),
                         (f"median of {model['earlier']}", "baseline"))
        body += "<h2>earlier runs</h2>" + _runs(model["columns"][1:])
    how = "job script" if model["matched_by"] == "script_hash" else "command line"
    return PAGE.format(title=esc(f"jobmon — {subject['label']} and its earlier runs of "
                                 f"the same {how}"),
                       headline=esc(model["headline"]), body=body)
