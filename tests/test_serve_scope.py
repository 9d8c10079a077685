"""The read service's parts that need no daemon: the typed operations (no query text gets
through), the policy's files, and a real embedded store read inside a caller's scope."""
import pytest

from jobmon.serve import protocol
from jobmon.serve.client import ServiceError, parse_address
from jobmon.serve.policy import Policy, PolicyError, Scope, read_coordinators
from jobmon.serve.scoped import NotFound, ScopedStore
from jobmon.stores.local import LocalStore

REF = {"text": "4711.0", "exact": ["4711.0"], "prefixes": [], "global_id": None}


@pytest.mark.parametrize("request_", [
    {"op": "query", "args": {"q": "SELECT * FROM jobmon_job"}},
    {"op": "jobs", "args": {"limit": 0}},
    {"op": "jobs", "args": {"limit": True}},
    {"op": "jobs", "args": {"limit": 5, "where": "1=1"}},
    {"op": "jobs", "args": []},
    {"op": "records", "args": {"ref": "4711.0"}},
    {"op": "records", "args": {"ref": dict(REF, exact=["x"] * 65)}},
    {"op": "records", "args": {"ref": REF, "user": ["a", "b"]}},
    {"op": "summaries", "args": {"since": "7d"}},
    {"op": "samples", "args": {}},
    {"op": "breakdowns", "args": {"handle": 1, "last": -1}},
])
def test_only_named_operations_with_typed_arguments(request_):
    with pytest.raises(protocol.BadRequest):
        protocol.arguments(request_)


def test_a_good_request_becomes_keyword_arguments():
    assert protocol.arguments({"op": "records", "args": {"ref": REF}}) == (
        "records", {"ref": REF, "user": None})
    assert protocol.arguments({"op": "summaries", "args": {"since": 5, "fields": ["a"]}}) == (
        "summaries", {"since": 5.0, "until": None, "user": None, "fields": ["a"]})


def test_a_line_too_long_is_refused():
    import io
    with pytest.raises(protocol.BadRequest, match="over 10 bytes"):
        protocol.receive(io.BytesIO(b'{"op": "jobs", "args": {}}\n'), 10)


def test_addresses():
    assert parse_address("/run/jobmon/read.sock") == ("unix", "/run/jobmon/read.sock")
    assert parse_address("reader.example.org:8650") == ("tcp", ("reader.example.org", 8650))
    assert parse_address("[::1]:8650") == ("tcp", ("::1", 8650))
    with pytest.raises(ServiceError):
        parse_address("reader")


def test_the_coordinators_file(tmp_path):
    path = tmp_path / "coordinators"
    path.write_text("# accounts and who coordinates them\nphys: alice bob\n\nchem:carol\n"
                    "phys: carol  # two lines for one account\n")
    assert read_coordinators(str(path)) == {"alice": {"phys"}, "bob": {"phys"},
                                            "carol": {"chem", "phys"}}
    path.write_text("phys alice\n")
    with pytest.raises(PolicyError, match=":1: expected"):
        read_coordinators(str(path))
    with pytest.raises(PolicyError, match="No such file"):
        read_coordinators(str(tmp_path / "missing"))


class Caller:
    def __init__(self, user, groups=()):
        self.user, self.groups = user, groups

    def in_group(self, name):
        return name in self.groups


def test_the_policy_gives_each_caller_a_scope():
    p = Policy("admins", {"carol": {"phys"}})
    assert p.scope(Caller("alice")).only_user == "alice"
    assert p.scope(Caller("dave", ("admins",))).admin
    carol = p.scope(Caller("carol"))
    assert carol.only_user is None and carol.describe() == "own jobs and those of accounts phys"
    assert not Policy("").scope(Caller("root", ("root",))).admin


def store_with(tmp_path, runs, command=None):
    """A real embedded store holding (job, user, account) runs, written as a job's sampler
    writes them."""
    path = str(tmp_path / "jobmon.db")
    for i, (job, user, account) in enumerate(runs):
        st = LocalStore(path)
        st.db.execute("PRAGMA synchronous=OFF")     # thousands of runs: not a job's pace
        st.open({"job": job, "user": user, "host": "wn1", "start_time": 1000.0 + i,
                 "tags": {"account": account} if account else {},
                 **({"command": command} if command else {})})
        st.write({"time": int((1000.5 + i) * 1e9), "cpu_cores": 1.0})
        st.close({"end_time": 1001.0 + i})
    return LocalStore(path)


def test_a_scope_shows_only_what_it_allows_and_hands_out_handles(tmp_path):
    st = store_with(tmp_path, [("4711.0", "alice", "phys"), ("4711.0", "bob", "chem"),
                               ("9", "bob", "phys")])
    alice = ScopedStore(st, Scope("alice"))
    [mine] = alice.records(REF)
    assert mine["user"] == "alice" and "_row" not in mine
    assert alice.records(REF, user="bob") == []
    assert [r["user"] for r in alice.jobs(10)] == ["alice"]
    assert [r["user"] for r in alice.summaries()] == ["alice"]
    assert alice.samples(mine["_handle"])[0]["cpu_cores"] == 1.0
    with pytest.raises(NotFound):
        alice.samples(10 ** 6)      # no record of that number was shown here
    coordinator = ScopedStore(st, Scope("alice", accounts={"phys"}))
    assert sorted(r["job"] for r in coordinator.jobs(10)) == ["4711.0", "9"]
    assert [r["user"] for r in coordinator.records(REF)] == ["alice"]
    admin = ScopedStore(st, Scope("root", admin=True))
    assert len(admin.jobs(10)) == 3 and len(admin.records(REF)) == 2


def test_a_connection_keeps_little_of_what_it_showed(tmp_path):
    """Ten reads of every job on one connection: the connection keeps, of each record
    shown, only where its samples are, and of the newest 20,000 alone (it kept every
    record whole: ten reads of 30,000 jobs held 1.4 GiB); older handles are not found,
    the newest still read their samples."""
    import tracemalloc
    n = 2500
    st = store_with(tmp_path, [(f"{i}.0", "alice", "phys") for i in range(n)],
                    command="x" * 2000)
    scoped = ScopedStore(st, Scope("root", admin=True))
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(10):
            shown = scoped.jobs(100000)
        assert len(shown) == n
        handles = [r["_handle"] for r in shown]
        shown = None
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert held < 20 << 20, f"the connection holds {held >> 20} MiB"
    assert len(scoped.held) == 20000
    with pytest.raises(NotFound):
        scoped.samples(1)
    assert scoped.samples(handles[0])[0]["cpu_cores"] == 1.0
