"""docs/metrics.md is generated from the metric table (jobmon.metrics_doc) and must not drift
from it."""
import os

from jobmon import metrics, metrics_doc

from helpers import REPO


def test_metrics_md_matches_table():
    path = os.path.join(REPO, "docs", "metrics.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text == metrics_doc.markdown(), (
        "docs/metrics.md is out of date; regenerate it with\n"
        "  .venv/bin/python -c 'import jobmon.metrics_doc as m; print(m.markdown(), end=\"\")'"
        " > docs/metrics.md")


def test_every_metric_documented_with_unit():
    text = metrics_doc.markdown()
    for name, unit, _range, kind, meaning in metrics.SAMPLE_FIELDS:
        assert f"| `{name}` | {unit} | {kind} |" in text
        assert kind in ("counter", "gauge") and meaning
    for name, unit, _range, meaning in metrics.SUMMARY_FIELDS:
        assert f"| `{name}` | {unit} |" in text and meaning


def test_every_figure_has_a_scope_and_a_method():
    """So that no report shows a node's or a device's figure as a job's own: a new field
    goes into jobmon.metrics_doc's table too."""
    names = [f[0] for f in metrics.SAMPLE_FIELDS + metrics.PROCS_FIELDS] + \
        [f[0] for f in metrics.SUMMARY_FIELDS]
    missing = [n for n in names if metrics_doc.figure(n) is None]
    assert not missing, f"no scope and method in core/metrics_doc.py for {missing}"
    for n in names:
        f = metrics_doc.figure(n)
        assert f["scope"] in metrics_doc.SCOPES and f["method"] in metrics_doc.METHODS, n
    assert set(metrics_doc.FIGURES) == set(names)          # nothing stale in the table
    text = metrics_doc.markdown()
    assert "| `cpu_energy_joules` | J | counter | job | apportioned;" in text
    assert "| `gpu_util_percent` | % | gauge | device | exact;" in text
