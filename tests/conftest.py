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


@_pytest.fixture
def site(influx_server, tmp_path, request):
    """A node set up for InfluxDB: config file, spool, shipper state, a fresh database."""
    from influx_site import Site
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
