"""Metrics declared once, beside the code that produces them (docs/developing.md, "Adding a
metric"): everything jobmon knows of a figure comes from its declaration.

A module lists the sample fields it produces in METRICS, one dict per metric:

  name, unit, range, kind, meaning  the sample field (as a row of SAMPLE_FIELDS)
  scope    job (the default), device or node: what the figure covers
  method   how it is obtained (a method of jobmon.metrics_doc.METHODS) and, optionally,
  note     what changes it in a mode; or, instead of both:
  modes    {mode: (method, how)} for each of cgroup-v2, cgroup-v1 and procfs: how the
           figure is obtained there, or (None, why there is none)
  read     {mode: (controller, file, key, per)}: where a cgroup probe reads it, a
           'key value' line of a file of the job's cgroup (v1: of that controller's
           cgroup; key None: the file is one number); the value divided by per (None:
           an integer as it is)
  summary  its end-of-job figures, dicts: name, fold (last: the counter's last value;
           max: the largest sample; percent: 100 x of[0] / of[1], two figures of the
           summary or wall_seconds), combine (a multi-node run's nodes: sum or max),
           unit, range, method (by default that of the metric for last, estimated for
           max, derived for percent) and meaning
  report   rows of the job report's totals (`jobmon query`, the HTML page): dicts of group
           (where in the report: one of REPORT_GROUPS), field (of the summary), label, unit
           and optionally how (rate: the field per second of wall time) and zero (shown: a
           row of 0 is shown; by default a row of no value or 0 is left out); the order of
           the rows jobmon.report.model names, the others follow in their group
  panel    the single-job dashboard's panels: dicts of title (one panel per title: its
           columns in the order declared, the first one's unit and decimals the panel's),
           how (rate: per second, x scale; mean; max), alias, unit (Grafana's), scale,
           decimals, description (the panel's: its columns' joined); where the panel goes
           among the rest: deploy/grafana/generator/view_job.py (after the run queue's,
           unless named there)
  advice   advice rules: dicts of rule (its name), field (of the summary), setting (its
           threshold, a key of the site's [report]), default, text (str.format'ed with
           value and the summary's fields) and doc (what docs/reports.md says of it)

and the end-of-job figures its own code computes (the fold's totals, efficiency, OOM, the
record's identity...) in FIGURES, one dict per figure: name, unit, range, scope, method,
note and meaning as above, and optionally
  fold     how jobmon.summary's fold makes it from the samples: last (the last sample's
           value of the sample field of its name), max (the largest sample of the field
           `of`, by default its own name), seen (the last value any sample had: the node
           reader's counters, which a sample may lack) or computed (the fold's own code);
           absent: not from the samples' fold (its module computes it)
  combine  a multi-node run's value (jobmon.report.model.combine): sum of the nodes' or
           max, their largest; absent: the report's own rule (the first node's, ...)
  report   its rows of the job report, as a metric's (field: the figure's name)
A figure named as a sample field is that field's end-of-job value: its unit and range are
the field's unless it says otherwise, its scope, method and note are the field's.

This module reads the probes' declarations (DECLARING) and turns them into the tables the
rest reads: jobmon.metrics places the sample and summary rows (samples.py and summary.py
hold only their order, and add the declarations of jobmon.summary, the job's record and
the scheduler interface, which import the tables this module makes), jobmon.metrics_doc
their scope and method, the summary fold its LAST, PEAKS, SEEN and PERCENTS (with its own
FIGURES' folds: folds()), the report its multi-node combination (jobmon.report.model:
ADDITIVE, LARGEST) and rows, the dashboards their panels, the advice its rules and [report]
its settings.
Standard library only and no collections (the per-job path imports it)."""
from ..probes import breakdown, cgroup, gpu_node, interface, netfs, node_energy, node_net, pressure

# every module of jobmon.probes that declares metrics, in the order their new fields follow
# the existing ones, and the fold keeps their totals in
DECLARING = (("core/probes/pressure.py", pressure), ("core/probes/interface.py", interface),
             ("core/probes/cgroup.py", cgroup), ("core/probes/gpu_node.py", gpu_node),
             ("core/probes/node_energy.py", node_energy), ("core/probes/node_net.py", node_net),
             ("core/probes/netfs.py", netfs))
# the per-process breakdown's fields (jobmon.metrics.PROCS_FIELDS)
BREAKDOWN = (("core/probes/breakdown.py", breakdown),)

MODES = ("cgroup-v2", "cgroup-v1", "procfs")
SCOPES = ("job", "device", "node")
KEYS = {"name", "unit", "range", "kind", "meaning", "scope", "method", "note", "modes", "read",
        "summary", "report", "panel", "advice"}
