"""A metric declared beside its probe (jobmon.metrics.declared): a declaration that leaves a
mode unsaid, names a key nobody reads or folds in a way the summary does not know is
refused when jobmon loads; every field is declared once, and keeps its place in the tables
(the order of the embedded store's columns)."""
import pytest

from jobmon.metrics import declared

GOOD = {"name": "x_count", "unit": "count", "range": "count", "kind": "counter",
        "meaning": "m", "modes": {"cgroup-v2": ("exact", "a"), "cgroup-v1": ("exact", "b"),
                                  "procfs": (None, "why")}}


@pytest.mark.parametrize("change", [
    {"modes": {"cgroup-v2": ("exact", "a"), "cgroup-v1": ("exact", "b")}},   # procfs unsaid
    {"colour": "red"},                                                     # a key none reads
    {"kind": "rate"},
    {"summary": ({"name": "x", "fold": "mean", "combine": "sum", "meaning": "m"},)},
    {"summary": ({"name": "x", "fold": "last", "meaning": "m"},)},          # combine unsaid
    {"report": ({"group": "disk", "field": "x", "label": "x", "unit": ""},)},
    {"report": ({"group": "cpu", "field": "x", "label": "x", "unit": "", "zero": "hidden"},)},
])
def test_a_declaration_that_does_not_say_enough_is_refused(change):
    with pytest.raises(ValueError):
        declared.Metric(dict(GOOD, **change), "test")


def test_a_declaration_says_each_mode_in_the_docs():
    m = declared.Metric(GOOD, "test")
    assert m.method() == "exact"
    assert m.note() == "cgroup-v2: a; cgroup-v1: b; procfs: none (why)"


def test_a_declaration_may_say_its_method_once_for_every_mode():
    d = {k: v for k, v in GOOD.items() if k != "modes"}
    m = declared.Metric(dict(d, method="estimated", note="procfs mode: a bound"), "test")
    assert (m.method(), m.note()) == ("estimated", "procfs mode: a bound")
    with pytest.raises(ValueError):   # both, or neither
        declared.Metric(dict(GOOD, method="exact"), "test")
    with pytest.raises(ValueError):
        declared.Metric(d, "test")
    with pytest.raises(ValueError):
        declared.Metric(dict(d, method="exact", scope="cluster"), "test")


def test_a_figure_of_a_sample_field_has_that_fields_scope_and_method():
    metric = declared.Metric(dict(GOOD, scope="device"), "test")
    f = declared.Figure({"name": "x_count", "meaning": "the run's total"}, "test", metric)
    assert (f.row(), f.scope, f.method()) == (("x_count", "count", "count", "the run's total"),
                                              "device", "exact")
    with pytest.raises(ValueError):   # its own method would contradict the field's
        declared.Figure({"name": "x_count", "meaning": "m", "method": "derived"}, "t", metric)
    with pytest.raises(ValueError):   # a figure of its own says its unit, range and method
        declared.Figure({"name": "y", "unit": "s", "meaning": "m"}, "test")


def test_the_order_keeps_every_existing_field_in_place_and_the_new_ones_follow():
    a, b, c = (declared.Figure({"name": n, "unit": "", "range": None, "method": "recorded",
                                "meaning": "m"}, "test") for n in "abc")
    assert declared.ordered(("b", "a"), (a, b, c)) == (b, a, c)
    with pytest.raises(ValueError):   # ordered, declared nowhere
        declared.ordered(("e",), (a,))
    with pytest.raises(ValueError):   # declared twice
        declared.ordered((), (a, b, a))


def test_every_declared_figure_has_its_fold_and_its_parts():
    for name, (part, whole) in declared.PERCENTS.items():
        assert part in declared.FIGURES and (whole in declared.FIGURES
                                             or whole == "wall_seconds"), name
    for m in declared.DECLARED:
        assert all(r["field"] in declared.FIGURES for r in m.report), m.name
        assert all(a["field"] in declared.FIGURES for a in m.advice), m.name


@pytest.mark.parametrize("change", [
    {"fold": "mean"}, {"combine": "first"},
    {"fold": "last", "of": "other"},                  # only a max reads another field
    {"fold": "max", "of": "y"},                       # its own name is the default
])
def test_a_figure_that_folds_or_combines_in_an_unknown_way_is_refused(change):
    with pytest.raises(ValueError):
        declared.Figure(dict({"name": "y", "unit": "s", "range": "wall", "method": "exact",
                              "meaning": "m"}, **change), "test")


