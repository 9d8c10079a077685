"""The install sections of docs/slurm.md and docs/htcondor.md, run exactly as written in
a fresh clone on a fresh machine (tests/docs_install.py: a private mount and network
namespace, the suite's Slurm cluster, the starter's contract), for an InfluxDB with and
without authentication: every step succeeds, `jobmon doctor` (the last step) passes, a
job's record reaches InfluxDB through the shipper."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from helpers import REPO, needs_test_user, root

pytestmark = [root, needs_test_user, pytest.mark.slow]


def fresh_clone(dest):
    """The repository as a clone of it would be (tracked and new files, nothing ignored:
    no virtualenv, no build output), from the working tree."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                           capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, files):
        src = os.path.join(REPO, name.decode())
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(dest, name.decode())), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, name.decode()))
    subprocess.run(["chmod", "-R", "a+rX", dest], check=True)


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory):
    """jobmon's dependencies and build requirements, downloaded from the package index
    this machine uses (the namespace has no network)."""
    d = tmp_path_factory.mktemp("wheelhouse")
    os.chmod(d, 0o755)
    r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "-d", str(d), REPO,
                        "setuptools>=64", "wheel"], capture_output=True, text=True,
                       timeout=900, cwd=str(d))
    if r.returncode != 0:
        pytest.skip(f"cannot download jobmon's dependencies: {r.stderr[-500:]}")
    return str(d)


@pytest.mark.parametrize("auth, again", [("noauth", False), ("auth", False), ("auth", True)],
                         ids=["noauth", "auth", "auth-again"])
@pytest.mark.parametrize("doc", ["slurm", "htcondor"])
def test_install_steps_as_written(doc, auth, again, tmp_path, wheelhouse):
    """again: on a node where the `condor` and `jobmon` users are there before (HTCondor's
    or Slurm's packages, an earlier install), every step run twice over."""
    if not shutil.which("unshare") or not shutil.which("influxd"):
        pytest.skip("needs unshare (util-linux) and influxd")
    if doc == "slurm":
        from slurm import have_slurm
        why = have_slurm()
        if why:
            pytest.skip(f"Slurm test cluster: {why}")
    from slurm.processes import lock_free_node
    lock = lock_free_node()      # held here: the namespace's own abstract sockets are apart
    clone = tmp_path / "jobmon"
    fresh_clone(str(clone))
    out = tmp_path / "result.json"
    try:
        # its own processes too: the doctor judges the scheduler by the daemons running
        # (this machine's other test clusters are not the fresh machine's)
        r = subprocess.run(["unshare", "--mount", "--net", "--pid", "--fork", "--mount-proc",
                            "--propagation", "private",
                            sys.executable, os.path.join(REPO, "tests", "docs_install.py"),
                            doc, auth, str(clone), lock.node, wheelhouse, str(out)] +
                           (["again"] if again else []),
                           capture_output=True, text=True, timeout=1500)
    finally:
        lock.release()
        # the overlays' upper layers (the installed machine, ~90 MB), unmounted with the
        # namespace
        shutil.rmtree(tmp_path / "machine", ignore_errors=True)
    assert out.exists(), r.stderr[-5000:]
    res = json.loads(out.read_text())
    failed = [s for s in res.get("steps", []) if s["exit"] != 0]
    assert res.get("steps_ok") and not failed, (failed, res.get("error"), r.stderr[-3000:])
    doctor = [s for s in res["steps"] if "jobmon doctor" in s["block"]]
    assert len(doctor) == (2 if again else 1)
    for d in doctor:
        lines = d["stdout"].splitlines()
        if doc == "htcondor":     # no HTCondor daemon runs here: the one warning
            assert [l for l in lines if l.startswith("warn  scheduler ")], d["stdout"]
            lines = [l for l in lines if not l.startswith("warn  scheduler ")]
        assert lines and all(line.startswith("ok ") for line in lines), d["stdout"]
    summary = json.dumps(res["query"])
    assert '"exit_code": ' in summary, res["query"]
    if doc == "slurm":
        assert res["job_state"] == "COMPLETED"
    else:
        assert res["job"]["exit"] == 3 and res["job"]["stderr"] == ""
        assert res["cron"]["exit"] == 0 and res["cron_after_job"]["exit"] == 0, res
        assert '"exit_code": 3' in summary
        statuses = {c["check"]: c["status"] for c in res["condor_checks"]}
        assert "fail" not in statuses.values(), res["condor_checks"]
