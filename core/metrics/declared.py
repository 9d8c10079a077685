"""Metrics declared once, beside the probe that produces them (docs/developing.md, "Add a
metric"): everything jobmon knows of such a metric comes from its declaration.

A probe module lists what it produces in METRICS, one dict per metric, with these keys:

  name, unit, range, kind, meaning  the sample field (as a row of SAMPLE_FIELDS)
  scope    job (the default), device or node: what the figure covers
  modes    {mode: (method, how)} for each of cgroup-v2, cgroup-v1 and procfs: how the
           figure is obtained there (a method of jobmon.metrics_doc.METHODS), or
           (None, why there is none)
  read     {mode: (controller, file, key, per)}: where a cgroup probe reads it, a
           'key value' line of a file of the job's cgroup (v1: of that controller's
           cgroup; key None: the file is one number); the value divided by per (None:
           an integer as it is)
  summary  its end-of-job figures, dicts: name, fold (last: the counter's last value;
           max: the largest sample; percent: 100 x of[0] / of[1], two figures of the
           summary or wall_seconds), combine (a multi-node run's nodes: sum or max),
           unit, range, method (by default that of the metric for last, estimated for
           max, derived for percent) and meaning
  report   rows of the job report (`jobmon query`, the HTML page): dicts of group (where
           in the report: cpu, memory), field (of the summary), label and unit; a row of no
           value or 0 is left out
  panel    the single-job dashboard's panels: dicts of title (one panel per title),
           how (rate: per second, x scale; mean; max), alias, unit (Grafana's), scale,
           description
  advice   advice rules: dicts of rule (its name), field (of the summary), setting (its
           threshold, a key of the site's [report]), default, text (str.format'ed with
           value and the summary's fields) and doc (what docs/reports.md says of it)

This module turns them into the tables the rest reads: jobmon.metrics places the sample
and summary rows, jobmon.metrics_doc their scope and method, the summary fold its LAST,
PEAKS and PERCENTS, the report its rows, the dashboards their panels, the advice its rules
and [report] its settings. Standard library only and no collections (the per-job path
imports it)."""
from ..probes import cgroup

# every module that declares metrics
DECLARING = (("core/probes/cgroup.py", cgroup.METRICS),)

MODES = ("cgroup-v2", "cgroup-v1", "procfs")
KEYS = {"name", "unit", "range", "kind", "meaning", "scope", "modes", "read", "summary",
        "report", "panel", "advice"}
FIGURE_KEYS = {"name", "fold", "of", "combine", "unit", "range", "method", "meaning"}
FOLDS = ("last", "max", "percent")
REPORT_GROUPS = ("cpu", "memory")


class Metric:
    """One declaration, checked."""

    __slots__ = tuple(sorted(KEYS)) + ("source",)

    def __init__(self, d, source):
        odd = set(d) - KEYS
        if odd or not {"name", "unit", "range", "kind", "meaning", "modes"} <= set(d):
            raise ValueError(f"{source}: metric {d.get('name')!r}: keys {sorted(odd)} unknown "
                             "or one of name, unit, range, kind, meaning, modes missing")
        if set(d["modes"]) != set(MODES) or set(d.get("read", ())) - set(MODES):
            raise ValueError(f"{source}: {d['name']}: modes must say each of {MODES}")
        if d["kind"] not in ("counter", "gauge"):
            raise ValueError(f"{source}: {d['name']}: kind is counter or gauge")
        self.source, self.scope = source, "job"
        for k in ("read", "summary", "report", "panel", "advice"):
            setattr(self, k, ())
        self.read = {}
        for k, v in d.items():
            setattr(self, k, v)
        for f in self.summary:
            if set(f) - FIGURE_KEYS or f.get("fold") not in FOLDS or \
                    f.get("combine") not in ("sum", "max"):
                raise ValueError(f"{source}: {self.name}: summary figure {f.get('name')!r}")
        for r in self.report:
            if r["group"] not in REPORT_GROUPS:
                raise ValueError(f"{source}: {self.name}: report group {r['group']!r}")

    def method(self):
        """The metric's method where it is measured (the first mode that measures it)."""
        return next(m for m, _how in (self.modes[x] for x in MODES) if m)

    def note(self):
        """How each mode obtains it, for docs/metrics.md."""
        return "; ".join(f"{x}: {how}" if self.modes[x][0] else f"{x}: none ({how})"
                         for x in MODES for how in (self.modes[x][1],))


DECLARED = tuple(Metric(d, src) for src, metrics in DECLARING for d in metrics)
SAMPLE_ROWS = {m.name: (m.name, m.unit, m.range, m.kind, m.meaning) for m in DECLARED}
# summary field -> (metric, figure)
FIGURES = {f["name"]: (m, f) for m in DECLARED for f in m.summary}
SUMMARY_ROWS = {n: (n, f.get("unit", m.unit), f.get("range", m.range), f["meaning"])
                for n, (m, f) in FIGURES.items()}
# the fold (jobmon.summary): summary field <- the sample field's last value / largest value;
# percent: summary field <- (numerator, denominator) of the summary
LAST = {n: m.name for n, (m, f) in FIGURES.items() if f["fold"] == "last"}
PEAKS = {m.name: n for n, (m, f) in FIGURES.items() if f["fold"] == "max"}
PERCENTS = {n: tuple(f["of"]) for n, (m, f) in FIGURES.items() if f["fold"] == "percent"}
# a multi-node run (jobmon.report.model.combine): added up, or its largest node's
ADDITIVE = tuple(n for n, (_m, f) in FIGURES.items() if f["combine"] == "sum")
LARGEST = tuple(n for n, (_m, f) in FIGURES.items() if f["combine"] == "max")
# report group -> [(field, label, unit)]
REPORT_ROWS = {g: [(r["field"], r["label"], r["unit"]) for m in DECLARED for r in m.report
                   if r["group"] == g] for g in REPORT_GROUPS}
# dashboard panel title -> [(sample field, panel declaration)]
PANELS = {}
for _m in DECLARED:
    for _p in _m.panel:
        PANELS.setdefault(_p["title"], []).append((_m.name, _p))
RULES = tuple(a for m in DECLARED for a in m.advice)
# [report] settings of the declared rules: key -> (type, default)
SETTINGS = {a["setting"]: (type(a["default"]), a["default"]) for a in RULES}


def scope_method(name):
    """(scope, method, note) of a declared sample or summary field, else None."""
    for m in DECLARED:
        if m.name == name:
            return m.scope, m.method(), m.note()
    if name not in FIGURES:
        return None
    m, f = FIGURES[name]
    default = {"last": m.method(), "max": "estimated", "percent": "derived"}[f["fold"]]
    return m.scope, f.get("method", default), None


def place(rows, declared):
    """The hand table `rows` with each bare name replaced by that declared row (where a
    declared metric keeps its place), then every declared row not placed."""
    names = {r for r in rows if isinstance(r, str)}
    missing = names - set(declared)
    if missing:
        raise ValueError(f"placed but not declared: {sorted(missing)}")
    return tuple(declared[r] if isinstance(r, str) else r for r in rows) + \
        tuple(v for k, v in declared.items() if k not in names)