FIGURE_KEYS = {"name", "fold", "of", "combine", "unit", "range", "method", "meaning"}
OWN_FIGURE_KEYS = {"name", "unit", "range", "scope", "method", "note", "meaning", "fold", "of",
                   "combine", "report"}
FOLDS = ("last", "max", "percent")
OWN_FOLDS = (None, "last", "max", "seen", "computed")
COMBINES = ("sum", "max")
REPORT_GROUPS = ("run", "cpu", "memory", "io", "processes", "gpu")
ROW_KEYS = {"group", "field", "label", "unit", "how", "zero"}


class Metric:
    """One sample field's declaration, checked."""

    __slots__ = ("name", "unit", "range", "kind", "meaning", "scope", "modes", "read",
                 "summary", "report", "panel", "advice", "how", "notes", "source")

    def __init__(self, d, source):
        odd = set(d) - KEYS
        if odd or not {"name", "unit", "range", "kind", "meaning"} <= set(d) or \
                ("modes" in d) == ("method" in d) or ("note" in d and "modes" in d):
            raise ValueError(f"{source}: metric {d.get('name')!r}: keys {sorted(odd)} unknown, "
                             "one of name, unit, range, kind, meaning missing, or not one of "
                             "method and modes")
        if "modes" in d and (set(d["modes"]) != set(MODES) or set(d.get("read", ())) - set(MODES)):
            raise ValueError(f"{source}: {d['name']}: modes must say each of {MODES}")
        if d["kind"] not in ("counter", "gauge"):
            raise ValueError(f"{source}: {d['name']}: kind is counter or gauge")
        if d.get("scope", "job") not in SCOPES:
            raise ValueError(f"{source}: {d['name']}: scope is one of {SCOPES}")
        self.source, self.scope, self.modes, self.read = source, "job", None, {}
        self.how, self.notes = d.get("method"), d.get("note")
        for k in ("summary", "report", "panel", "advice"):
            setattr(self, k, ())
        for k, v in d.items():
            if k not in ("method", "note"):
                setattr(self, k, v)
        for f in self.summary:
            if set(f) - FIGURE_KEYS or f.get("fold") not in FOLDS or \
                    f.get("combine") not in COMBINES:
                raise ValueError(f"{source}: {self.name}: summary figure {f.get('name')!r}")
        rows(self.report, source, self.name)

    def row(self):
        return (self.name, self.unit, self.range, self.kind, self.meaning)

    def method(self):
        """The metric's method where it is measured (the first mode that measures it)."""
        if self.how:
            return self.how
        return next(m for m, _how in (self.modes[x] for x in MODES) if m)

    def note(self):
        """What changes the method in a mode, for docs/metrics.md."""
        if self.how:
            return self.notes
        return "; ".join(f"{x}: {how}" if self.modes[x][0] else f"{x}: none ({how})"
                         for x in MODES for how in (self.modes[x][1],))


class Figure:
    """One end-of-job figure a module computes itself (its FIGURES), checked; `metric`: the
    sample field of its name, where there is one."""

    __slots__ = ("name", "unit", "range", "meaning", "scope", "how", "notes", "source", "fold",
                 "of", "combine", "report")

    def __init__(self, d, source, metric=None):
        odd = set(d) - OWN_FIGURE_KEYS
        need = {"name", "meaning"} if metric else {"name", "unit", "range", "method", "meaning"}
        if odd or not need <= set(d) or metric and {"scope", "method", "note"} & set(d):
            raise ValueError(f"{source}: figure {d.get('name')!r}: keys {sorted(odd)} unknown "
                             f"or one of {sorted(need)} missing (a sample field's figure has "
                             "its scope and method)")
        if d.get("scope", "job") not in SCOPES:
            raise ValueError(f"{source}: {d['name']}: scope is one of {SCOPES}")
        if d.get("fold") not in OWN_FOLDS or d.get("combine", "sum") not in COMBINES or \
                "of" in d and (d.get("fold") != "max" or d["of"] == d["name"]):
            raise ValueError(f"{source}: {d['name']}: fold is one of {OWN_FOLDS[1:]}, combine "
                             f"one of {COMBINES}, of only a max's other field")
        self.source, self.name, self.meaning = source, d["name"], d["meaning"]
        self.fold, self.of, self.combine = d.get("fold"), d.get("of", d["name"]), d.get("combine")
        self.report = rows(tuple(dict(r, field=self.name) for r in d["report"]), source,
                           self.name) if "report" in d else ()
        self.unit = d["unit"] if "unit" in d else metric.unit
        self.range = d["range"] if "range" in d else metric.range
        if metric:
            self.scope, self.how, self.notes = metric.scope, metric.method(), metric.note()
        else:
            self.scope, self.how, self.notes = d.get("scope", "job"), d["method"], d.get("note")

    def row(self):
        return (self.name, self.unit, self.range, self.meaning)

    def method(self):
        return self.how

    def note(self):
        return self.notes


