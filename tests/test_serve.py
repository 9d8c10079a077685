"""The read service (`jobmon serve`), end to end: jobs of two users in a real InfluxDB 1.6.7
through the real shipper; the service running as an unprivileged user with the site's
config; callers as jobmon-test, jobmon-test2 and an admin (jobmon-test-admin, a member of
the admin group), over the Unix socket (the kernel's peer credentials) and over TCP with
credentials of a real munged of our own; forged, replayed and expired credentials; the
service down."""
import json
import os

import pytest

from helpers import have_user, needs_test_user, root
from serve_site import ADMIN, Conversation, Munged, Service

pytestmark = [root, needs_test_user,
              pytest.mark.skipif(not have_user(ADMIN), reason=f"needs user {ADMIN} "
                                 "(tests/setup.sh)")]

A, B = "jobmon-test", "jobmon-test2"
SHARED = "4711.0"            # one id, run by both users


@pytest.fixture(scope="module")
def served(influx_server, tmp_path_factory):
    from influx_site import Site
    site = Site(influx_server, tmp_path_factory.mktemp("serve"), "serve")
    site.prepare()
    site.run_small_job(SHARED, A, 16, ("account=phys",))
    site.run_small_job("mine-1", A, 8)
    site.run_small_job(SHARED, B, 96, ("account=chem",))
    site.run_small_job("theirs-1", B, 8, ("account=phys",))
    site.run_small_job("theirs-2", B, 8, ("account=chem",))
    site.ship()
    munged = Munged()
    service = Service(site, munged).start()
    yield service
    service.close()
    munged.close()
    site.close()


def listed(service, user, **kw):
    out = service.jobmon("list", "-n", "50", user=user, **kw).stdout
    return {j for j in ("4711.0", "mine-1", "theirs-1", "theirs-2") if j in out}


def query(service, job, user, *args, **kw):
    r = service.jobmon("query", job, "--json", "--no-scheduler", *args, user=user, **kw)
    return json.loads(r.stdout), r.stderr


def test_each_user_reads_their_own_jobs_and_nothing_else(served):
    assert listed(served, A) == {"4711.0", "mine-1"}
    assert listed(served, B) == {"4711.0", "theirs-1", "theirs-2"}
    for user, mib in ((A, 16), (B, 96)):
        rep, err = query(served, SHARED, user)
        assert rep["job"]["user"] == user and "runs by users" not in err
        assert mib << 20 < rep["summary"]["rss_peak_bytes"] < (mib + 48) << 20
        assert rep["samples"], "the samples come through the service too"
    r = served.jobmon("query", "theirs-1", user=A, check=False)
    assert r.returncode == 1 and "no job 'theirs-1'" in r.stderr and r.stdout == ""
    r = served.jobmon("query", SHARED, "--user", B, user=A, check=False)
    assert r.returncode == 1 and "no job" in r.stderr
    rng = json.loads(served.jobmon("report", "--json", "--by", "user", user=A).stdout)
    assert {g["key"] for g in rng["groups"]} == {A}


def test_the_admin_group_reads_every_job(served):
    assert listed(served, ADMIN) == {"4711.0", "mine-1", "theirs-1", "theirs-2"}
    rep, err = query(served, SHARED, ADMIN)
    assert "runs by users jobmon-test, jobmon-test2" in err
    rep, _ = query(served, SHARED, ADMIN, "--user", A)
    assert rep["job"]["user"] == A
    rng = json.loads(served.jobmon("report", "--json", "--by", "user", user=ADMIN).stdout)
    assert {g["key"] for g in rng["groups"]} == {A, B}


def test_root_is_no_admin_unless_in_the_group(served):
    assert listed(served, None) == set()


def test_remote_callers_prove_who_they_are_with_munge(served):
    remote = served.client_config(served.address)
    assert listed(served, A, config=remote) == {"4711.0", "mine-1"}
    rep, _ = query(served, SHARED, B, config=remote)
    assert rep["job"]["user"] == B
    assert "jobmon-test2 (munge): records" in served.logged()


def refused(served, credential, conv=None):
    conv = conv or Conversation(served.address)
    try:
        answer = conv.ask({"munge": credential})
        follow = conv.ask({"op": "jobs", "args": {"limit": 5}})
    except OSError:
        follow = None
    finally:
        conv.close()
    assert answer.get("kind") == "refused" and "user" not in answer, answer
    assert follow is None, "a refused caller is answered nothing more"
    return answer["error"]


def test_a_forged_credential_is_refused(served):
    other = Munged()           # another realm: the same format, another key
    try:
        conv = Conversation(served.address)
        forged = other.credential(conv.hello["nonce"], user=A)
        assert "MUNGE credential refused" in refused(served, forged, conv)
    finally:
        other.close()
    conv = Conversation(served.address)
    assert "refused" in refused(served, "MUNGE:" + "A" * 80 + ":", conv)
    conv = Conversation(served.address)
    assert "no MUNGE credential" in refused(served, None, conv)


