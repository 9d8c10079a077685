"""The HTML report's text parts: the heading, the boxes beside the plots (advice, summary,
allocation and efficiency, the scheduler's figures, any other section of the model) and the
tables below them (nodes, runs). Everything from the job is escaped here. Standard library
only."""
import html
import json
import re
import shlex

from .. import schedulers
from ..printable import clean
from . import html_verdict, units
from .live import RSS_NOTE, duration
from .units import human, short_status

# model sections laid out by name; any other is shown generically, by its shape
KNOWN = ("header", "totals", "summary", "runs", "hosts", "samples", "running", "efficiency",
         "procs")
SECTION_TITLES = {"advice": "Advice", "oom": "Killed for memory (OOM)",
                  "efficiency-model": "Efficiency", "balance": "Balance across nodes",
                  "memory": "Memory, every definition", "scheduler": "The scheduler's figures",
                  "node": "Energy and network",
                  "accounting": "The scheduler's figures",
                  "differences": "Where jobmon and the scheduler differ",
                  "ownership": "Whose job this run is",
                  "claims": "Claims by other users (not this job's runs)"}
SECTION_ORDER = ("advice", "balance", "memory", "node", "scheduler", "accounting",
                 "differences")
LAYOUTS = {}   # section -> its own layout (below), when the model's value has its shape

# What the job asked for and was given, from its end-of-job summary: (field, label, unit).
# A field the summary lacks (unknown, e.g. a plain `jobmon run` without tags) is left out.
ALLOCATION = (
    ("cores_requested", "cores requested", "cores"),
    ("cores_allocated", "cores allocated", "cores"),
    ("mem_requested_bytes", "memory requested", "bytes"),
    ("mem_allocated_bytes", "memory allocated", "bytes"),
    ("gpus_requested", "GPUs requested", "count"),
    ("gpus_allocated", "GPUs allocated", "count"),
    ("canonical_units", "canonical units (1 core + 2 GiB)", "units"),
)
# How well it used them, when the model has no efficiency rows of its own
EFFICIENCY = (
    ("cpu_efficiency_percent", "CPU efficiency", "%"),
    ("mem_efficiency_percent", "memory efficiency (memory peak / allocated)", "%"),
    ("provisioned_core_hours", "core-hours provisioned", "core-h"),
    ("used_core_hours", "core-hours used", "core-h"),
    ("idle_core_hours", "core-hours idle", "core-h"),
    ("idle_canonical_core_hours", "canonical core-hours idle (whole units)", "core-h"),
    ("gpu_hours", "GPU-hours", "GPU-h"),
    ("idle_gpu_hours", "GPU-hours idle", "GPU-h"),
)
# Signs that a job is stuck or leaking (shown when the summary has them)
SUSPECTS = (
    ("cpu_idle_samples", "samples with the CPU idle (< 1 % of a core)", "count"),
    ("mem_growth_bytes_per_hour", "resident memory growth", "bytes/h"),
    ("mem_rising", "resident memory rising steadily", "yes/no"),
    ("gpu_idle_samples", "samples with allocated GPUs idle", "count"),
)
# columns the nodes table gets when a node's summary has the field
NODE_COLUMNS = (("cores_allocated", "cores allocated", "cores"),
                ("cpu_efficiency_percent", "CPU eff.", "%"),
                ("mem_efficiency_percent", "memory eff.", "%"))


def esc(value):
    """Text from a job or a store, for the page: cleaned (jobmon.printable), escaped."""
    return html.escape("" if value is None else clean(value), quote=True)


def when(ts, zone=False):
    """Local time of the machine that writes the report (with its UTC offset: zone)."""
    return units.when(ts, None if zone else "%Y-%m-%d %H:%M:%S", "–")


def heading(rep):
    h = rep["header"]
    run = f" run {h['run']}" if h.get("run") and len(rep["runs"]) > 1 else ""
    rows = [("host", h.get("host")), ("user", h.get("user")), ("status", h.get("status")),
            ("measured by", h.get("method")), ("scheduler", h.get("scheduler")),
            ("started", when(h.get("start_time"), True)),
            ("ended", when(h.get("end_time"), True)),
            ("command", shlex.join(h["command"]) if h.get("command") else None)]
    tags = h.get("tags") or {}
    out = [f'<h1>job <span id="job-id">{esc(h.get("job"))}</span>{esc(run)}'
           + (' <span class="badge">running</span>' if rep.get("running") else "") + "</h1>",
           '<dl class="facts">']
    out += [f"<div><dt>{esc(k)}</dt><dd>{esc(v)}</dd></div>" for k, v in rows
            if v not in (None, "")]
    out.append("</dl>")
    if tags:
        out.append('<ul class="tags">' + "".join(
            f"<li><b>{esc(k)}</b>={esc(v)}</li>" for k, v in tags.items()) + "</ul>")
    return "\n".join(out)


