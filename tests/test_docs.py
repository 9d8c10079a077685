"""docs/metrics.md is generated from jobmon.metrics and must not drift from it."""
import os

from jobmon import metrics

from helpers import REPO


def test_metrics_md_matches_table():
    path = os.path.join(REPO, "docs", "metrics.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text == metrics.markdown(), (
        "docs/metrics.md is out of date; regenerate it with\n"
        "  .venv/bin/python -c 'import jobmon.metrics as m; print(m.markdown(), end=\"\")'"
        " > docs/metrics.md")


def test_every_metric_documented_with_unit():
    text = metrics.markdown()
    for name, unit, kind, meaning in metrics.SAMPLE_FIELDS:
        assert f"| `{name}` | {unit} | {kind} |" in text
        assert kind in ("counter", "gauge") and meaning
    for name, unit, meaning in metrics.SUMMARY_FIELDS:
        assert f"| `{name}` | {unit} |" in text and meaning