def rows(report, source, name):
    """A declaration's report rows, checked."""
    for r in report:
        if set(r) - ROW_KEYS or not {"group", "field", "label", "unit"} <= set(r) or \
                r["group"] not in REPORT_GROUPS or r.get("how", "total") not in ("total", "rate") \
                or r.get("zero", "shown") != "shown":
            raise ValueError(f"{source}: {name}: report row {r.get('label')!r}: group one of "
                             f"{REPORT_GROUPS}, keys of {sorted(ROW_KEYS)}")
    return report


def metrics(modules):
    """The Metric of each METRICS entry of (source, module) pairs."""
    return tuple(Metric(d, src) for src, mod in modules for d in getattr(mod, "METRICS", ()))


def figures(modules, sample):
    """The Figure of each FIGURES entry of (source, module) pairs; sample: {name: Metric}."""
    return tuple(Figure(d, src, sample.get(d["name"])) for src, mod in modules
                 for d in getattr(mod, "FIGURES", ()))


def ordered(order, declared):
    """The declarations in `order` (names: the existing fields' order, which the embedded
    store's columns and existing stores depend on), then every other one in the order
    declared. A field declared twice, or ordered but declared nowhere, is refused."""
    by = {}
    for d in declared:
        if d.name in by:
            raise ValueError(f"{d.name} declared twice: {by[d.name].source}, {d.source}")
        by[d.name] = d
    placed = set(order)
    missing = placed - set(by)
    if missing or len(placed) != len(order):
        raise ValueError(f"ordered but not declared, or ordered twice: {sorted(missing)}")
    return tuple(by[n] for n in order) + tuple(d for d in declared if d.name not in placed)


def folded(m, f):
    """A Metric's summary figure `f` as a Figure (its scope and method by its fold)."""
    if f["name"] == m.name:
        out = Figure({"name": f["name"], "meaning": f["meaning"]}, m.source, m)
    else:
        method = f.get("method", {"last": m.method(), "max": "estimated",
                                  "percent": "derived"}[f["fold"]])
        out = Figure({"name": f["name"], "unit": f.get("unit", m.unit),
                      "range": f.get("range", m.range), "scope": m.scope, "method": method,
                      "meaning": f["meaning"]}, m.source)
    # the fold reads these from FIGURES below (last, max of this metric, percent of two)
    out.fold, out.of, out.combine = f["fold"], m.name, f["combine"]
    return out


def folds(own):
    """(last, peaks, seen) of FIGURES entries (their dicts: jobmon.metrics.summary checks
    them): {summary field: sample field} of their last values, {sample field: summary
    field} of their largest, (field,) of the last value seen."""
    last = {d["name"]: d["name"] for d in own if d.get("fold") == "last"}
    peaks = {d.get("of", d["name"]): d["name"] for d in own if d.get("fold") == "max"}
    return last, peaks, tuple(d["name"] for d in own if d.get("fold") == "seen")


DECLARED = metrics(DECLARING)
SAMPLE = {m.name: m for m in DECLARED}
PROCS = metrics(BREAKDOWN)
# the end-of-job figures the probes' modules declare: their folds' and their own
OWN = figures(DECLARING, SAMPLE)
FOLDED = tuple(folded(m, f) for m in DECLARED for f in m.summary) + OWN
# summary field -> (metric, figure) of the folded ones
FIGURES = {f["name"]: (m, f) for m in DECLARED for f in m.summary}
# the fold (jobmon.summary): summary field <- the sample field's last value; sample field
# -> summary field of its largest value; the last value seen (the probes' own figures, then
# their metrics'); percent: summary field <- (numerator, denominator) of the summary
_own = folds(tuple(d for _src, mod in DECLARING for d in getattr(mod, "FIGURES", ())))
LAST = dict(_own[0], **{n: m.name for n, (m, f) in FIGURES.items() if f["fold"] == "last"})
PEAKS = dict(_own[1], **{m.name: n for n, (m, f) in FIGURES.items() if f["fold"] == "max"})
SEEN = _own[2]
PERCENTS = {n: tuple(f["of"]) for n, (m, f) in FIGURES.items() if f["fold"] == "percent"}
# dashboard panel title -> [(sample field, panel declaration)]
PANELS = {}
for _m in DECLARED:
    for _p in _m.panel:
        PANELS.setdefault(_p["title"], []).append((_m.name, _p))
RULES = tuple(a for m in DECLARED for a in m.advice)
# [report] settings of the declared rules: key -> (type, default)
SETTINGS = {a["setting"]: (type(a["default"]), a["default"]) for a in RULES}
