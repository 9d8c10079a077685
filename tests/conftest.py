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
