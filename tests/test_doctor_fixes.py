"""Every fix `jobmon doctor` prints works: each real breakage is made on real files, users
and permissions, the doctor run, the fix it printed applied as printed (a command run by
sh, or the setting written into the site file), and the doctor run again: the check
passes. And the doctor checks the scheduler that runs jobs on the node, not the one whose
tools or leftover configuration are there: run in a fresh process namespace (no daemon
of this machine's test clusters in sight) with a private /etc (an overlay, so nothing
reaches the host's), where the default site file can be missing and a leftover
/etc/slurm/slurm.conf present."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from helpers import JOBMON, needs_test_user, root, shared_tmpdir

pytestmark = [root, needs_test_user]


def doctor(*args, env=None, node=None):
    """{check: {...}} and the exit status of `jobmon doctor --json ARGS`; node: a fresh
    machine's /etc upper layer (fresh_node) to run it on."""
    env = dict(os.environ if env is None else env)
    env.pop("JOBMON_CONFIG", None)
    argv = [JOBMON, "doctor", "--json", *args]
    if node is not None:
        argv = fresh_node(node) + argv
    r = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env)
    assert r.stdout, r.stderr
    return {c["check"]: c for c in json.loads(r.stdout)}, r.returncode


def fresh_node(base):
    """The command prefix that runs a command in its own mount and process namespace,
    /etc an overlay whose upper layer is base/etc (what the test writes there is the
    node's /etc), /proc showing only its own processes."""
    upper, work = os.path.join(base, "etc"), os.path.join(base, "work")
    os.makedirs(upper, exist_ok=True)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    return ["unshare", "--mount", "--pid", "--fork", "--mount-proc", "--propagation",
            "private", "sh", "-c", f"mount -t overlay overlay -o lowerdir=/etc,upperdir={upper},"
            f"workdir={work} /etc && exec \"$@\"", "sh"]


