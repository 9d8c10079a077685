"""jobmon's schema within InfluxDB 3's rules: every table within 500 columns (tags +
fields + time), no name both a tag and a field in one table, no empty tag value ever
written or shipped."""
import re

from hypothesis import given, settings, strategies as st

from jobmon.influx import grammar, schema
from jobmon.ship.health import metrics_lines
from jobmon.ship.lines import LineReader
from jobmon.ship.state import REASONS, State
from jobmon.stores.influx import InfluxStore

COLUMNS_PER_TABLE = 500      # InfluxDB 3 Core and Enterprise (docs: "Limits")


def budget_problems(tables, limit=COLUMNS_PER_TABLE):
    """What breaks InfluxDB 3's schema rules in {measurement: (tags, fields)}."""
    out = []
    for m, (tags, fields) in sorted(tables.items()):
        if len(tags) + len(fields) + 1 > limit:
            out.append(f"{m}: {len(tags)} tags + {len(fields)} fields + time = "
                       f"{len(tags) + len(fields) + 1} columns, over {limit}")
        out += [f"{m}: {n!r} is a tag and a field" for n in sorted(set(tags) & set(fields))]
    return out


def tag_pairs(line):
    """[key, value] of each tag of one line of jobmon's line protocol (a backslash never
    ends a key or value jobmon writes: jobmon.influx.lineprotocol)."""
    head = re.match(r"(?:[^ \\]|\\.)+", line).group()
    return [re.split(r"(?<!\\)=", t, maxsplit=1) for t in re.split(r"(?<!\\),", head)[1:]]


def keys(line):
    """(measurement, tag keys, field keys) of one line."""
    head, fields = re.match(r"((?:[^ \\]|\\.)+) (.*) \d+$", line).groups()
    fields = re.findall(r'(?:^|,)((?:[^=\\]|\\.)+)=(?:"(?:[^"\\]|\\.)*"|[^,]*)', fields)
    return head.split(",")[0], [k for k, _v in tag_pairs(line)], fields


def tables(tmp_path):
    """Every table jobmon can come to hold: each key the shipper lets through from a
    spool file, and each its own points carry (every counter, every reason of loss)."""
    out = {m: (set(schema.ALL_TAGS), set(f)) for m, f in schema.STORED_TYPES.items()}
    state = State(str(tmp_path))
    state.last_success = 1.0
    for reason in REASONS:
        state.lose("someone", reason, 1, 2, 1)
    lines = metrics_lines(state, "wn1", "c1", {0: 10}, 1, 10**18)
    lines += InfluxStore.rollup_lines(1_700_000_000, [("run", "-", "{}"), ("batch", "ab12", "[]")])
    for line in lines.splitlines():
        m, tags, fields = keys(line)
        t, f = out.setdefault(m, (set(), set()))
        t.update(tags)
        f.update(fields)
    return out


def test_every_table_fits_the_column_budget_with_no_tag_named_like_a_field(tmp_path):
    got = tables(tmp_path)
    assert set(got) == {schema.SAMPLE, schema.JOB, schema.PROCS, schema.SHIPPER, schema.ACTION,
                        schema.ROLLUP}
    assert {"reason", "user"} <= got[schema.SHIPPER][0] and got[schema.SHIPPER][1]
    assert budget_problems(got) == []


def test_the_budget_fails_when_a_new_field_would_cross_it(tmp_path):
    tags, fields = tables(tmp_path)[schema.JOB]
    room = COLUMNS_PER_TABLE - len(tags) - len(fields) - 1
    fuller = fields | {f"new_{k}" for k in range(room)}
    assert budget_problems({schema.JOB: (tags, fuller)}) == []
    assert budget_problems({schema.JOB: (tags, fuller | {"one_more"})}) == [
        f"{schema.JOB}: {len(tags)} tags + {len(fields) + room + 1} fields + time = 501 "
        f"columns, over 500"]
    assert budget_problems({schema.JOB: (tags, fields | {"user"})}) == [
        f"{schema.JOB}: 'user' is a tag and a field"]


tag_text = st.sampled_from(["", " ", "\n", "\\", "a", "x y", "=", ","]) | st.text(max_size=4)


@given(job=st.fixed_dictionaries({
    "job": tag_text, "scheduler": st.sampled_from(["", "local", None]),
    "run": st.one_of(st.none(), st.integers(0, 3), tag_text),
    "tags": st.dictionaries(st.sampled_from(schema.PROMOTED_TAGS), tag_text)}),
    host=tag_text, cluster=tag_text)
@settings(max_examples=300, deadline=None)
def test_no_point_jobmon_writes_or_stamps_has_an_empty_tag(job, host, cluster):
    job = dict(job, start_time=1.7e9, method="procfs", command=["x"], interval=1.0)
    tags = schema.job_tags(job)
    lines = [schema.job_line(job), schema.job_line(job, {"wall_seconds": 1.0}),
             schema.sample_line(tags, {"time": 10**18, "procs": 1}),
             schema.procs_line(tags, {"time": 10**18, "top": [], "procs": 1})]
    for line in lines:
        assert all(k and v for k, v in tag_pairs(line)), line
    stamped = LineReader(host or "wn1", cluster, 1 << 20).node_prefix.decode()
    line = f"jobmon_sample,{stamped}job=1 procs=1i 1700000000000000000"
    assert all(k and v for k, v in tag_pairs(line)), line


def test_the_shipper_refuses_a_line_with_an_empty_tag_value():
    ok = b"jobmon_sample,job=1,partition=p procs=1i 1700000000000000000\n"
    checker = grammar.Checker()
    assert checker.first_bad(ok * 2) is None
    for bad in (b"jobmon_sample,job=1,partition= procs=1i 1700000000000000000\n",
                b"jobmon_sample,job=,partition=p procs=1i 1700000000000000000\n",
                b"jobmon_sample,=1,job=1 procs=1i 1700000000000000000\n"):
        assert checker.first_bad(ok + bad) == len(ok), bad
