"""The pyslurm backend (plugins/slurm/accounting/sacct_pyslurm.py) on what pyslurm 22.5.3, built by
hand for the suite's Slurm 22.05.8, returned for real jobs of the suite's cluster, beside
what `sacct --json -D` said of the same jobs (tests/fixtures/pyslurm-22.5: made by
tests/slurm/record_pyslurm.py; its README says how). The recorded objects stand in for
pyslurm's own: every public attribute it had, nothing jobmon wrote."""
import json
import os
import subprocess
import sys

import pytest

from helpers import REPO
from jobmon.plugins.slurm.accounting import sacct, sacct_json, sacct_pyslurm

with open(os.path.join(REPO, "tests", "fixtures", "pyslurm-22.5", "jobs.json")) as _f:
    FIX = json.load(_f)


class Recorded:
    """A pyslurm object as recorded: its attributes, nested objects revived too."""

    def __init__(self, attrs):
        for k, v in attrs.items():
            if k != "__class__":
                setattr(self, k, revive(v))


def revive(v):
    if isinstance(v, dict) and "__class__" in v:
        return Recorded(v)
    if isinstance(v, dict):
        return {k: revive(x) for k, x in v.items()}
    if isinstance(v, list):
        return [revive(x) for x in v]
    return v


class RecordedPyslurm:
    """The module as the backend calls it: db.Jobs.load(db.JobFilter(ids=[ID])), with the
    keyword arguments pyslurm 22.5.3's JobFilter takes (it refuses any other)."""
    __version__ = FIX["pyslurm"]

    class db:
        class JobFilter:
            KNOWN = {"ids", "start_time", "end_time", "accounts", "users", "clusters",
                     "partitions", "names", "with_script", "with_env"}

            def __init__(self, **kw):
                unknown = set(kw) - self.KNOWN
                if unknown:
                    raise AttributeError(f"'pyslurm.db.job.JobFilter' object has no "
                                         f"attribute {sorted(unknown)[0]!r}")
                self.ids = kw.get("ids")

        class Jobs:
            @staticmethod
            def load(db_filter):
                (jid,) = db_filter.ids
                return {j["id"]: revive(j) for j in FIX["pyslurm_jobs"].get(str(jid), [])}


def by_job(records):
    return {r.job: r for r in records}


@pytest.mark.parametrize("case", sorted(FIX["cases"]))
def test_pyslurm_reads_what_sacct_reads(case):
    jid = FIX["cases"][case]
    got = by_job(sacct_pyslurm.PyslurmSource(RecordedPyslurm()).lookup(jid))
    want = by_job(sacct_json.records_from_json(FIX["sacct_json"][jid]))
    assert got.keys() == want.keys()          # array task 0 included
    for job, w in want.items():
        g = got[job]
        assert (g.job_id_raw, g.state, g.user, g.account, g.partition, g.start_time,
                g.end_time, g.alloc_cpus, g.cancelled_by) == \
               (w.job_id_raw, w.state, w.user, w.account, w.partition, w.start_time,
                w.end_time, w.alloc_cpus, w.cancelled_by), job
        assert {s.step for s in g.steps} == {s.step for s in w.steps}
        # TRES CPU in 10 ms steps (milliseconds in pyslurm 22.5), never 1000 times off
        assert g.cpu_seconds == pytest.approx(w.cpu_seconds, abs=0.02 * len(w.steps)), job
        assert g.max_rss_bytes == w.max_rss_bytes and g.max_rss_step == w.max_rss_step


def test_pyslurm_has_the_exit_code_sacct_json_loses():
    """22.05's sacct --json says 0 for a job that exited 3 (SacctSource asks the text
    ExitCode again); pyslurm has the code. The OOM kill is Slurm's signal 125."""
    src = sacct_pyslurm.PyslurmSource(RecordedPyslurm())
    [failed] = src.lookup(FIX["cases"]["failed"])
    assert (failed.state, failed.exit_code, failed.signal) == ("FAILED", 3, None)
    [oom] = src.lookup(FIX["cases"]["oom"])
    assert (oom.state, oom.signal) == ("OUT_OF_MEMORY", 125)


def test_pyslurm_only_where_the_site_asks_for_it(monkeypatch):
    """auto is sacct even where a matching pyslurm imports: pyslurm shows only a job's last
    run (no release asks slurmdbd for a requeued job's others) and its user and system CPU
    in whole seconds."""
    monkeypatch.setitem(sys.modules, "pyslurm", RecordedPyslurm())
    monkeypatch.setattr(sacct_pyslurm, "slurm_release", lambda *a: (22, 5))
    monkeypatch.setenv("PATH", os.path.dirname(sacct_path()) + ":" + os.environ["PATH"])

    def source(kind):
        return sacct.source({"slurm": {"sacct": "sacct", "accounting": kind}})
    assert isinstance(source("auto"), sacct.SacctSource)
    assert isinstance(source("pyslurm"), sacct_pyslurm.PyslurmSource)


def sacct_path():
    import shutil
    path = shutil.which("sacct")
    if not path:
        pytest.skip("no sacct here (tests/setup.sh installs Slurm)")
    return path


@pytest.mark.root
def test_pyslurm_backend_where_installed(jobmon_slurm_cluster):
    """Live, where the suite's Python imports a pyslurm (none from PyPI matches Slurm
    22.05: docs/slurm.md says how to build one): its records of a real job are sacct's."""
    c = jobmon_slurm_cluster.cluster
    probe = subprocess.run([sys.executable, "-c", "import pyslurm"], env=c.env(
        PYTHONPATH=os.environ.get("PYTHONPATH", "")), capture_output=True, text=True)
    if probe.returncode:
        pytest.skip("pyslurm is not importable here (PyPI has no build for Slurm 22.05)")
    jid = str(c.submit("sleep 0.5\nexit 3\n"))
    c.wait(jid)
    code = ("import json, sys; from jobmon.plugins.slurm.accounting import sacct_pyslurm as p\n"
            "src = p.source()\nprint(json.dumps([r.as_dict() for r in src.lookup(sys.argv[1])]"
            ", default=str))")
    r = subprocess.run([sys.executable, "-c", code, jid], env=c.env(
        PYTHONPATH=os.environ.get("PYTHONPATH", "")), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    [got] = json.loads(r.stdout)
    [want] = sacct.SacctSource(env=c.env()).lookup(jid)
    assert (got["state"], got["exit_code"], got["start_time"], got["end_time"]) == \
           (want.state, want.exit_code, want.start_time, want.end_time)
