"""The installers refuse what cannot work: `jobmon-slurm-hooks install` and
`jobmon-condor-setup` run the interpreter they are given as an unprivileged user and
import jobmon's per-job code before they write anything; a virtualenv built on an
interpreter only root can run (a pyenv build under root's home) or a package only root
can read is refused with the reason and the fix. What they write works: the HTCondor
wrapper under the starter's contract, the Slurm wrappers as slurmd runs them."""
import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest

from helpers import PYTHON, needs_test_user, root, shared_tmpdir
from venvs import make_venv, root_only_python, site_packages

pytestmark = [root, needs_test_user]
BIN = os.path.dirname(PYTHON)


@pytest.fixture(scope="module")
def venvs():
    """{"good": python, "root-only": python, "private-package": python}: jobmon installed
    as a site installs it, in three virtualenvs."""
    base = pathlib.Path(tempfile.mkdtemp(prefix="jobmon-venvs-"))   # job users can enter it
    os.chmod(base, 0o755)
    out = {"good": make_venv(str(base / "good")),
           "root-only": make_venv(str(base / "root-only"), root_only_python(str(base))),
           "private-package": make_venv(str(base / "private-package"))}
    os.chmod(os.path.join(site_packages(out["private-package"]), "jobmon", "plugins"), 0o700)
    yield out
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def site_file():
    d = shared_tmpdir()
    path = os.path.join(d, "jobmon.toml")
    with open(path, "w") as f:
        f.write('[store]\nkind = "local"\n')
    os.chmod(path, 0o644)
    yield path
    shutil.rmtree(d, ignore_errors=True)


def slurm_install(target, python, site_file, *extra):
    return subprocess.run([os.path.join(BIN, "jobmon-slurm-hooks"), "install", str(target),
                           f"--python={python}", f"--config={site_file}", *extra],
                          capture_output=True, text=True, timeout=120)


def condor_setup(where, python, site_file, *extra):
    return subprocess.run([os.path.join(BIN, "jobmon-condor-setup"),
                           f"--bin-dir={where / 'bin'}", f"--condor-config-dir={where / 'conf'}",
                           f"--python={python}", f"--config={site_file}", *extra],
                          capture_output=True, text=True, timeout=120)


def test_root_can_run_the_root_only_interpreter(venvs):
    """The broken set-up is what it claims: root runs it, nobody else can."""
    python = venvs["root-only"]
    assert subprocess.run([python, "-c", "import jobmon"], timeout=60).returncode == 0
    # as the starter and slurmd's sampler become the job's user (setpriv would not do:
    # it execs with root's capabilities still in effect)
    with pytest.raises(PermissionError):
        subprocess.run([python, "-c", "pass"], user="nobody", group="nogroup", extra_groups=[],
                       timeout=60)


@pytest.mark.parametrize("broken, says", [
    ("root-only", "private is mode 0700"),
    ("private-package", "cannot"),
])
@pytest.mark.parametrize("installer", ["slurm", "condor"])
def test_installers_refuse_what_job_users_cannot_run(venvs, tmp_path, site_file, broken, says,
                                                   installer):
    r = (slurm_install if installer == "slurm" else condor_setup)(tmp_path, venvs[broken],
                                                                   site_file)
    assert r.returncode == 1, r.stderr
    assert "not installed" in r.stderr and says in r.stderr and "fix:" in r.stderr
    assert os.listdir(tmp_path) == []      # nothing written


def test_slurm_install_refuses_a_site_file_that_is_not_there(venvs, tmp_path):
    r = slurm_install(tmp_path, venvs["good"], str(tmp_path / "nope.toml"))
    assert r.returncode == 1 and "nope.toml: no such file" in r.stderr
    assert not (tmp_path / "jobmon-prolog").exists()


