"""A metric declared beside its probe (jobmon.metrics.declared): a declaration that leaves a
mode unsaid, names a key nobody reads or folds in a way the summary does not know is
refused when jobmon loads; declared rows keep the places the hand tables give them."""
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
    {"report": ({"group": "gpu", "field": "x", "label": "x", "unit": ""},)},
])
def test_a_declaration_that_does_not_say_enough_is_refused(change):
    with pytest.raises(ValueError):
        declared.Metric(dict(GOOD, **change), "test")


def test_a_declaration_says_each_mode_in_the_docs():
    m = declared.Metric(GOOD, "test")
    assert m.method() == "exact"
    assert m.note() == "cgroup-v2: a; cgroup-v1: b; procfs: none (why)"


def test_a_bare_name_keeps_its_place_and_the_rest_follow():
    rows = (("a",), "b", ("c",))
    got = declared.place(rows, {"b": ("b", "declared"), "d": ("d", "declared")})
    assert got == (("a",), ("b", "declared"), ("c",), ("d", "declared"))
    with pytest.raises(ValueError):
        declared.place(("e",), {})


def test_every_declared_figure_has_its_fold_and_its_parts():
    for name, (part, whole) in declared.PERCENTS.items():
        assert part in declared.FIGURES and (whole in declared.FIGURES
                                             or whole == "wall_seconds"), name
    for m in declared.DECLARED:
        assert all(r["field"] in declared.FIGURES for r in m.report), m.name
        assert all(a["field"] in declared.FIGURES for a in m.advice), m.name
