"""Machine-readable renderings of a report: JSON (everything), and CSV in two tables: the
report's figures in long form (section, name, value, unit, detail) and the samples."""
import csv
import io
import json

from .. import schedulers
from ..metrics import SAMPLE_COLUMNS
from ..printable import clean


def _theirs(difference):
    """The scheduler's figure in a row of differences: under its tag."""
    return next((difference[t] for t in schedulers.tags() if t in difference), None)


def _doc(rep):
    return {"job": rep["header"], "verdict": rep.get("verdict"), "summary": rep["summary"],
            "efficiency": _named(rep.get("efficiency")), "memory": rep.get("memory") or [],
            "oom": rep.get("oom") or [],
            "node": rep.get("node") or [], "scope_and_method": _figures(rep["summary"]),
            "advice": rep.get("advice") or [], "scheduler": rep.get("scheduler"),
            "totals": _named(rep.get("totals")), "runs": rep["runs"],
            "hosts": rep["hosts"], "balance": _named(rep.get("balance")), "samples": rep["samples"], "procs": rep.get("procs"),
            "ownership": rep.get("ownership"), "claims": rep.get("claims") or [],
            "actions": rep.get("actions") or []}


def _figures(summary):
    """{field: {scope, method[, note]}} of every summary field the table knows."""
    from ..metrics_doc import figure
    return {k: figure(k) for k in summary or {} if figure(k)}


def _named(rows):
    return [{"name": n, "value": v, "unit": u} for n, v, u in rows or ()]


FIGURE_COLUMNS = ("job", "section", "name", "value", "unit", "detail")


def figure_rows(rep):
    """The report's figures, one row each, as the JSON has them (but the samples)."""
    h, sch = rep["header"], rep.get("scheduler") or {}
    rows = [("job", k, h[k], "", "") for k in ("job", "run", "host", "user", "scheduler",
                                                "method", "status", "start_time", "end_time")]
    rows += [("efficiency", n, v, u, "") for n, v, u in rep.get("efficiency") or ()]
    rows += [("memory", m["name"], m["value"], "bytes", m["meaning"])
             for m in rep.get("memory") or ()]
    rows += [("oom", "story", line, "", "") for line in rep.get("oom") or ()]
    rows += [("node", r["name"], r["value"], r["unit"], f"{r['scope']}, {r['method']}"
              + (f"; ± {r['error']:g} {r['unit']}" if r.get("error") is not None else "")
              + (f"; {r['note']}" if r.get("note") else "")) for r in rep.get("node") or ()]
    rows += [("advice", a["rule"], a["text"], "", "") for a in rep.get("advice") or ()]
    if sch:
        rows += [("scheduler", n, v, u, sch.get("source") or "") for n, v, u in sch["figures"]]
        rows += [("scheduler", "note", sch["note"], "", "")] if sch.get("note") else []
        rows += [("difference", d["field"], _theirs(d), d["unit"], d["reason"])
                 for d in sch.get("differences") or ()]
    rows += [("totals", n, v, u, "") for n, v, u in rep.get("totals") or ()]
    rows += [("balance", n, v, u, "") for n, v, u in rep.get("balance") or ()]
    for x in rep.get("hosts") or ():
        rows += [("node CPU", x["host"], x.get("cpu_seconds"), "s",
                  f"{x.get('cpu_percent')} % of the job's CPU"),
                 ("node memory peak", x["host"], x.get("memory_peak_bytes"), "bytes", "")]
    rows += [("run", r["run"], r["status"], "", ", ".join(r["hosts"])) for r in rep["runs"]]
    own = rep.get("ownership") or {}
    rows += [("ownership", "verdict", own["verdict"], "", own.get("why") or "")] \
        if own.get("verdict") else []
    rows += [("claim", c["user"], c["run"], "", c["why"]) for c in rep.get("claims") or ()]
    rows += [("action", a["action"], a["outcome"], "", f"{a['time'] / 1e9:.3f}, "
              f"{'dry run, ' if a.get('dry_run') else ''}{a['reason']}")
             for a in rep.get("actions") or ()]
    return [dict(zip(FIGURE_COLUMNS, (h["job"],) + r)) for r in rows]


def to_json(rep):
    return json.dumps(_doc(rep), indent=1, default=str)


def group_to_json(job_id, reports):
    return json.dumps({"query": job_id, "jobs": [_doc(r) for r in reports]}, indent=1,
                      default=str)


def _columns(reports):
    cols = SAMPLE_COLUMNS
    if any(r["hosts"] for r in reports):
        cols = ("host",) + cols
    if len(reports) > 1:
        cols = ("job",) + cols
    return cols


def to_csv(rep, samples=False, for_terminal=False):
    return group_to_csv([rep], samples, for_terminal)


def group_to_csv(reports, samples=False, for_terminal=False):
    """The figures (or the samples) of the reports as CSV; for_terminal: every text
    cleaned (jobmon.printable), else exactly as stored (for a file or a program)."""
    if samples:
        cols, rows = _columns(reports), (dict(x, job=rep["header"]["job"])
                                         for rep in reports for x in rep["samples"])
    else:
        cols, rows = FIGURE_COLUMNS, (row for rep in reports for row in figure_rows(rep))
    if for_terminal:
        rows = ({k: clean(v) if isinstance(v, str) else v for k, v in row.items()}
                for row in rows)
    buf = io.StringIO()
    w = csv.DictWriter(buf, cols, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()
