"""`jobmon compare` and `jobmon query --like` through the read service (`jobmon serve`):
each user compares only runs they may read, and --like finds only the job's own user's
earlier runs; the admin group compares anyone's. Real InfluxDB, shipper, service and
callers (tests/serve_site.py)."""
import json

import pytest

from helpers import have_user, needs_test_user, root
from serve_site import ADMIN, Munged, Service

pytestmark = [root, needs_test_user,
              pytest.mark.skipif(not have_user(ADMIN), reason=f"needs user {ADMIN} "
                                 "(tests/setup.sh)")]

A, B = "jobmon-test", "jobmon-test2"


@pytest.fixture(scope="module")
def served(influx_server, tmp_path_factory):
    from influx_site import Site
    site = Site(influx_server, tmp_path_factory.mktemp("compare"), "compare_serve")
    site.prepare()
    site.run_small_job("a1", A, 8)
    site.run_small_job("b1", B, 8)       # the same command, another user
    site.run_small_job("a2", A, 8)
    site.ship()
    munged = Munged()
    service = Service(site, munged).start()
    yield service
    service.close()
    munged.close()
    site.close()


def as_json(service, user, *args):
    return json.loads(service.jobmon(*args, "--json", "--no-scheduler", user=user).stdout)


def test_like_finds_only_the_users_own_runs(served):
    for reader in (A, ADMIN):
        model = as_json(served, reader, "query", "a2", "--like")
        assert [c["job"] for c in model["columns"]] == ["a2", "a1"], reader
        assert {c["user"] for c in model["columns"]} == {A}
    model = as_json(served, B, "query", "b1", "--like")
    assert model["earlier"] == 0 and [c["job"] for c in model["columns"]] == ["b1"]


def test_compare_reads_what_the_caller_may_read(served):
    r = served.jobmon("compare", "a1", "b1", "--no-scheduler", user=A, check=False)
    assert r.returncode == 1 and "no job 'b1'" in r.stderr and r.stdout == ""
    model = as_json(served, ADMIN, "compare", "a1", "b1")
    assert [(c["job"], c["user"]) for c in model["columns"]] == [("a1", A), ("b1", B)]
    assert model["same_script"] == "command_hash"
    assert as_json(served, A, "compare", "a1", "a2")["same_script"] == "command_hash"