def side_panel(rep):
    """The boxes beside the plots: advice first, the summary, what the job was given and
    how well it used it, then the model's other sections (the scheduler's figures ...)."""
    extra = [k for k in rep if k not in KNOWN and rep[k] not in (None, [], {}, "")]
    extra.sort(key=lambda k: (SECTION_ORDER.index(k) if k in SECTION_ORDER
                              else len(SECTION_ORDER), k))
    if (rep.get("ownership") or {}).get("verdict") != "claim":
        extra = [k for k in extra if k != "ownership"]   # not a claim: nothing to say
    # whose run, the verdict, how it died, what to do: on top
    first = ("ownership", "verdict", "oom", "advice")
    parts = [section(k, rep[k]) for k in first if k in extra]
    parts.append(box("summary", "Summary", rows_table(rep.get("totals") or [])))
    parts.append(efficiency_box(rep))
    parts += [section(k, rep[k]) for k in extra if k not in first]
    return "\n".join(p for p in parts if p)


def efficiency_box(rep):
    """Requests, allocations, efficiency and stall/leak signs: the summary's fields, with
    the model's efficiency rows (when it has them) in place of the summary's own."""
    s = rep.get("summary") or {}
    outcome = s.get("outcome")
    rows = [(label, s[f], unit) for f, label, unit in ALLOCATION if s.get(f) is not None]
    if outcome:
        reason = s.get("outcome_reason")
        rows.append(("outcome", f"{outcome}: {reason}" if reason else outcome, ""))
    model_rows, odd = as_rows(rep.get("efficiency")), None
    if model_rows is not None:   # the model's own (requests, allocations, outcome included)
        rows = model_rows
    else:
        rows += [(label, s[f], unit) for f, label, unit in EFFICIENCY if s.get(f) is not None]
        if rep.get("efficiency"):   # a shape this module does not know: shown as it is
            odd = section("efficiency-model", rep["efficiency"])
    rows += [(label, s[f], unit) for f, label, unit in SUSPECTS if s.get(f) is not None]
    out = [box("efficiency", "Allocation and efficiency", rows_table(rows)) if rows else "", odd]
    return "\n".join(x for x in out if x)


