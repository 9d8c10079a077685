"""The HTML report of one job run: a single self-contained page.

Plots over time (uPlot, inlined from vendor/) and the report's tables; the page loads
nothing from anywhere. Standard library only. Everything that comes from the job (ids,
tags, host names, the command line) is hostile input: tables are escaped here, plot
data travels as JSON with `<`, `>` and `&` escaped, the page script sets text with
textContent only, and a Content-Security-Policy lets no script run but the page's own two
(by hash), so an escaping slip still cannot run injected code.
"""
import base64
import datetime
import hashlib
import json
import string
from importlib import resources

from .. import schedulers
from ..printable import clean
from .html_tables import esc, heading, nodes_and_runs, side_panel

MiB = 1 << 20

# The plots: (id, title, y unit, series). A series: (field, label, colour, dash, derived).
# derived: None (the sample field as it is), "rate" (a counter, plotted as its change per
# second) or ("sum", fields) (the page adds the fields up). A plot with no data in any
# host is left out; so is a series.
PLOTS = (
    ("cpu", "CPU", "cores", (
        ("cpu_cores", "cores used", "#1f77b4", None, None),)),
    ("memory", "Memory", "bytes", (
        ("mem_resident_bytes", "resident (anon + shmem)", "#1f77b4", None, None),
        ("mem_charged_bytes", "charged (resident + page cache)", "#ff7f0e", None,
         ("sum", ("mem_resident_bytes", "mem_cache_bytes"))),
        ("mem_cache_bytes", "page cache", "#2ca02c", None, None),
        ("mem_peak_bytes", "kernel peak (charged, cache incl.)", "#9467bd", [6, 3], None),
        ("mem_resident_peak_bytes", "resident peak", "#17becf", [2, 3], None),
        ("mem_swap_bytes", "swap", "#d62728", None, None))),
    ("io", "I/O", "bytes/s", (
        ("read_bytes", "storage read (local disks)", "#1f77b4", None, "rate"),
        ("write_bytes", "storage write (local disks)", "#ff7f0e", None, "rate"),
        ("rchar_bytes", "read() calls", "#2ca02c", [6, 3], "rate"),
        ("wchar_bytes", "write() calls", "#d62728", [6, 3], "rate"))),
    ("tasks", "Processes and threads", "count", (
        ("procs", "processes", "#1f77b4", None, None),
        ("threads", "threads", "#ff7f0e", [6, 3], None))),
    ("gpu_util", "GPU utilization", "%", (
        ("gpu_util_percent", "utilization", "#2ca02c", None, None),)),
    ("gpu_mem", "GPU memory", "bytes", (
        ("gpu_mem_bytes", "GPU memory (job's processes)", "#9467bd", None, None),)),
    ("power", "Power (GPUs' counter + CPU and DRAM apportioned)", "W", (
        ("power_watts", "the job's power", "#d62728", None, None),)),
    ("network", "Network", "bytes/s", (
        ("net_rx_bytes", "received", "#1f77b4", None, "rate"),
        ("net_tx_bytes", "sent", "#ff7f0e", None, "rate"))),
)
# How a series is drawn between its samples: "interval" -- its value covers the interval
# that ends at its sample (a counter's rate, the cores used since the last sample, the
# power since the last reading), a step from the sample before (from the job's start for
# the first); "peak" -- a high-water mark, held until the sample that saw it rise, then a
# step up; else a line (a gauge read at the sample: resident memory, processes)
DRAWN = {"cpu_cores": "interval", "power_watts": "interval",
         "mem_peak_bytes": "peak", "mem_resident_peak_bytes": "peak"}
# procfs mode has no cgroup: its resident memory is a share (PSS), its "page cache" the
# file pages the job maps, and nothing is charged
PROCFS_LABELS = {"mem_resident_bytes": "resident (PSS anon + shmem)",
                 "mem_charged_bytes": "resident + mapped file pages",
                 "mem_cache_bytes": "mapped file pages"}

