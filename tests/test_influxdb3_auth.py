"""A node configured for InfluxDB 3 (version 3, a token, two databases) against a real
InfluxDB 1.6.7 with authentication on, which checks the bearer token jobmon sends: a token
the server does not know is refused on writes and reads, and nothing is lost meanwhile."""
import json
import os

import pytest

from influx_site import Site
from servers import Influx
from test_influx_ship import spool_job

pytestmark = pytest.mark.root


def pending(site):
    return sorted(f for f in os.listdir(site.spool) if f.endswith(".lp"))


def test_an_unknown_token_is_refused_and_nothing_is_lost(influx_auth_server, tmp_path):
    site = Site(influx_auth_server, tmp_path, "unknown_token", influxdb3=True)
    other = Influx(auth=True)           # never started: only its key, one the server lacks
    try:
        good = open(site.token_file).read()
        site.prepare()
        spool_job(site.spool, "tok-1", 5)
        with open(site.token_file, "w") as f:
            f.write(other.token("admin") + "\n")
        r = site.ship("--timeout=1", check=False)
        assert r.returncode == 75 and pending(site)
        st = json.loads(site.ship("--status", "--json").stdout)
        assert "401" in st["last_error"] and st["shipped_points"] == 0
        r = site.jobmon("query", "tok-1", check=False)
        assert r.returncode != 0 and "HTTP 401" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr     # one line, no traceback
        with open(site.token_file, "w") as f:
            f.write(good)
        site.ship()
        assert not pending(site)
        rep = json.loads(site.jobmon("query", "--json", "tok-1").stdout)
        assert len(rep["samples"]) == 5
        # each measurement in the database docs/influxdb3.md gives it
        shown = {db: {r["name"] for r in site.influx.rows("SHOW MEASUREMENTS", db)}
                 for db in (site.db, site.samples_db)}
        assert shown == {site.db: {"jobmon_job", "jobmon_shipper"},
                         site.samples_db: {"jobmon_sample"}}
    finally:
        other.close()
        site.close()