def test_the_fold_and_the_multi_node_combination_are_the_declared_ones():
    """Every summary figure is folded and combined as declared, and nothing else is: the
    fold's tables and the report's come from the declarations alone."""
    from jobmon.metrics.summary import SUMMARY_FIGURES
    from jobmon.report import model
    from jobmon.summary import fold
    figs = {f.name: f for f in SUMMARY_FIGURES}
    assert fold.LAST == {f.name: f.of for f in SUMMARY_FIGURES if f.fold == "last"}
    assert fold.PEAKS == {f.of: f.name for f in SUMMARY_FIGURES if f.fold == "max"}
    assert set(fold.SEEN) == {f.name for f in SUMMARY_FIGURES if f.fold == "seen"}
    assert fold.SEEN and fold.PEAKS["mem_resident_peak_bytes"] == "rss_peak_bytes"
    # two nodes: each declared figure is their sum or their largest, as it says
    combined = [n for n, f in figs.items() if f.combine]
    both = model.combine([dict.fromkeys(combined, 1), dict.fromkeys(combined, 2)])
    for n in combined:
        assert both[n] == {"sum": 3, "max": 2}[figs[n].combine], n
    assert {n for n, f in figs.items() if f.combine} == set(model.ADDITIVE + model.LARGEST)


def test_every_field_is_defined_in_exactly_one_place():
    """samples.py and summary.py hold the order of the names only; every sample, summary and
    breakdown field comes from exactly one declaration, with a scope and a method, and
    metrics_doc keeps no table of its own."""
    import ast
    import os

    from jobmon import metrics, metrics_doc
    from jobmon.metrics import samples, summary
    from helpers import REPO
    for mod in (samples, summary):
        assert all(isinstance(n, str) for n in mod.ORDER)
        tree = ast.parse(open(mod.__file__, encoding="utf-8").read())
        strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                   and isinstance(n.value, str) and " " in n.value]
        assert strings == [ast.get_docstring(tree)], (mod.__name__, strings[1:])  # no meanings
    with open(os.path.join(REPO, "core", "metrics_doc.py"), encoding="utf-8") as f:
        assert "_TABLE" not in f.read()
    declarations = {}
    modules = dict(declared.DECLARING + declared.BREAKDOWN + samples.SUMMARY_DECLARING +
                   summary.DECLARING)   # a module may declare sample and summary fields
    for src, mod in modules.items():
        for d in getattr(mod, "METRICS", ()):
            declarations.setdefault(("sample" if (src, mod) not in declared.BREAKDOWN
                                     else "procs", d["name"]), []).append(src)
        for d in getattr(mod, "FIGURES", ()):
            declarations.setdefault(("summary", d["name"]), []).append(src)
    for m in declared.DECLARED:
        for f in m.summary:
            declarations.setdefault(("summary", f["name"]), []).append(m.source)
    twice = {k: v for k, v in declarations.items() if len(v) != 1}
    assert not twice, twice
    tables = {"sample": metrics.SAMPLE_FIELDS, "summary": metrics.SUMMARY_FIELDS,
              "procs": metrics.PROCS_FIELDS}
    for table, rows in tables.items():
        assert sorted(r[0] for r in rows) == sorted(n for t, n in declarations if t == table)
        for r in rows:
            f = metrics_doc.figure(r[0])
            assert f["scope"] in metrics_doc.SCOPES and f["method"] in metrics_doc.METHODS


@pytest.mark.parametrize("first", ["jobmon.metrics", "jobmon.summary", "jobmon.summary.fold",
                                   "jobmon.config", "jobmon.metrics_doc", "jobmon.job.session",
                                   "jobmon.probes.cgroup", "jobmon.schedulers"])
def test_the_tables_load_whichever_module_is_imported_first(first):
    """jobmon.metrics reads declarations from jobmon.summary, whose fold reads jobmon.metrics'
    tables: each order of first imports gives the same tables."""
    import hashlib
    import subprocess
    import sys

    from jobmon import metrics
    code = (f"import {first}\nimport hashlib\nfrom jobmon import metrics\n"
            "print(hashlib.sha1(repr(metrics.SAMPLE_FIELDS + metrics.SUMMARY_FIELDS)"
            ".encode()).hexdigest())")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == hashlib.sha1(
        repr(metrics.SAMPLE_FIELDS + metrics.SUMMARY_FIELDS).encode()).hexdigest()


def test_the_reports_totals_are_the_declared_rows_each_once_in_its_place():
    """Every declared report row is in the report's totals once: named in its order, or
    after the rest of its group; a rate row is its field per second of the run."""
    from jobmon.report import model
    s = {r["field"]: 7 for r in model.REPORT_ROWS}
    rows = model.totals_rows(s, 10.0, 5.0)
    labels = [label for label, _v, _u in rows]
    for r in model.REPORT_ROWS:
        assert labels.count(r["label"]) == 1, r["label"]
        value = dict((label, v) for label, v, _u in rows)[r["label"]]
        assert value == (0.7 if r.get("how") == "rate" else 7), r["label"]
    groups = [e for e in model.TOTALS if e in declared.REPORT_GROUPS]
    assert sorted(groups) == sorted(declared.REPORT_GROUPS)   # each group has its place
    # the throttling rows, named nowhere in the report, follow the CPU group's named ones
    at = labels.index("held back by its CPU quota")
    assert labels[at - 1].startswith("waiting for a CPU")