def as_rows(value):
    """(name, value, unit) rows from the model's rows: tuples (name, value[, unit]) or
    records ({label|name|field, value, unit}); None for anything else."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    rows = []
    for x in value:
        if isinstance(x, (list, tuple)) and len(x) in (2, 3):
            rows.append((x[0], x[1], x[2] if len(x) == 3 else ""))
        elif isinstance(x, dict) and "value" in x:
            name = next((x[k] for k in ("label", "name", "field") if x.get(k)), "")
            rows.append((name, x["value"], x.get("unit") or ""))
        else:
            return None
    return rows


def nodes_and_runs(rep):
    """The tables below the plots: each node of a multi-node run, each run of a job the
    scheduler ran more than once."""
    parts = []
    if rep["hosts"]:
        extra = [c for c in NODE_COLUMNS if any(x.get(c[0]) is not None for x in rep["hosts"])]
        parts.append(box("hosts", f"Nodes ({len(rep['hosts'])})", dicts_table(
            [dict({"node": x.get("host"), "status": short_status(x),
                   "wall": human(x.get("wall_seconds"), "s"),
                   "CPU": human((x.get("cpu_user_seconds") or 0)
                                + (x.get("cpu_system_seconds") or 0), "s"),
                   "CPU share": human(x.get("cpu_percent"), "%"),
                   "memory peak": human(x.get("memory_peak_bytes"), "bytes")},
                  **{label: human(x.get(f), unit) for f, label, unit in extra})
             for x in rep["hosts"]])))
    procs = rep.get("procs")
    if isinstance(procs, dict) and isinstance(procs.get("over_job"), list) and procs["over_job"]:
        first, last = (procs.get("taken_seconds") or [None, None])[:2]
        note = (f"<p class=\"note\">{esc(RSS_NOTE)}. Breakdowns are taken every few tens "
                "of seconds: a process's peak between two is not in them.</p>")
        n = procs.get("count")
        parts.append(box("procs", f"Processes by command ({n or '?'} "
                         f"breakdown{'' if n == 1 else 's'}, taken at {duration(first)}"
                         f"{'' if last == first else ' to ' + duration(last)} of the "
                         "run)", note + dicts_table(
            [{"command": x.get("comm"), "processes (most)": x.get("procs_max"),
              "CPU (mean)": human(x.get("cpu_mean"), "cores"),
              "CPU (most)": human(x.get("cpu_max"), "cores"),
              "RSS summed (most)": human(x.get("rss_max"), "bytes")}
             for x in procs["over_job"] if isinstance(x, dict)])))
    elif procs:
        parts.append(section("procs", procs))
    if len(rep["runs"]) > 1:
        parts.append(box("runs", f"Runs ({len(rep['runs'])}; earlier runs' time was lost "
                         "to the restart)", dicts_table(
            [{"run": r["run"], "started": when(r["start_time"]), "hosts": ", ".join(r["hosts"]),
              "status": r["status"], "wall": human(r["wall_seconds"], "s"),
              "CPU": human(r["cpu_seconds"], "s")} for r in rep["runs"]])))
    return "\n".join(parts)


def box(key, title, body):
    return (f'<section class="box" id="section-{esc(key)}"><h2>{esc(title)}</h2>'
            f"{body}</section>")


def section(key, value):
    """A model section this renderer has no layout of its own for, by its shape: text,
    a list of texts (advice), (name, value, unit) rows, a list of records, a mapping."""
    title = SECTION_TITLES.get(key, key.replace("_", " ").capitalize())
    laid_out = LAYOUTS[key](value) if key in LAYOUTS else None
    if laid_out:
        title, body = laid_out
    elif key == "advice" and isinstance(value, (list, tuple)) and all(
            isinstance(x, (str, dict)) for x in value):
        body = advice_list(value)
    elif isinstance(value, str):
        body = f"<p>{esc(value)}</p>"
    elif isinstance(value, dict):
        body = rows_table([(k, v, _unit_of(k)) for k, v in value.items()])
    elif isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value):
        body = "<ul>" + "".join(f"<li>{esc(x)}</li>" for x in value) + "</ul>"
    elif isinstance(value, (list, tuple)) and all(
            isinstance(x, (list, tuple)) and len(x) in (2, 3) for x in value):
        body = rows_table([tuple(x) + ("",) * (3 - len(x)) for x in value])
    elif isinstance(value, (list, tuple)) and all(isinstance(x, dict) for x in value):
        body = dicts_table(value)
    else:
        body = f"<pre>{esc(json.dumps(value, indent=1, default=str))}</pre>"
    return box(key, title, body)


def memory_layout(rows):
    """Every memory figure: [{name, value, meaning}], each with what it means."""
    if not isinstance(rows, (list, tuple)) or not all(
            isinstance(r, dict) and "name" in r and "value" in r for r in rows):
        return None
    body = "".join(f'<tr><th>{esc(r["name"])}</th><td>{esc(human(r["value"], "bytes"))}</td>'
                   "</tr>" + (f'<tr class="meaning"><td colspan="2">{esc(r["meaning"])}</td>'
                              "</tr>" if r.get("meaning") else "") for r in rows)
    return SECTION_TITLES["memory"], f'<table class="figures">{body}</table>'


def scheduler_layout(sch):
    """What the scheduler recorded ({name, source, figures, differences, note}), and
    where it disagrees with jobmon, and why."""
    if not isinstance(sch, dict) or not ("figures" in sch or "note" in sch):
        return None
    name = sch.get("name") or "the scheduler"
    out = [f'<p class="note">{esc(sch["note"])}</p>'] if sch.get("note") else []
    if sch.get("source"):
        out.append(f'<p class="source">from {esc(sch["source"])}</p>')
    rows = as_rows(sch.get("figures"))
    if rows:
        out.append(rows_table(rows))
    diffs = [d for d in sch.get("differences") or () if isinstance(d, dict)]
    if diffs:
        items = []
        for d in diffs:
            unit = d.get("unit") or ""
            # the scheduler's figure, under its tag
            theirs = next((d[t] for t in schedulers.tags() if t in d), None)
            items.append(f"<li><b>{esc(d.get('field'))}</b>: jobmon "
                         f"{esc(_cell('', d.get('jobmon'), unit))}, {esc(name)} "
                         f"{esc(_cell('', theirs, unit))}<br><small>{esc(d.get('reason'))}"
                         "</small></li>")
        out.append(f'<h3>Where jobmon and {esc(name)} differ</h3>'
                   f'<ul class="differences">{"".join(items)}</ul>')
    return f"What {name} recorded", "".join(out)


def node_layout(rows):
    """Energy and network: [{name, value, unit, scope, method, note}], each figure with its
    scope and method."""
    if not isinstance(rows, (list, tuple)) or not all(
            isinstance(r, dict) and {"name", "value", "scope", "method"} <= set(r)
            for r in rows):
        return None
    body = "".join(
        (f'<tr><th>{esc(r["name"])}</th><td>{esc(_cell("", r["value"], r.get("unit")))}'
         + (f' ± {esc(_cell("", r["error"], r.get("unit")))}' if r.get("error") is not None
            else "") + '</td>'
         f'<td class="how">{esc(r["scope"])}, {esc(r["method"])}</td></tr>'
         if r.get("unit") else    # a text: what is missing and why, how it was counted
         f'<tr class="text"><th>{esc(r["name"])}</th><td class="text" colspan="2">'
         f'{code(esc(r["value"]))}</td></tr>')
        + (f'<tr class="meaning"><td colspan="3">{esc(r["note"])}</td></tr>'
           if r.get("note") else "") for r in rows)
    return SECTION_TITLES["node"], f'<table class="figures">{body}</table>'


LAYOUTS.update(memory=memory_layout, scheduler=scheduler_layout, node=node_layout,
               verdict=html_verdict.layout)


def advice_list(items):
    """Advice: texts, or records with their text (text, message or advice), the rule that
    gave it and a level."""
    out = []
    for x in items:
        x = {"text": x} if isinstance(x, str) else x
        text = next((x[k] for k in ("text", "message", "advice") if x.get(k)), None)
        level = x.get("level") or x.get("severity") or ""
        rule = x.get("rule") or ""
        rest = {k: v for k, v in x.items() if k not in ("text", "message", "advice", "level",
                                                        "severity", "rule", "ask")}
        detail = "; ".join(f"{k}: {_cell(k, v)}" for k, v in rest.items() if v is not None)
        out.append(f'<li class="advice {esc(level)}">'
                   + (f"<b>{esc(level)}</b> " if level else "")
                   + code(esc(text if text is not None else detail))
                   + (f' <small class="rule">{esc(rule)}</small>' if rule else "")
                   + (f'<br><small>{esc(detail)}</small>' if text is not None and detail
                      else "") + "</li>")
    return '<ul class="advice">' + "".join(out) + "</ul>"


def code(escaped):
    """Escaped text whose `quoted` parts (a command, a setting) are set as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)


