"""Shared helpers for jobmon's tests (plain functions; no pytest fixtures here)."""
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
FIXTURES = os.path.join(TESTS, "fixtures")
PYTHON = sys.executable
# the console script installed next to the interpreter running the tests (.venv/bin/jobmon)
JOBMON = shutil.which("jobmon", path=os.path.dirname(PYTHON)) or shutil.which("jobmon")
TEST_USER = "jobmon-test"

IS_ROOT = os.geteuid() == 0
root = pytest.mark.root
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root")


def fixture(*parts):
    return os.path.join(FIXTURES, *parts)


def read_fixture(*parts):
    with open(fixture(*parts), "rb") as f:
        return f.read()


def have_user(name=TEST_USER):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


needs_test_user = pytest.mark.skipif(not (IS_ROOT and have_user()),
                                     reason=f"needs root and user {TEST_USER} (tests/setup.sh)")


def as_user(argv, user=TEST_USER):
    """argv run as `user` (no supplementary groups), through setpriv."""
    return [shutil.which("setpriv") or "setpriv", f"--reuid={user}", f"--regid={user}",
            "--clear-groups", "--"] + list(argv)


SHARED_TMPDIRS = []   # removed when the session ends (conftest)


def shared_tmpdir(prefix="jobmon-test-"):
    """A temp dir the unprivileged test user can write to (mode 1777, like /tmp); it goes
    when the test session ends, with what the test's jobs left in it."""
    d = tempfile.mkdtemp(prefix=prefix)
    os.chmod(d, 0o1777)
    SHARED_TMPDIRS.append(d)
    return d


def jobmon_run(args, cmd, *, store=None, user=None, env=None, **kw):
    """subprocess.run of `jobmon run ARGS -- CMD`, capturing output unless told otherwise."""
    argv = [JOBMON, "run"] + list(args)
    if store is not None:
        argv.append(f"--store={store}")
    argv += ["--"] + list(cmd)
    if user:
        argv = as_user(argv, user)
    kw.setdefault("capture_output", True)
    kw.setdefault("timeout", 60)
    return subprocess.run(argv, env=env if env is not None else os.environ.copy(), **kw)


def jobmon(*args, **kw):
    """subprocess.run of `jobmon ARGS` (query, list ...)."""
    kw.setdefault("capture_output", True)
    kw.setdefault("timeout", 60)
    kw.setdefault("text", True)
    return subprocess.run([JOBMON] + list(args), **kw)


def job_cgroup_method():
    """The method `jobmon run` as root measures a new job by on this host (`--cgroup=auto`,
    no preferred version): `cgroup-v2` where a v2 cgroup with memory can be made, else
    `cgroup-v1`, else `procfs`. Found by making that cgroup the way jobmon does, and removing
    it: a test expects the version the host has, never assumes one."""
    from jobmon import cgroups
    cg = cgroups.create(f"jobmon-pytest-which-{os.getpid()}")
    if cg is None:
        return "procfs"
    try:
        return f"cgroup-v{cg.version}"
    finally:
        cg.remove()


def load_json(path):
    with open(path) as f:
        return json.load(f)


def cpu_tolerance(truth):
    """The accuracy target of issue 2: within max(1 %, 0.05 s)."""
    return max(0.01 * truth, 0.05)


def py(code, *args):
    """argv running `code` with the interpreter of the tests (readable by the test user)."""
    return [PYTHON, "-c", code] + list(args)


def owned_by(user, *parts):
    """A copy of an HTCondor fixture (a history file, a job ad) whose Owner is `user`: the
    captured records are alice's; a test's runs are its test user's, and the scheduler
    decides whose job a record is (docs/security.md)."""
    with open(fixture(*parts), encoding="utf-8") as f:
        text = f.read()
    path = os.path.join(shared_tmpdir("jobmon-owned-"), parts[-1])
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace('Owner = "alice"', f'Owner = "{user}"'))
    return path


def set_job_cgroup(proc, controller, name, value):
    """Wait for the cgroup v1 `controller` group `jobmon run --cgroup=create` makes for
    `proc` (a Popen) and write `value` into its file `name`, before the job (held at a
    gate) starts. The group is found from the job's process: its name has a suffix where a
    killed jobmon's group of the same pid was left behind."""
    import time
    from jobmon import cgroups
    from jobmon.probes.breakdown import children
    mounts, own = cgroups.own()
    deadline = time.time() + 30
    while True:
        assert time.time() < deadline and proc.poll() is None, "no job cgroup"
        for child in children(b"/proc", proc.pid):
            try:
                with open(f"/proc/{child}/cgroup") as f:
                    path = cgroups.parse_proc_cgroup(f.read())[controller]
            except (OSError, KeyError):
                continue
            if path != own.get(controller) and is_job_cgroup(path, proc.pid):
                d = cgroups.resolve(mounts, {controller: path}, controller)
                with open(os.path.join(d, name), "w") as f:
                    f.write(str(value))
                return
        time.sleep(0.01)


def is_job_cgroup(path, pid):
    """Whether `path` names the cgroup `jobmon run` (pid `pid`) made for its job."""
    name = os.path.basename(path.rstrip("/"))
    return name == f"jobmon-{pid}" or name.startswith(f"jobmon-{pid}.")


def limit_job_memory(proc, limit):
    """The job's memory limit, set as soon as jobmon made its v1 memory cgroup."""
    set_job_cgroup(proc, "memory", "memory.limit_in_bytes", limit)
