"""`jobmon doctor` on a real Slurm node (tests/slurm, jobmon's Prolog and Epilog
installed as a site installs them, samplers spooling for InfluxDB), each broken set-up
turning its check to fail: an interpreter only root can run, a site file that is not
there or that job users cannot read (its printed fix applied), a missing spool, no
syslog socket; Slurm checked because its slurmd runs here, without being named. And the samplers' warnings where syslog
receives nothing: the run directory's warnings.log, never nowhere."""
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from helpers import JOBMON
from jobmon.doctor import syslog_receives
from venvs import make_venv, root_only_python

pytestmark = [pytest.mark.root, pytest.mark.slow]


@pytest.fixture(scope="module")
def root_only():
    base = tempfile.mkdtemp(prefix="jobmon-venvs-")
    os.chmod(base, 0o755)
    yield make_venv(os.path.join(base, "venv"), root_only_python(base))
    shutil.rmtree(base, ignore_errors=True)


def doctor(site, *args):
    """{check: (status, message, fix)} and the exit status of `jobmon doctor` as root on
    the cluster's node (scontrol from the cluster's environment)."""
    env = dict(site.cluster.env(), JOBMON_CONFIG=site.config)
    r = subprocess.run([JOBMON, "doctor", "--scheduler=slurm", "--json", *args], env=env,
                       capture_output=True, text=True, timeout=180)
    checks = {c["check"]: (c["status"], c["message"], c["fix"]) for c in json.loads(r.stdout)}
    return checks, r.returncode


def test_a_node_set_up_as_the_docs_say_is_all_ok(jobmon_slurm):
    site = jobmon_slurm
    site.ship()                            # the shipper ran just now
    checks, code = doctor(site)
    assert {k: s for k, (s, _m, _f) in checks.items()} == {
        "config": "ok", "store": "ok", "spool": "ok", "state": "ok", "shipper": "ok",
        "measured": "ok", "gpu": "ok", "slurm": "ok", "job cgroups": "ok", "site file": "ok",
        "interpreter": "ok", "warnings": "ok"}, checks
    assert code == 0
    assert site.prolog in checks["slurm"][1] and site.epilog in checks["slurm"][1]


def test_root_only_interpreter_fails(jobmon_slurm, root_only):
    jobmon_slurm.install(python=root_only)
    checks, code = doctor(jobmon_slurm)
    status, message, fix = checks["interpreter"]
    assert status == "fail" and "private is mode 0700" in message and "venv" in fix
    assert code == 1


def test_wrong_site_file_path_fails(jobmon_slurm):
    jobmon_slurm.install(config="/nonexistent/jobmon.toml")
    checks, code = doctor(jobmon_slurm)
    assert checks["site file"][0] == "fail" and "/nonexistent/jobmon.toml" in checks["site file"][1]
    assert code == 1


def test_missing_spool_fails(jobmon_slurm):
    missing = os.path.join(jobmon_slurm.dir, "no-spool")
    jobmon_slurm.write_config(spool=missing)
    checks, code = doctor(jobmon_slurm)
    status, message, fix = checks["spool"]
    assert status == "fail" and missing in message and f"-m 3733 {missing}" in fix
    assert code == 1


def test_syslog_without_a_listener_fails(jobmon_slurm):
    jobmon_slurm.write_config(warnings="syslog")
    checks, code = doctor(jobmon_slurm)
    status, message, _fix = checks["warnings"]
    if syslog_receives("/dev/log"):
        assert status == "ok" and "/dev/log receives" in message
    else:   # this machine has no syslog daemon
        assert status == "fail" and "nothing receives syslog" in message
        assert os.path.join(jobmon_slurm.run_dir, "warnings.log") in message
        assert code == 1