def apply(fix):
    """A fix that is shell commands, run as printed."""
    r = subprocess.run(["sh", "-e", "-c", fix], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (fix, r.stderr)


def readable_by_job_user(path):
    return subprocess.run(["cat", path], user="jobmon-test", group="jobmon-test",
                          extra_groups=[], capture_output=True, timeout=30).returncode == 0


@pytest.fixture
def unshare():
    if not shutil.which("unshare"):
        pytest.skip("needs unshare (util-linux)")


def test_a_site_file_in_a_private_directory_fails_and_its_fix_opens_the_way(tmp_path):
    d = tmp_path / "etc-jobmon"        # pytest's own temp dirs are root's, mode 0700
    d.mkdir(mode=0o700)
    path = d / "jobmon.toml"
    path.write_text('[store]\nkind = "local"\n')
    os.chmod(path, 0o600)
    checks, code = doctor(f"--config={path}", "--scheduler=none")
    c = checks["config"]
    assert c["status"] == "fail" and code == 1, c
    assert not readable_by_job_user(str(path))
    apply(c["fix"])
    assert readable_by_job_user(str(path)), c["fix"]
    assert "home store" in c["message"]
    checks, code = doctor(f"--config={path}", "--scheduler=none")
    assert checks["config"]["status"] == "ok" and code == 0, checks["config"]


def test_no_site_file_fails_jobs_would_write_to_home_stores(tmp_path, unshare):
    """The default site file missing: every job runs on the defaults, its samples in its
    user's home store, none in the spool: a failure, whose fix (the file) makes it pass."""
    checks, code = doctor("--scheduler=none", node=str(tmp_path))
    c = checks["config"]
    assert c["status"] == "fail" and code == 1, c
    assert "/etc/jobmon/jobmon.toml: no such file" in c["message"] and \
        "home store" in c["message"]
    assert "store" not in checks       # no store to speak of
    m = re.search(r"write the site file (\S+) \(mode (\d+); `(.*?)`", c["fix"])
    assert m and m.group(1) == "/etc/jobmon/jobmon.toml", c["fix"]
    site = tmp_path / "etc" / "jobmon"
    site.mkdir(mode=0o755)
    (site / "jobmon.toml").write_text(m.group(3).replace("] ", "]\n") + "\n")
    os.chmod(site / "jobmon.toml", int(m.group(2), 8))
    checks, code = doctor("--scheduler=none", node=str(tmp_path))
    assert checks["config"]["status"] == "ok" and code == 0, checks["config"]
    assert "embedded store" in checks["store"]["message"]


def test_a_leftover_slurm_conf_is_not_a_scheduler(tmp_path, unshare):
    """An HTCondor (or scheduler-less) node with Slurm's client tools and an old
    /etc/slurm/slurm.conf, no slurmd: no Slurm checks, no failure; the doctor says no
    scheduler runs jobs here, and checks Slurm when asked."""
    (tmp_path / "etc" / "slurm").mkdir(parents=True)
    (tmp_path / "etc" / "slurm" / "slurm.conf").write_text(
        "ClusterName=old\nSlurmctldHost=localhost\nSlurmctldPort=9\n")
    config = os.path.join(shared_tmpdir(), "jobmon.toml")
    with open(config, "w") as f:
        f.write('[store]\nkind = "local"\n')
    os.chmod(config, 0o644)
    env = dict(os.environ)
    env.pop("SLURM_CONF", None)
    checks, code = doctor(f"--config={config}", env=env, node=str(tmp_path))
    assert "slurm" not in checks and checks["scheduler"]["status"] == "warn", checks
    assert code == 0, checks
    checks, code = doctor(f"--config={config}", "--scheduler=slurm", env=env,
                          node=str(tmp_path))
    assert checks["slurm"]["status"] == "fail" and code == 1


def test_htcondor_asked_for_on_a_node_without_it():
    """`--scheduler=htcondor` where no condor_config_val is: HTCondor is not there, which
    is what the doctor says (not that a knob is unset), with no installer path made up."""
    env = dict(os.environ, PATH="/usr/bin:/bin")
    assert not shutil.which("condor_config_val", path=env["PATH"])
    checks, code = doctor("--config=/nonexistent", "--scheduler=htcondor", env=env)
    c = checks["htcondor"]
    assert c["status"] == "fail" and code == 1
    assert "condor_config_val is not on PATH" in c["message"], c
    assert "USER_JOB_WRAPPER" not in c["message"] and "/opt/" not in c["fix"]


def test_a_root_owned_spool_is_the_one_blamed(site):
    """The shipper's state is its user's, the spool was left to root: the spool fails,
    with the chown that makes it the shipper's; the state is not blamed."""
    site.ship()
    subprocess.run(["chown", "-R", "jobmon-test:jobmon-test", site.state], check=True)
    checks, code = doctor(f"--config={site.config}", "--scheduler=none")
    assert checks["state"]["status"] == "ok", checks["state"]
    c = checks["spool"]
    assert c["status"] == "fail" and "belongs to root" in c["message"], c
    apply(c["fix"])
    checks, code = doctor(f"--config={site.config}", "--scheduler=none")
    assert checks["spool"]["status"] == "ok" and checks["state"]["status"] == "ok", checks
    assert "jobmon-test" in checks["spool"]["message"]


def test_warnings_fixes_are_settings_the_site_file_takes(tmp_path):
    """Where nothing receives syslog, the fix's other way for each section is a setting
    `jobmon config check` accepts; written, the check passes."""
    from jobmon import doctor as d
    d_ = shared_tmpdir()
    no_syslog = str(tmp_path / "no-log")
    for section in ("condor", "slurm"):
        c = d.warnings_to("warnings", "syslog", d.Node("/nonexistent"), syslog=no_syslog,
                          section=section)
        assert c.status == "fail"
        m = re.search(rf'\[{section}\] (warnings = "([^"]+)")', c.fix)
        assert m, c.fix
        config = os.path.join(d_, f"{section}.toml")
        with open(config, "w") as f:
            f.write(f"[{section}]\n{m.group(1)}\n")
        r = subprocess.run([JOBMON, "config", "check", f"--config={config}"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (c.fix, r.stderr)
        where = m.group(2)
        if where.startswith("/"):     # a file: made as the fix says, in a place of our own
            where = os.path.join(d_, os.path.basename(where))
            commands = re.search(r"\((touch .*?)\)", c.fix).group(1)
            apply(commands.replace(m.group(2), where))
        assert d.warnings_to("warnings", where, d.Node("/nonexistent"), syslog=no_syslog,
                             section=section).status == "ok"


def test_the_installers_a_fix_names_are_this_jobmons():
    from jobmon.plugins.condor import doctor as condor_doctor
    from jobmon.plugins.slurm import doctor as slurm_doctor
    for fix in (condor_doctor.SETUP, slurm_doctor.INSTALL):
        exe = fix.split()[0]
        assert os.path.dirname(exe) == os.path.dirname(sys.executable) and \
            os.access(exe, os.X_OK), fix


def test_missing_spool_and_state_are_made_for_the_documented_shipper(tmp_path, unshare,
                                                                      influx_server):
    """A node with the shipper's user (`jobmon`, as docs/slurm.md makes it) and neither
    its spool nor its state: the fixes name that user; run as printed (on the same fresh
    node), both checks pass."""
    node = str(tmp_path / "node")
    subprocess.run(fresh_node(node) + ["useradd", "--system", "--no-create-home", "jobmon"],
                   check=True, timeout=60)
    d = shared_tmpdir()
    spool, state = os.path.join(d, "spool"), os.path.join(d, "state")
    config = os.path.join(d, "jobmon.toml")
    with open(config, "w") as f:
        f.write(f'[store]\nkind = "influxdb"\n[influxdb]\nurl = "{influx_server.url}"\n'
                f'[spool]\ndir = "{spool}"\n[shipper]\nstate_dir = "{state}"\n')
    os.chmod(config, 0o644)
    checks, _ = doctor(f"--config={config}", "--scheduler=none", node=node)
    for name in ("spool", "state"):
        c = checks[name]
        assert c["status"] == "fail" and " -o jobmon " in c["fix"], c
        subprocess.run(fresh_node(node) + ["sh", "-e", "-c", c["fix"]], check=True, timeout=60)
    checks, _ = doctor(f"--config={config}", "--scheduler=none", node=node)
    assert checks["spool"]["status"] == "ok" and checks["state"]["status"] == "ok", checks