# Level lines: (plot, kind, names). names: (field, label) in the order they are looked
# for: the end-of-job summary's fields first, then the scheduler's figures in the model,
# then the job's tags its plugin copied from the job's ad ("tag:" names, in MB); the
# recorded memory line: each scheduler's own figure (its object's memory_field, labelled
# as its memory_figure).
REFERENCES = (
    ("cpu", "requested", (("cores_requested", "requested"), ("req_cpus", "requested"),
                          ("request_cpus", "requested"), ("tag:RequestCpus", "requested"))),
    ("cpu", "allocated", (("cores_allocated", "allocated"), ("alloc_cpus", "allocated"),
                          ("cpus_provisioned", "allocated"),
                          ("tag:CpusProvisioned", "allocated"))),
    ("memory", "requested", (("mem_requested_bytes", "requested"),
                             ("req_mem_bytes", "requested"),
                             ("request_memory_bytes", "requested"),
                             ("tag:RequestMemory", "requested"))),
    ("memory", "allocated", (("mem_allocated_bytes", "allocated"),
                             ("alloc_mem_bytes", "allocated"),
                             ("memory_provisioned_bytes", "allocated"),
                             ("tag:MemoryProvisioned", "allocated"))),
    ("memory", "recorded", tuple((s.memory_field, s.memory_figure[0])
                                 for s in schedulers.all() if s.memory_field)),
)
TAG_UNITS = {"RequestMemory": MiB, "MemoryProvisioned": MiB}
# dark, unlike any host's or definition's colour
REFERENCE_STYLE = {"requested": ("#444444", [8, 4]), "allocated": ("#000000", [2, 3]),
                   "recorded": ("#8b0000", [12, 3, 2, 3])}


def _resource(name):
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def render(rep):
    """The report model (jobmon.report.model.build) as one HTML page (text)."""
    h = rep["header"]
    uplot_js, page_js = _resource("vendor/uPlot.iife.min.js"), _resource("report.js")
    for text in (uplot_js, page_js):   # inlined verbatim: must not end the script element
        if "</script" in text.lower() or "<!--" in text:
            raise ValueError("a script to inline holds </script or <!--")
    plots = plot_data(rep)
    fields = {
        "csp": _csp(uplot_js, page_js),
        "title": esc(f"jobmon — job {h.get('job')}"),
        "uplot_css": _resource("vendor/uPlot.min.css"),
        "page_css": _resource("report.css"),
        "heading": heading(rep),
        "plots": "\n".join(f'<figure class="plot" id="plot-{p["id"]}" '
                           f'data-plot="{p["id"]}"></figure>' for p in plots["plots"])
                 or '<p class="empty">No samples were recorded for this run.</p>',
        "side": side_panel(rep),
        "tables": nodes_and_runs(rep),
        "data": script_json(plots),
        "uplot_js": uplot_js, "page_js": page_js,
    }
    return string.Template(_resource("report.html")).substitute(fields)


def _csp(*scripts):
    hashes = " ".join("'sha256-%s'" % base64.b64encode(hashlib.sha256(s.encode()).digest())
                      .decode() for s in scripts)
    return (f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; "
            "img-src data:; base-uri 'none'; form-action 'none'")


