"""`jobmon doctor`'s checks that hold for every node, on real parts: the site file, the
store with and without authentication (a real InfluxDB 1.6.7), the spool and state
directories, the shipper's last run, where warnings go (a real syslog socket or none),
the GPU reader (the real reader on a recorded NVML); and the HTCondor checks from
HTCondor's knobs as condor_config_val prints them, with the wrapper jobmon-condor-setup
wrote (HTCondor's daemons cannot be installed here: the knobs are given, the wrapper,
its interpreter and the files they name are real). `jobmon config check` on an
InfluxDB without authentication."""
import grp
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from helpers import JOBMON, needs_test_user, root, shared_tmpdir
from jobmon import doctor
from jobmon.doctor import site as site_checks
from jobmon.plugins.condor import doctor as condor_doctor
from venvs import make_venv, root_only_python

pytestmark = [root, needs_test_user]


def run_doctor(config, *args, env=None):
    r = subprocess.run([JOBMON, "doctor", f"--config={config}", "--scheduler=none", "--json",
                        *args], capture_output=True, text=True, timeout=180,
                       env=env or dict(os.environ))
    return {c["check"]: c for c in json.loads(r.stdout)}, r.returncode


def test_influxdb_node_set_up_and_shipping_is_all_ok(site):
    site.ship()
    checks, code = run_doctor(site.config)
    assert {k: c["status"] for k, c in checks.items()} == {
        "config": "ok", "store": "ok", "spool": "ok", "state": "ok", "shipper": "ok",
        "measured": "ok", "gpu": "ok"}, checks
    assert code == 0
    assert "without credentials" in checks["store"]["message"]


def test_missing_spool_and_state_fail_with_the_commands_that_make_them(site):
    checks, code = run_doctor(site.config, "--shipper-user=nobody")
    assert code == 1
    assert checks["spool"]["status"] == "fail"
    group = grp.getgrgid(pwd.getpwnam("nobody").pw_gid).gr_name
    assert checks["spool"]["fix"] == f"install -d -o nobody -g {group} -m 3733 {site.spool}"
    assert checks["state"]["fix"] == f"install -d -o nobody -g {group} -m 700 {site.state}"
    assert checks["shipper"]["status"] == "fail" and "not run yet" in checks["shipper"]["message"]


def test_spool_of_the_wrong_owner_or_mode_fails(site):
    site.ship()
    checks, _ = run_doctor(site.config, "--shipper-user=nobody")
    assert checks["spool"]["status"] == "fail" and "not to the shipper (nobody)" in \
        checks["spool"]["message"]
    os.chmod(site.spool, 0o1777)
    checks, _ = run_doctor(site.config)
    assert checks["spool"]["status"] == "fail" and checks["spool"]["fix"] == \
        f"chmod 3733 {site.spool}"


def test_a_site_file_jobs_cannot_read_fails(tmp_path):
    path = tmp_path / "jobmon.toml"      # pytest's own temp dirs are root's, mode 0700
    path.write_text('[store]\nkind = "local"\n')
    checks, code = run_doctor(str(path))
    assert checks["config"]["status"] == "fail" and "job users cannot read" in \
        checks["config"]["message"] and code == 1


def test_a_wrong_config_path_fails():
    checks, code = run_doctor("/nonexistent/jobmon.toml")
    assert checks["config"]["status"] == "fail" and "no such file" in checks["config"]["message"]
    assert code == 1


@pytest.fixture(scope="module")
def auth_influx():
    if not shutil.which("influxd"):
        pytest.skip("influxd not installed")
    from servers import Influx
    srv = Influx(auth=True).start()
    srv.query("CREATE USER admin WITH PASSWORD 'adminpw' WITH ALL PRIVILEGES")
    srv.query("CREATE DATABASE jobmon", auth="admin:adminpw")
    srv.query("CREATE USER shipper WITH PASSWORD 'shipperpw'", auth="admin:adminpw")
    srv.query('GRANT ALL ON "jobmon" TO "shipper"', auth="admin:adminpw")
    yield srv
    srv.close()


def auth_site(url, username="", password=None):
    d = shared_tmpdir()
    spool, state = os.path.join(d, "spool"), os.path.join(d, "state")
    pw = ""
    if password is not None:
        pw = os.path.join(d, "influxdb-password")
        with open(pw, "w") as f:
            f.write(password + "\n")
        os.chmod(pw, 0o600)
    config = os.path.join(d, "jobmon.toml")
    with open(config, "w") as f:
        f.write(f'[store]\nkind = "influxdb"\n[influxdb]\nurl = "{url}"\n'
                f'username = "{username}"\npassword_file = "{pw}"\n'
                f'[spool]\ndir = "{spool}"\n[shipper]\nstate_dir = "{state}"\n')
    os.chmod(config, 0o644)
    return d, config


