"""The configuration's own TOML reader gives what tomllib gives, or leaves the text to it."""
import os
import tomllib

import pytest
from hypothesis import given, settings, strategies as st

from jobmon import config
from jobmon.config import toml_subset

DEPLOY = os.path.join(os.path.dirname(__file__), "..", "deploy")


def tomllib_or_error(text):
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return "error"


def test_the_shipped_site_files_are_read_without_tomllib():
    for path in (os.path.join(DEPLOY, "jobmon.toml"), os.path.join(DEPLOY, "slurm", "jobmon.toml")):
        text = open(path, encoding="utf-8").read()
        got = toml_subset.parse(text)
        assert got is not None, path
        assert got == tomllib.loads(text)


def test_plain_values_comments_and_headers():
    text = ("top = 1\n[s]  # the section\na = \"x # y\" # c\nb = -1.5e3\nc = 'C:\\x'\n"
            "d=true\ne = +0\nf = 1E+05\ng = \"\tü\"\n")
    assert toml_subset.parse(text) == tomllib.loads(text) == {
        "top": 1, "s": {"a": "x # y", "b": -1500.0, "c": "C:\\x", "d": True, "e": 0,
                        "f": 100000.0, "g": "\tü"}}


def test_what_it_leaves_to_tomllib():
    for text in ('a = "x\\ty"', "a = [1, 2]", "a.b = 1", "a = 1\na = 2", "[s]\n[s]",
                 "a = 1_000", "a = 0x10", "a = 01", "a = 1.", "a = .5", "a = inf",
                 "a = 1979-05-27", '"a" = 1', "[ s ]", "[[s]]", "a = \"x\" y", "a = 1 2",
                 "a = 1\r\n", 'a = """x"""', "a = '''x'''", "a = {b = 1}", "a =", "\ufeffa = 1"):
        assert toml_subset.parse(text) is None, text


def test_a_file_it_leaves_is_still_read_and_checked(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[slurm]\ninterval = 2_0.5\nwarnings = "/var/log/jobmon\\u002elog"\n')
    assert config.load(str(f))["slurm"]["warnings"] == "/var/log/jobmon.log"
    f.write_text("[slurm]\ninterval = 1.\n")
    with pytest.raises(config.ConfigError, match="line 2"):   # tomllib's, with its position
        config.load(str(f))


KEYS = st.sampled_from(["a", "b", "max_bytes", "k-1", "0", "a.b", "\"q\"", "é"])
VALUES = st.one_of(
    st.integers(-10**20, 10**20).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["true", "false", "True", "1.", ".5", "01", "-0", "+1", "1e5", "1E-05",
                     "1_0", "inf", "nan", "0x1f", "", "1 2", "[1]", "{}", "2026-11-25"]),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
    .flatmap(lambda s: st.sampled_from([f'"{s}"', f"'{s}'", s])),
)
COMMENTS = st.sampled_from(["", " # c", "# c", "\t#\tc", " #", " x", " # \x01"])
LINES = st.one_of(
    st.tuples(KEYS, st.sampled_from([" = ", "=", " =\t", " "]), VALUES, COMMENTS)
    .map("".join),
    st.tuples(st.sampled_from(["[s]", "[t]", "[ s ]", "[[s]]", "[s.t]", "[]", "[s"]),
              COMMENTS).map("".join),
    st.sampled_from(["", "# note", "  ", "\t# x", "\r", "\x7f"]),
)


@settings(max_examples=3000, deadline=None)
@given(st.lists(LINES, max_size=8))
def test_it_gives_what_tomllib_gives_or_nothing(lines):
    text = "\n".join(lines)
    got = toml_subset.parse(text)
    if got is not None:
        assert got == tomllib_or_error(text), text
