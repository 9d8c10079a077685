# --- InfluxDB / VictoriaMetrics servers (issue 3): real servers, started once per session
import pytest as _pytest


@_pytest.fixture(scope="session")
def influx_server():
    import shutil
    from servers import Influx
    if not shutil.which("influxd"):
        _pytest.skip("influxd not installed (tests/setup.sh installs Debian's influxdb)")
    srv = Influx().start()
    yield srv
    srv.close()


@_pytest.fixture(scope="session")
def victoria_server():
    import shutil
    from servers import Victoria
    if not shutil.which("victoria-metrics"):
        _pytest.skip("victoria-metrics not installed (tests/setup.sh installs it)")
    srv = Victoria()
    yield srv
    srv.close()


@_pytest.fixture(scope="session")
def influx_auth_server():
    """A second influxd 1.6.7, with authentication on: an admin user, bearer tokens."""
    import shutil
    from servers import Influx
    if not shutil.which("influxd"):
        _pytest.skip("influxd not installed (tests/setup.sh installs Debian's influxdb)")
    srv = Influx(auth=True).start().make_admin()
    yield srv
    srv.close()


@_pytest.fixture
def site_flavour(request):
    """How `site` is configured: "1.x" (one database, no credentials) or "3.x" (as for
    InfluxDB 3: a token, two databases, against the server with authentication on). A test
    module runs its `site` tests in both with SITE_FLAVOURS = ("1.x", "3.x"); a test that
    writes its own config says which it is for with @pytest.mark.site_flavours("1.x")."""
    return getattr(request, "param", "1.x")


def pytest_generate_tests(metafunc):
    mark = metafunc.definition.get_closest_marker("site_flavours")
    flavours = mark.args if mark else getattr(metafunc.module, "SITE_FLAVOURS", None)
    if flavours and "site_flavour" in metafunc.fixturenames:
        metafunc.parametrize("site_flavour", flavours, indirect=True)


@_pytest.fixture
def site(influx_server, tmp_path, request, site_flavour):
    """A node set up for InfluxDB: config file, spool, shipper state, a fresh database."""
    from influx_site import Site
    if site_flavour == "3.x":
        s = Site(request.getfixturevalue("influx_auth_server"), tmp_path, request.node.name,
                 influxdb3=True)
    else:
        s = Site(influx_server, tmp_path, request.node.name)
    yield s
    s.close()


# --- Slurm test cluster (tests/slurm): `slurm_cluster` (one real single-node cluster per
# session, started on first use) and `slurm` (the same, node healthy, jobs cancelled after)
from slurm.fixture import slurm, slurm_cluster  # noqa: E402,F401


# --- Slurm cluster with jobmon's Prolog and Epilog (tests/slurm_site.py): `jobmon_slurm`
from slurm_site import jobmon_slurm, jobmon_slurm_cluster  # noqa: E402,F401


# --- the directories tests shared with the test user (helpers.shared_tmpdir): gone at the end
def pytest_sessionfinish(session):
    import shutil
    from helpers import SHARED_TMPDIRS
    for d in SHARED_TMPDIRS:
        shutil.rmtree(d, ignore_errors=True)


# --- in the cgroup v2 guest (tests/guest/guest_boot.py sets JOBMON_GUEST): of the host's own
# test modules it is given, only the tests marked cgroup_tree run (they make real cgroups, of
# the version the host has: here pure v2); the rest are deselected, not run under emulation
@_pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    import os
    if not os.environ.get("JOBMON_GUEST"):
        return
    guest_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guest") + os.sep
    keep, drop = [], []
    for item in items:
        inside = str(item.path).startswith(guest_dir)
        (keep if inside or item.get_closest_marker("cgroup_tree") else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_collection_finish(session):
    """In the guest: the tests it is about to run, one node id a line, into the shared
    results directory, so that the host can tell a test that never ran (the guest's pytest
    stopped at its time limit) from one that passed."""
    import os
    rw = os.environ.get("JOBMON_GUEST")
    if rw and os.path.isdir(rw):
        with open(os.path.join(rw, "collected"), "w") as f:
            f.write("".join(item.nodeid + "\n" for item in session.items))