class SyslogTail:
    """What syslog gets from now on under one identity, read back from the journal
    (journalctl, where journald listens) or from the syslog daemon's file (rsyslog's
    /var/log/syslog or /var/log/messages). `readable` is False where neither can be read."""

    FILES = ("/var/log/syslog", "/var/log/messages")

    def __init__(self, ident):
        import time
        self.ident, self.since = ident, time.time() - 1
        self.journal = bool(shutil.which("journalctl")) and subprocess.run(
            ["journalctl", "--no-pager", "-n", "0"], capture_output=True,
            timeout=60).returncode == 0
        self.files = {}
        for path in self.FILES:
            try:
                self.files[path] = os.path.getsize(path)
            except OSError:
                pass
        self.readable = self.journal or bool(self.files)

    def lines(self):
        out = []
        if self.journal:
            r = subprocess.run(["journalctl", "--no-pager", "-o", "cat", "-t", self.ident,
                                f"--since=@{int(self.since)}"], capture_output=True,
                               text=True, timeout=60)
            out += r.stdout.splitlines()
        for path, size in self.files.items():
            with open(path, errors="replace") as f:
                f.seek(size)
                out += [x for x in f.read().splitlines() if self.ident in x]
        return out

    def wait_for(self, text, timeout=30):
        """The lines holding `text` once there are any (the journal writes a moment later)."""
        import time
        deadline = time.monotonic() + timeout
        while True:
            got = [x for x in self.lines() if text in x]
            if got or time.monotonic() > deadline:
                return got
            time.sleep(0.5)


def test_samplers_say_why_they_failed(jobmon_slurm, root_only):
    """An interpreter only root can run: the sampler drops to the job's user and fails.
    Its warning must land somewhere: in syslog where a daemon listens (journald, rsyslog:
    read back from its journal or file), else in the run directory's warnings.log (opened
    while the sampler was still root)."""
    receives = syslog_receives("/dev/log")
    tail = SyslogTail("jobmon-slurm") if receives else None
    if receives and not tail.readable:
        pytest.skip("a syslog daemon listens here, but neither its journal nor its file "
                    "can be read back")
    site = jobmon_slurm
    site.install(python=root_only)
    site.write_config(warnings="syslog")
    jid = site.cluster.submit("sleep 1\necho done\n")
    [rec] = site.cluster.wait_done(jid, timeout=180)
    assert rec["JobState"] == "COMPLETED"
    log = os.path.join(site.run_dir, "warnings.log")
    if receives:
        lines = tail.wait_for(f"job {jid}:")
        assert lines, f"no warning of the job's failed sampler in syslog ({tail.ident})"
        if os.path.exists(log):              # syslog got it, not the fallback
            with open(log) as f:
                assert f"job {jid}:" not in f.read()
    else:
        with open(log) as f:
            lines = [l for l in f if f"job {jid}:" in l]
        assert lines, "no warning of the job's failed sampler"
    assert site.records().get(str(jid)) is None      # and indeed no record


def test_found_by_its_slurmd_without_being_named(jobmon_slurm):
    """--scheduler=auto (the default): the node's running slurmd is what makes the doctor
    check Slurm, and says so."""
    checks, _code = doctor(jobmon_slurm)     # the helper names --scheduler=slurm ...
    env = dict(jobmon_slurm.cluster.env(), JOBMON_CONFIG=jobmon_slurm.config)
    r = subprocess.run([JOBMON, "doctor", "--json"], env=env, capture_output=True, text=True,
                       timeout=180)              # ... this one does not
    auto = {c["check"]: c for c in json.loads(r.stdout)}
    assert auto["scheduler"]["status"] == "ok" and "slurmd" in auto["scheduler"]["message"]
    assert auto["slurm"]["status"] == checks["slurm"][0] == "ok", auto["slurm"]


def test_a_site_file_job_users_cannot_read_fails_and_its_fix_works(jobmon_slurm):
    """The Prolog names a site file in a directory only root can enter: every sampler,
    once it is the job's user, would run on the defaults. The fix, run as printed, makes
    the check pass."""
    d = os.path.join(jobmon_slurm.dir, "private")
    os.makedirs(d, mode=0o700, exist_ok=True)
    os.chmod(d, 0o700)
    private = os.path.join(d, "jobmon.toml")
    shutil.copy(jobmon_slurm.config, private)
    os.chmod(private, 0o600)
    jobmon_slurm.install(config=private)
    checks, code = doctor(jobmon_slurm, f"--config={private}")
    status, message, fix = checks["site file"]
    assert status == "fail" and code == 1 and "cannot read" in message, checks["site file"]
    subprocess.run(["sh", "-e", "-c", fix], check=True, timeout=60)
    checks, code = doctor(jobmon_slurm, f"--config={private}")
    assert checks["site file"][0] == "ok" and checks["config"][0] == "ok", checks