@pytest.mark.parametrize("username, password, status, says", [
    ("shipper", "shipperpw", "ok", "as 'shipper'"),
    ("shipper", "wrong", "fail", "authorization failed"),
    ("", None, "fail", "wants credentials"),
])
def test_store_with_authentication(auth_influx, username, password, status, says):
    d, config = auth_site(auth_influx.url, username, password)
    try:
        checks, _ = run_doctor(config)
        c = checks["store"]
        assert c["status"] == status, c
        assert says in c["message"] + c["fix"], c
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_store_without_authentication_and_a_password_file_that_is_not_there(influx_server):
    """deploy/jobmon.toml names a password file; a server without authentication needs
    none: both the doctor and `jobmon config check` say what to write."""
    d, config = auth_site(influx_server.url, "jobmon", None)
    try:
        with open(config) as f:
            text = f.read().replace('password_file = ""', 'password_file = "/etc/jobmon/nope"')
        with open(config, "w") as f:
            f.write(text)
        checks, _ = run_doctor(config)
        assert checks["store"]["status"] == "fail"
        assert 'username = "" and password_file = ""' in checks["store"]["fix"]
        r = subprocess.run([JOBMON, "config", "check", f"--config={config}"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2
        assert 'username = "" and password_file = ""' in r.stderr, r.stderr
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_warnings_to_syslog_only_where_something_receives(tmp_path):
    node = doctor.Node("/nonexistent")
    path = str(tmp_path / "log")
    c = doctor.warnings_to("warnings", "syslog", node, syslog=path, section="slurm")
    assert c.status == "fail" and "nothing receives syslog" in c.message
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(path)
    try:
        c = doctor.warnings_to("warnings", "syslog", node, syslog=path, section="slurm")
        assert c.status == "ok"
    finally:
        listener.close()
    assert doctor.warnings_to("warnings", "none", node, section="slurm").status == "warn"


def test_gpu_node_without_and_with_its_reader():
    from gpu_node_site import GpuNode
    gpu = GpuNode()
    try:
        env = dict(os.environ, JOBMON_GPU_DIR=os.path.join(gpu.base, "nothing"),
                   JOBMON_GPU_DEV=gpu.dev)
        c = site_checks.gpus(doctor.Node(env=env))
        assert c.status == "fail" and "no GPU reader" in c.message
        gpu.start()
        c = site_checks.gpus(doctor.Node(env=gpu.env()))
        assert c.status == "ok" and "2 GPU(s)" in c.message, c.message
        gpu.reader.send_signal(signal.SIGSTOP)     # a hung reader: its snapshot ages
        time.sleep(1.0)   # > 2 refresh periods of 0.2 s
        c = site_checks.gpus(doctor.Node(env=gpu.env()))
        assert c.status == "fail" and "s old" in c.message, c.message
        gpu.reader.send_signal(signal.SIGCONT)
        gpu.stop()        # a reader that stops takes its snapshot with it
        c = site_checks.gpus(doctor.Node(env=gpu.env()))
        assert c.status == "fail" and "no GPU reader" in c.message, c.message
    finally:
        gpu.close()


# --- HTCondor: the knobs as condor_config_val prints them ------------------------------------

@pytest.fixture(scope="module")
def condor_node():
    """A site file, a good and a root-only virtualenv, the wrapper jobmon-condor-setup
    wrote for each (the root-only one by hand: setup refuses it)."""
    base = tempfile.mkdtemp(prefix="jobmon-condor-doctor-")
    os.chmod(base, 0o755)
    config = os.path.join(base, "jobmon.toml")
    with open(config, "w") as f:
        f.write('[store]\nkind = "local"\n[condor]\nwarnings = "stderr"\n')
    os.chmod(config, 0o644)
    good = make_venv(os.path.join(base, "good"))
    bad = make_venv(os.path.join(base, "bad"), root_only_python(base))
    wrappers = {}
    for name, python in (("good", good), ("bad", bad)):
        from jobmon.plugins.condor.setup import WRAPPER
        from venvs import site_packages
        wrappers[name] = os.path.join(base, f"{name}-wrapper")
        with open(wrappers[name], "w") as f:
            f.write(WRAPPER.format(python=python, flags="-IS", target=wrappers[name],
                                   config=config, path_line=f"sys.path.append("
                                   f"{site_packages(good)!r})\n"))
        os.chmod(wrappers[name], 0o755)
    yield {"config": config, "good": wrappers["good"], "bad": wrappers["bad"],
           "jobmon": os.path.join(os.path.dirname(good), "jobmon")}
    shutil.rmtree(base, ignore_errors=True)


def knobs(n, **over):
    k = {"USER_JOB_WRAPPER": n["good"], "STARTER_JOB_ENVIRONMENT": None,
         "STARTD_CRON_JOBLIST": "JOBMON", "STARTD_CRON_JOBMON_EXECUTABLE": n["jobmon"],
         "STARTD_CRON_JOBMON_ARGS": "ship --timeout 50",
         "STARTD_CRON_JOBMON_ENV": f'"JOBMON_CONFIG={n["config"]}"'}
    k.update(over)
    return k


def condor_checks(n, config=None, **over):
    node = doctor.Node(config or n["config"])
    site_checks.site_file(node)
    return {c.name: c for c in condor_doctor.evaluate(knobs(n, **over), node)}


def test_condor_node_set_up_by_jobmon_condor_setup_is_ok(condor_node):
    checks = condor_checks(condor_node)
    assert checks["htcondor"].status == "ok" and checks["interpreter"].status == "ok"
    assert checks["site file"].status == "ok" and checks["warnings"].status == "ok"


def test_condor_root_only_interpreter_fails(condor_node):
    c = condor_checks(condor_node, USER_JOB_WRAPPER=condor_node["bad"])["interpreter"]
    assert c.status == "fail" and "private is mode 0700" in c.message


def test_condor_wrapper_missing_or_not_set_fails(condor_node):
    for value in (None, "/nonexistent/jobmon-condor-wrapper", "/bin/true"):
        c = condor_checks(condor_node, USER_JOB_WRAPPER=value)["htcondor"]
        assert c.status == "fail", (value, c.message)


def test_condor_shipper_cron_needs_the_site_file_in_its_environment(condor_node):
    n = dict(condor_node)
    with open(n["config"]) as f:
        text = f.read()
    d = shared_tmpdir()
    try:
        config = os.path.join(d, "jobmon.toml")
        with open(config, "w") as f:
            f.write(text.replace('kind = "local"', 'kind = "influxdb"'))
        os.chmod(config, 0o644)
        c = condor_checks(n, config=config, STARTD_CRON_JOBMON_ENV=None)["shipper cron"]
        assert c.status == "fail" and "STARTD_CRON_JOBMON_ENV" in c.message
        assert c.fix == f'STARTD_CRON_JOBMON_ENV = "JOBMON_CONFIG={config}"'
        c = condor_checks(n, config=config,
                          STARTD_CRON_JOBMON_ENV=f'"JOBMON_CONFIG={config}"')["shipper cron"]
        assert c.status == "ok", c.message
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_condor_wrapper_naming_a_site_file_that_is_not_there_fails(condor_node):
    d = shared_tmpdir()
    try:
        gone = os.path.join(d, "gone.toml")
        wrapper = os.path.join(d, "wrapper")
        with open(condor_node["good"]) as f:
            text = f.read().replace(repr(condor_node["config"]), repr(gone))
        with open(wrapper, "w") as f:
            f.write(text)
        os.chmod(wrapper, 0o755)
        c = condor_checks(condor_node, USER_JOB_WRAPPER=wrapper)["site file"]
        assert c.status == "fail" and gone in c.message
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_condor_knob_values_as_condor_config_val_prints_them():
    assert condor_doctor.job_environment('"JOBMON_CONFIG=/etc/x.toml OTHER=1"') == \
        {"JOBMON_CONFIG": "/etc/x.toml", "OTHER": "1"}
    assert condor_doctor.job_environment(None) == {}


def test_condor_wrapper_on_the_default_site_file_that_is_not_there_fails(condor_node):
    """The wrapper reads /etc/jobmon/jobmon.toml, which is not there, while the doctor
    was given another file: every job writes to its user's home store; a failure (not a
    warning whose fix names the missing file)."""
    from jobmon import config
    if os.path.exists(config.DEFAULT_PATH):
        pytest.skip("this machine has a site file at the default path")
    d = shared_tmpdir()
    try:
        wrapper = os.path.join(d, "wrapper")
        with open(condor_node["good"]) as f:
            text = f.read().replace(repr(condor_node["config"]), repr(config.DEFAULT_PATH))
        with open(wrapper, "w") as f:
            f.write(text)
        os.chmod(wrapper, 0o755)
        c = condor_checks(condor_node, USER_JOB_WRAPPER=wrapper)["site file"]
        assert c.status == "fail" and "home store" in c.message, c.message
        assert config.DEFAULT_PATH in c.fix and "--config" in c.fix, c.fix
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_condor_spool_and_state_must_be_the_cron_users(condor_node):
    """HTCondor runs the shipper cron as CONDOR_IDS' user: a spool and state left to root
    are closed to it, whoever else the site checks take for the shipper. The fix, run as
    printed, makes the check pass."""
    d = shared_tmpdir()
    spool, state = os.path.join(d, "spool"), os.path.join(d, "state")
    os.mkdir(spool, 0o3733)
    os.mkdir(state, 0o700)
    config = os.path.join(d, "jobmon.toml")
    with open(config, "w") as f:
        f.write(f'[store]\nkind = "influxdb"\n[spool]\ndir = "{spool}"\n'
                f'[shipper]\nstate_dir = "{state}"\n')
    os.chmod(config, 0o644)
    cron = pwd.getpwnam("jobmon-test")
    over = {"CONDOR_IDS": f"{cron.pw_uid}.{cron.pw_gid}",
            "STARTD_CRON_JOBMON_ENV": f'"JOBMON_CONFIG={config}"'}
    c = condor_checks(condor_node, config=config, **over)["shipper cron"]
    assert c.status == "fail" and "runs as jobmon-test" in c.message, c.message
    subprocess.run(["sh", "-e", "-c", c.fix], check=True, timeout=60)
    c = condor_checks(condor_node, config=config, **over)["shipper cron"]
    assert c.status == "ok", c.message
