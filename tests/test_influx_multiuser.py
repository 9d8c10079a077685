"""Credentials never reach job users; nobody can ship samples in another user's name."""
import json
import os
import socket
import subprocess

import pytest

from helpers import PYTHON, as_user, needs_test_user

# the write and read path also as configured for InfluxDB 3 (conftest: site_flavour)
SITE_FLAVOURS = ("1.x", "3.x")

pytestmark = [pytest.mark.root, needs_test_user]


@pytest.mark.site_flavours("1.x")     # its own config: a token file the job user cannot read
def test_job_user_cannot_read_the_token_file_and_the_job_never_sees_it(site):
    token = os.path.join(site.dir, "token")
    with open(token, "w") as f:
        f.write("s3cret-token-value\n")
    os.chmod(token, 0o600)
    text = open(site.config).read().replace("[influxdb]\n", f'[influxdb]\ntoken_file = "{token}"\n')
    open(site.config, "w").write(text)
    r = subprocess.run(as_user(["cat", token]), capture_output=True, text=True)
    assert r.returncode != 0 and "Permission denied" in r.stderr
    r = site.jobmon("config", "check", user="jobmon-test", check=False)
    assert r.returncode == 2 and "permission denied" in r.stderr
    assert "s3cret" not in r.stdout + r.stderr
    site.prepare()
    r = site.jobmon("run", "--interval=0.1", "--", "env", user="jobmon-test")
    assert "s3cret" not in r.stdout + r.stderr
    # a token file others could read is refused, with the reason
    os.chmod(token, 0o644)
    r = site.jobmon("config", "check", check=False)
    assert r.returncode == 2 and "group/world-accessible (mode 0644)" in r.stderr


PLANT = r"""
import os, sys, time
spool, t = sys.argv[1], time.time_ns()
lines = (f"jobmon_sample,job=victim,user=root,host=elsewhere,cluster=x cpu_user_seconds=1 {t}\n"
         f"jobmon_job,user=root,job=victim start_time=1 {t}\n")
fd = os.open(os.path.join(spool, f"{t}.0.1.forged.lp"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
os.write(fd, lines.encode())
os.close(fd)
"""


def test_planted_file_ships_under_the_planters_user(site):
    site.prepare()
    subprocess.run(as_user([PYTHON, "-c", PLANT, site.spool]), check=True)
    # the other test user can neither list, read nor delete it
    name = [f for f in os.listdir(site.spool) if f.endswith(".lp")][0]
    path = os.path.join(site.spool, name)
    for argv in (["ls", site.spool], ["cat", path], ["rm", "-f", path]):
        r = subprocess.run(as_user(argv, "jobmon-test2"), capture_output=True, text=True)
        assert r.returncode != 0, argv
    site.ship()
    rows = site.rows("SELECT * FROM jobmon_sample")
    assert len(rows) == 1
    assert rows[0]["user"] == "jobmon-test"
    assert rows[0]["host"] == socket.gethostname()
    assert rows[0].get("cluster") is None   # the forged tag is gone
    assert site.rows("SELECT * FROM jobmon_job")[0]["user"] == "jobmon-test"


def test_job_run_as_a_user_is_queryable_under_that_user(site):
    site.prepare()
    site.jobmon("run", "--interval=0.1", "--job-id=mu1", "--", "sleep", "0.5", user="jobmon-test")
    [name] = [f for f in os.listdir(site.spool) if f.endswith(".lp")]
    st = os.stat(os.path.join(site.spool, name))
    assert st.st_mode & 0o777 == 0o640
    site.ship()
    rep = json.loads(site.jobmon("query", "--json", "mu1").stdout)
    assert rep["job"]["user"] == "jobmon-test" and rep["samples"]


def test_a_job_id_run_by_two_users_is_flagged_and_selectable(site):
    """A job id is not proof of ownership: another user can run (or plant) the same id.
    query says so and --user picks the run."""
    site.prepare()
    site.jobmon("run", "--interval=0.1", "--job-id=shared", "--", "sleep", "0.3",
                user="jobmon-test")
    site.jobmon("run", "--interval=0.1", "--job-id=shared", "--", "sleep", "0.2",
                user="jobmon-test2")
    site.ship()
    r = site.jobmon("query", "--json", "shared")
    assert "runs by users jobmon-test, jobmon-test2" in r.stderr and "--user" in r.stderr
    assert json.loads(r.stdout)["job"]["user"] == "jobmon-test2"      # the latest
    r = site.jobmon("query", "--json", "--user", "jobmon-test", "shared")
    assert r.stderr == "" and json.loads(r.stdout)["job"]["user"] == "jobmon-test"
    r = site.jobmon("query", "--user", "nobody", "shared", check=False)
    assert r.returncode == 1 and "no job 'shared' by user 'nobody'" in r.stderr