@pytest.mark.parametrize("installer", ["slurm", "condor"])
def test_installers_refuse_no_site_file_at_the_default_path(venvs, tmp_path, installer):
    """Without --config, the default /etc/jobmon/jobmon.toml, not there: every job would
    write to its user's home store and nothing to the spool; refused."""
    if os.path.exists("/etc/jobmon/jobmon.toml"):
        pytest.skip("this machine has a site file")
    argv = [os.path.join(BIN, "jobmon-slurm-hooks"), "install", str(tmp_path)] \
        if installer == "slurm" else [os.path.join(BIN, "jobmon-condor-setup"),
                                      f"--bin-dir={tmp_path / 'bin'}",
                                      f"--condor-config-dir={tmp_path / 'conf'}"]
    r = subprocess.run(argv + [f"--python={venvs['good']}"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1, r.stderr
    assert "/etc/jobmon/jobmon.toml: no such file" in r.stderr and "home store" in r.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("installer", ["slurm", "condor"])
def test_installers_refuse_a_site_file_job_users_cannot_read(venvs, tmp_path, installer):
    """A site file mode 0600 in a directory mode 0700: refused, with one line that says
    so and the fix; the fix run as printed, the same install succeeds."""
    d = pathlib.Path(shared_tmpdir()) / "etc"
    d.mkdir(mode=0o700)
    path = d / "jobmon.toml"
    path.write_text('[store]\nkind = "local"\n')
    os.chmod(path, 0o600)
    install = slurm_install if installer == "slurm" else condor_setup
    r = install(tmp_path, venvs["good"], str(path))
    assert r.returncode == 1 and os.listdir(tmp_path) == []
    reason, fix = r.stderr.splitlines()
    assert "not installed: job users cannot read" in reason and str(d) in reason
    fix = fix.strip()
    assert fix.startswith("fix: ")
    subprocess.run(["sh", "-e", "-c", fix[len("fix: "):]], check=True, timeout=60)
    r = install(tmp_path, venvs["good"], str(path))
    assert r.returncode == 0, r.stderr


def test_slurm_install_writes_wrappers_that_run_the_checked_interpreter(venvs, tmp_path,
                                                                        site_file):
    r = slurm_install(tmp_path, venvs["good"], site_file, "--run-dir=/run/x",
                      "--prolog-limit=7", "--check-user=jobmon-test")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "jobmon-prolog").read_text()
    assert f"PYTHON={venvs['good']}\n" in text and f"JOBMON_CONFIG={site_file}\n" in text
    assert "--run-dir=/run/x" in text and "timeout -s KILL 7" in text


def test_condor_setup_writes_a_fast_wrapper_and_the_cron_environment(venvs, tmp_path,
                                                                     site_file):
    r = condor_setup(tmp_path, venvs["good"], site_file)
    assert r.returncode == 0, r.stderr
    wrapper = (tmp_path / "bin" / "jobmon-condor-wrapper").read_text()
    assert wrapper.startswith(f"#!{venvs['good']} -IS\n")
    assert f"sys.path.append({site_packages(venvs['good'])!r})" in wrapper
    assert f"main(config={site_file!r})" in wrapper
    conf = (tmp_path / "conf" / "50-jobmon-wrapper.conf").read_text()
    assert f"USER_JOB_WRAPPER = {tmp_path / 'bin' / 'jobmon-condor-wrapper'}\n" in conf
    cron = (tmp_path / "conf" / "51-jobmon-shipper-cron.conf").read_text()
    # a startd cron job gets no environment but its _ENV: the site file must be in it
    assert f'STARTD_CRON_JOBMON_ENV = "JOBMON_CONFIG={site_file}"\n' in cron
    assert f"STARTD_CRON_JOBMON_EXECUTABLE = {os.path.dirname(venvs['good'])}/jobmon\n" in cron
    r = condor_setup(tmp_path / "2", venvs["good"], site_file, "--no-shipper-cron")
    assert r.returncode == 0 and not (tmp_path / "2" / "conf" / "51-jobmon-shipper-cron.conf").exists()


def test_condor_setup_wrapper_runs_jobs_under_the_starter(venvs):
    """The wrapper jobmon-condor-setup wrote, under the starter's contract: the job's
    status exact, the job monitored (a record in the store the site file names), the
    site file read from the wrapper, not from the job's environment."""
    from test_condor_wrapper import Starter, py
    s = Starter(site="[condor]\ninterval = 0.2\n")
    where = pathlib.Path(s.base) / "setup"       # where the job's user can reach it
    r = condor_setup(where, venvs["good"], s.config, "--check-user=jobmon-test",
                     "--no-shipper-cron")
    assert r.returncode == 0, r.stderr
    s.prepare()
    s.env["JOBMON_CONFIG"] = "/nonexistent/jobmon.toml"   # the job's own: not the wrapper's
    p = s.popen_prepared(py("import time, sys; time.sleep(0.3); sys.exit(3)"),
                         wrapper=[str(where / "bin" / "jobmon-condor-wrapper")],
                         stdin=subprocess.DEVNULL)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 3 and err == b"", err
    [(info, summary, samples)] = s.records("5.0")
    assert summary["exit_code"] == 3 and samples


def test_deploy_condor_is_what_setup_writes():
    from jobmon.plugins.condor import setup
    deploy = os.path.join(os.path.dirname(os.path.dirname(__file__)), "deploy", "condor")
    with open(os.path.join(deploy, "50-jobmon-wrapper.conf")) as f:
        assert f.read() == setup.WRAPPER_CONF.format(wrapper="/usr/local/bin/jobmon-condor-wrapper")
    with open(os.path.join(deploy, "51-jobmon-shipper-cron.conf")) as f:
        assert f.read() == setup.CRON_CONF.format(jobmon="/opt/jobmon/bin/jobmon",
                                                  config="/etc/jobmon/jobmon.toml",
                                                  spool="/var/spool/jobmon",
                                                  state="/var/lib/jobmon")


def test_every_install_option_is_documented():
    from jobmon.plugins.condor import setup
    from jobmon.plugins.slurm import install
    docs = {name: open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "docs",
                                    name)).read() for name in ("slurm.md", "htcondor.md")}
    for usage, doc in ((install.USAGE, docs["slurm.md"]), (setup.USAGE, docs["htcondor.md"])):
        for word in usage.split():
            if word.strip("[]").startswith("--"):
                option = word.strip("[]").split("=")[0]
                assert option in doc, option


def test_jobmon_run_imports_only_what_it_uses(venvs, tmp_path):
    """`jobmon run` starts inside every job: the installed command reaches the runner
    without the CLI framework and without `re` (the entry-point script pip < 25.1 writes
    imports it first: ~6 ms of CPU at every job's start)."""
    jobmon = os.path.join(os.path.dirname(venvs["good"]), "jobmon")
    r = subprocess.run([jobmon, "run", "--cgroup=none", f"--store={tmp_path}/db", "--", "true"],
                       env=dict(os.environ, PYTHONPROFILEIMPORTTIME="1"), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    imported = {line.rsplit("|", 1)[1].strip() for line in r.stderr.splitlines()
                if line.startswith("import time:")}
    assert "jobmon.job.runner" in imported
    assert not imported & {"re", "typer", "click", "rich"}, sorted(imported)