def script_json(value):
    """JSON for a <script type="application/json"> element: nothing in it can close the
    element or open a comment."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


# ---- plot data --------------------------------------------------------------------

def plot_data(rep):
    """What the page script plots: per host, sample times (s after `t0`, in s since the
    epoch) and the sampled fields as columns; the plots with data, and their level
    lines."""
    by_host = {}
    for s in rep["samples"]:
        if s.get("time") is not None:
            by_host.setdefault(s.get("host") or rep["header"].get("host") or "", []).append(s)
    t0 = min((s["time"] for smp in by_host.values() for s in smp), default=0) // 10**9
    fields = {f[0] for p in PLOTS for f in p[3] if not isinstance(f[4], tuple)}
    hosts = []
    for host, smp in by_host.items():
        cols = {f: [_num(s.get(f)) for s in smp] for f in sorted(fields)}
        hosts.append({"host": clean(host),   # shown with textContent: no bidi control
                      "t": [round((s["time"] - t0 * 10**9) / 1e9, 6) for s in smp],
                      "e0": smp[0].get("elapsed_seconds"),
                      "cols": {f: v for f, v in cols.items() if any(x is not None for x in v)}})
    present = {f for x in hosts for f in x["cols"]}
    procfs = "procfs" in (rep["header"].get("method") or "")
    refs = references(rep)
    plots = []
    for pid, title, unit, series in PLOTS:
        shown = []
        for f, label, color, dash, derived in series:
            parts = derived[1] if isinstance(derived, tuple) else (f,)
            if all(x in present for x in parts):
                shown.append({"field": f, "color": color, "dash": dash,
                              "label": PROCFS_LABELS.get(f, label) if procfs else label,
                              "rate": derived == "rate",
                              "drawn": "interval" if derived == "rate" else DRAWN.get(f),
                              "sum": list(parts) if isinstance(derived, tuple) else None})
        if shown:
            plots.append({"id": pid, "title": title, "unit": unit, "series": shown,
                          "levels": refs.get(pid, []), "marks": marks(rep, t0, pid)})
    return {"t0": t0, "zone": _zone(t0), "hosts": hosts, "plots": plots}


def _zone(ts):
    """The UTC offset (seconds) of the writer's local time at `ts`: the time axis shows the
    times the header does."""
    try:
        return int(datetime.datetime.fromtimestamp(ts).astimezone().utcoffset().total_seconds())
    except (OverflowError, ValueError, OSError):
        return 0


def marks(rep, t0, plot):
    """[{t, label}]: moments drawn across a plot: the job's first OOM kill on the memory
    plot (t in s after t0)."""
    s = rep.get("summary") or {}
    at = _num(s.get("oom_time"))
    if plot != "memory" or at is None or not s.get("oom_kills"):
        return []
    who = f"{clean(s.get('oom_command') or '?')} (pid {s['oom_pid']})" if s.get("oom_pid") \
        else "a process"
    return [{"t": round(at - t0, 6), "label": f"OOM kill: {who}"}]


def _num(v):
    # bool is an int: keep it out; NaN and infinities are not JSON
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (
            float("inf"), float("-inf")):
        return None
    return v


def _lookup(rep, name, per_node=False):
    """A request, allocation or recorded figure: from the end-of-job summary, else the
    largest of the nodes' summaries, else the model's other sections (the scheduler's
    figures), else a "tag:" name from the job's tags (its ad's attributes, in MB for
    memory).
    per_node: a node's own figure only (its summary, its tags), never the job's."""
    if name.startswith("tag:"):
        tag = name[4:]
        text = (rep["header"].get("tags") or {}).get(tag)
        try:
            return _num(float(text) * TAG_UNITS.get(tag, 1)) if text is not None else None
        except (TypeError, ValueError):
            return None   # an expression the job ad kept as text
    value = None if per_node else _num((rep.get("summary") or {}).get(name))
    if value is None:
        values = [_num(x.get(name)) for x in rep.get("hosts") or [] if isinstance(x, dict)]
        value = max((v for v in values if v is not None), default=None)
    if value is None and not per_node:
        sections = [v for k, v in rep.items() if isinstance(v, dict)
                    and k not in ("header", "summary")]
        sections += [x for v in list(sections) for x in v.values() if isinstance(x, dict)]
        value = next((_num(sec[name]) for sec in sections if _num(sec.get(name)) is not None),
                     None)
    return value


def references(rep):
    """{plot id: [{label, value, color, dash}]}: the job's requests and allocations (and
    the scheduler's recorded memory) as level lines. A job on several nodes is plotted a
    series per node, so its lines are a node's (the largest), never the job's total."""
    out = {}
    for plot, kind, names in REFERENCES:
        per_node = bool(rep.get("hosts")) and kind != "recorded"
        found = next(((label, v) for name, label in names
                      for v in [_lookup(rep, name, per_node)] if v is not None), None)
        if found and found[1] > 0:
            color, dash = REFERENCE_STYLE[kind]
            out.setdefault(plot, []).append({"label": found[0] + (" per node" if per_node
                                                                  else ""),
                                             "value": found[1], "color": color, "dash": dash})
    return out