def test_a_replayed_credential_is_refused(served):
    first = Conversation(served.address)
    cred = served.munged.credential(first.hello["nonce"], user=A)
    assert first.ask({"munge": cred})["user"] == A
    first.close()
    again = Conversation(served.address)        # the same credential, seen on the wire
    assert "replayed" in refused(served, cred, again).lower()
    # a fresh credential, but made for another connection's nonce
    other = Conversation(served.address)
    elsewhere = served.munged.credential(first.hello["nonce"], user=A)
    assert "another connection" in refused(served, elsewhere, other)


def test_an_expired_credential_is_refused(served):
    import time
    conv = Conversation(served.address)
    cred = served.munged.credential(conv.hello["nonce"], ttl=1, user=A)
    time.sleep(2.5)
    assert "expired" in refused(served, cred, conv).lower()


def test_the_service_takes_operations_not_queries(served):
    conv = Conversation(served.socket)
    assert conv.ask({})["user"] == "root"
    for bad in ({"op": "query", "args": {"q": 'SELECT * FROM "jobmon_job"'}},
                {"op": "jobs", "args": {"limit": 5, "where": "1=1"}},
                {"op": "jobs", "args": {"limit": "5; DROP"}},
                {"op": "records", "args": {"ref": {"text": 1}}}):
        answer = conv.ask(bad)
        assert answer["kind"] == "bad-request", (bad, answer)
    assert conv.ask({"op": "samples", "args": {"handle": 1}})["kind"] == "not-found"
    conv.send(b"not json")
    assert conv.receive()["kind"] == "bad-request"
    conv.close()


def test_samples_only_of_records_shown_on_the_connection(served):
    """A handle is this connection's: records shown to A, then B's connection asks for the
    same handles and gets none of A's samples."""
    a = Conversation(served.socket)
    assert a.ask({}) == {"user": "root", "reads": "own jobs"}
    a.close()
    conv = Conversation(served.address)
    conv.ask({"munge": served.munged.credential(conv.hello["nonce"], user=A)})
    ref = {"text": SHARED, "exact": [SHARED], "prefixes": [], "global_id": None}
    shown = conv.ask({"op": "records", "args": {"ref": ref}})["result"]
    assert [r["user"] for r in shown] == [A] and "_point" not in shown[0]
    assert conv.ask({"op": "records", "args": {"ref": ref, "user": B}})["result"] == []
    samples = conv.ask({"op": "samples", "args": {"handle": shown[0]["_handle"]}})["result"]
    assert samples and all("time" in s for s in samples)
    conv.close()
    other = Conversation(served.address)
    other.ask({"munge": served.munged.credential(other.hello["nonce"], user=B)})
    assert other.ask({"op": "samples", "args": {"handle": 1}})["kind"] == "not-found"
    other.close()


def test_a_coordinator_reads_their_accounts_jobs(served):
    """A site may name account coordinators: jobmon-test coordinates `phys` and reads
    jobmon-test2's job run under it, not the others."""
    coordinated = Service(served.site, served.munged, coordinators="phys: jobmon-test\n")
    try:
        coordinated.start()
        assert listed(coordinated, A) == {"4711.0", "mine-1", "theirs-1"}
        assert listed(coordinated, B) == {"4711.0", "theirs-1", "theirs-2"}
        rep, _ = query(coordinated, "theirs-1", A)
        assert rep["job"]["user"] == B
        assert coordinated.jobmon("query", "theirs-2", user=A, check=False).returncode == 1
    finally:
        coordinated.close()


def test_the_cli_says_when_the_service_is_down(served, tmp_path):
    gone = served.client_config(os.path.join(served.dir, "nobody-here.sock"))
    r = served.jobmon("query", SHARED, user=A, config=gone, check=False)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "the read service at" in r.stderr and "is down" in r.stderr
    assert "ask the site's admins" in r.stderr
    served.stop()
    try:
        for config in (None, served.client_config(served.address)):
            r = served.jobmon("list", user=A, config=config, check=False)
            assert r.returncode == 1 and "is down" in r.stderr, r.stderr
    finally:
        served.start()
    assert listed(served, A) == {"4711.0", "mine-1"}


def test_a_pilot_is_read_by_its_owner(served):
    """`jobmon pilot` through the service: the pilot's owner reads its partition and its
    payloads; another user reads no pilot of that name."""
    from helpers import JOBMON, PYTHON
    from influx_site import SMALL_JOB
    payload = [JOBMON, "run", "--interval=0.2", "--job-id=pay-A", "--tag=pilot=pilot-A",
               "--tag=alloc_cpus=1", "--", PYTHON, "-c", SMALL_JOB, "8"]
    served.site.jobmon("run", "--interval=0.2", "--job-id=pilot-A", "--tag=alloc_cpus=2",
                       "--", *payload, user=A, cwd="/tmp")
    served.site.ship()
    model = json.loads(served.jobmon("pilot", "pilot-A", "--json", user=A).stdout)
    assert model["user"] == A and [p["job"] for p in model["payloads"]] == ["pay-A"]
    r = served.jobmon("pilot", "pilot-A", user=B, check=False)
    assert r.returncode == 1 and "no pilot 'pilot-A'" in r.stderr
    assert json.loads(served.jobmon("pilot", "pilot-A", "--json", user=ADMIN).stdout)["user"] == A
