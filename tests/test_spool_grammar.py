"""The shipper's check of spool lines: possessive matching and learnt line shapes give
exactly the answers of the plain (backtracking) grammar, on jobmon's own lines and on
hostile mutations of them (hypothesis)."""
import re

from hypothesis import given, settings, strategies as st

from jobmon.influx import schema
from jobmon.influx import lineprotocol as lp
from jobmon.influx import grammar as g

# the same grammar without possessive repeats and atomic groups: what Python < 3.11 runs
PLAIN = re.compile(re.sub(rb"([*+?])\+", rb"\1", g.LINE.pattern).replace(b"(?>", b"(?:"))
assert PLAIN.pattern != g.LINE.pattern


def plain_first_bad(data, window=None):
    at = 0
    for line in data.splitlines(keepends=True):
        if not PLAIN.fullmatch(line) or not g.valid(line) or \
                (window and not window[0] <= int(line[-20:-1]) // 10**9 <= window[1]):
            return at
        at += len(line)
    return None


tag_value = st.text(alphabet=st.sampled_from(list('ab,= "\\\'\n\u00e9=')), min_size=1,
                    max_size=8)
number = st.one_of(st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False,
                                                            allow_infinity=False))


@st.composite
def spool_lines(draw):
    """Lines as jobmon writes them: samples and job points, several shapes."""
    out = []
    for _ in range(draw(st.integers(1, 6))):
        tags = {"job": draw(tag_value), "scheduler": "slurm"}
        if draw(st.booleans()):
            tags["partition"] = draw(tag_value)
        meas = draw(st.sampled_from(schema.MEASUREMENTS))
        keys = ["cpu_user_seconds", "procs_max" if meas == schema.JOB else "procs",
                "mem_peak_bytes", "interval" if meas == schema.JOB else "threads"]
        if meas == schema.PROCS:      # its own fields (the breakdown's text is a string)
            keys = ["procs", "window_seconds", "elapsed_seconds"]
        values = {k: draw(number) for k in draw(st.lists(
            st.sampled_from(keys), min_size=1, max_size=4, unique=True))}
        if meas == schema.PROCS:
            values = {k: v if k == "procs" else float(v) for k, v in values.items()}
            if draw(st.booleans()):
                values["procs_top"] = draw(tag_value)
        elif draw(st.booleans()):
            values["method"] = draw(tag_value)
        out.append(lp.point(meas, tags, values, 10**18 + draw(st.integers(0, 10**13))).encode())
    return b"".join(out)


@st.composite
def mutated(draw):
    data = bytearray(draw(spool_lines()))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        char = draw(st.sampled_from(list(b',= "\\\nai.-e0t')))
        if op == "insert":
            data.insert(at, char)
        elif op == "delete":
            del data[at]
        else:
            data[at] = char
    data = bytes(data)
    return data if data.endswith(b"\n") else data + b"\n"


LEARNING = g.Checker()   # shared across examples: it accumulates shapes


@given(data=mutated())
@settings(max_examples=1500, deadline=None)
def test_checker_answers_like_the_plain_grammar(data):
    want = plain_first_bad(data)
    assert g.Checker().first_bad(data) == want
    assert LEARNING.first_bad(data) == want


WINDOW = (10**9 + 2000, 10**9 + 8000)   # seconds; the lines drawn span 10**9 ... + 10**4
TIMED = g.Checker()
TIMED.set_window(*WINDOW)


@given(data=mutated())
@settings(max_examples=1500, deadline=None)
def test_a_checker_with_a_time_window_answers_like_the_grammar_and_the_window(data):
    want = plain_first_bad(data, WINDOW)
    fresh = g.Checker()
    fresh.set_window(*WINDOW)
    assert fresh.first_bad(data) == want
    assert TIMED.first_bad(data) == want


@given(lo=st.integers(0, 10**7 - 1), span=st.integers(0, 10**7), value=st.integers(0, 10**7 - 1))
def test_between_matches_the_numbers_of_its_range_and_no_other(lo, span, value):
    hi = min(lo + span, 10**7 - 1)
    pattern = re.compile(g.between(b"%07d" % lo, b"%07d" % hi))
    for v in (value, lo, hi, lo - 1, hi + 1):
        if 0 <= v < 10**7:
            assert bool(pattern.fullmatch(b"%07d" % v)) == (lo <= v <= hi)


@given(data=spool_lines())
@settings(max_examples=200, deadline=None)
def test_jobmon_lines_pass_and_their_shapes_are_learnt(data):
    c = g.Checker()
    assert c.first_bad(data) is None
    assert 1 <= len(c.shapes) <= data.count(b"\n")
    assert c.first_bad(data) is None and len(c.known.match(data).group()) == len(data)


def test_first_bad_is_the_offset_of_the_first_bad_line():
    good = lp.point("jobmon_sample", {"job": "a"}, {"procs": 1}, 10**18).encode()
    c = g.Checker()
    assert c.first_bad(good * 3) is None
    for bad in (b"cpu,job=a x=1 1000000000000000000\n",            # not our measurement
                b"jobmon_sample,job=a x=\"open 1000000000000000000\n",  # unterminated
                b"jobmon_sample,job=a x=1 10000\n",                   # short timestamp
                b"jobmon_sample x=1 1000000000000000000\n"):          # no tag
        assert c.first_bad(good * 2 + bad + good) == 2 * len(good)


def test_shipper_tags_are_removed_and_one_tag_kept():
    line = b"jobmon_sample,host=evil,job=a,user=root x=1 1000000000000000000\n"
    assert g.without_tags(line, (b"host", b"user")) == \
        b"jobmon_sample,job=a x=1 1000000000000000000\n"
    assert g.without_tags(b"jobmon_sample,user=root x=1 1000000000000000000\n", (b"user",)) \
        == b"jobmon_sample,job=unknown x=1 1000000000000000000\n"