def rows_table(rows):
    """(name, value, unit) rows as a two-column table."""
    body = "".join(f"<tr><th>{esc(name)}</th><td>{esc(_cell(name, v, unit))}</td></tr>"
                   for name, v, unit in rows)
    return f'<table class="figures">{body}</table>'


def dicts_table(records):
    """Records (dicts) as a table, one column per key that any record has."""
    cols = []
    for r in records:
        cols += [k for k in r if k not in cols]
    unit = next((r.get("unit") for r in records if r.get("unit")), "")
    head = "".join(f"<th>{esc(c)}</th>" for c in cols if c != "unit")
    body = "".join("<tr>" + "".join(
        f"<td>{esc(_cell(c, r.get(c), r.get('unit') or unit))}</td>" for c in cols
        if c != "unit") + "</tr>" for r in records)
    return f'<table class="records"><tr>{head}</tr>{body}</table>'


def _unit_of(name):
    name = str(name)
    for suffix, unit in (("_bytes", "bytes"), ("_seconds", "s"), ("_percent", "%"),
                         ("_joules", "J"), ("_time", "time"), ("_core_hours", "core-h"),
                         ("_bytes_per_hour", "bytes/h")):
        if name.endswith(suffix):
            return unit
    return ""


def _cell(name, value, unit=""):
    """A value as text: with the unit given, else the one its name says."""
    unit = unit or _unit_of(name)
    if unit == "time" and isinstance(value, (int, float)):
        return when(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(str(x) for x in value)
    if isinstance(value, dict):
        return json.dumps(value, default=str)
    return human(value, unit)
