"""The fault matrix: whatever goes wrong with jobmon on a node, the node is never drained,
every job runs to its end as it would without jobmon, and no sampler is left behind.

Each scenario breaks one thing the way a site could (a bad config, a full or unwritable
spool, a database down, a missing or broken interpreter, a broken jobmon, an unwritable
run directory, a job cancelled in its Prolog, a sampler killed or stuck), runs real jobs
through the real Prolog and Epilog, and checks the node with the harness's
drained_nodes(); the `jobmon_slurm` fixture checks, after each, that no node was drained
and no sampler is left."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from slurm_site import HOOKS, PYTHON, samplers

pytestmark = [pytest.mark.root, pytest.mark.slow]

JOB = "sleep 1\necho done\n"


def run_job(slurm, script=JOB, state="COMPLETED"):
    jid = slurm.submit(script)
    [rec] = slurm.wait_done(jid, timeout=180)
    assert rec["JobState"] == state, rec
    assert slurm.drained_nodes() == []
    if state == "COMPLETED":
        assert slurm.output(jid).strip().endswith("done")
    return jid


def script(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


@pytest.fixture
def scratch():
    d = tempfile.mkdtemp(prefix="jobmon-fault-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_bad_config(jobmon_slurm):
    with open(jobmon_slurm.config, "w") as f:
        f.write("[slurm\ninterval = ")
    run_job(jobmon_slurm.cluster)


def test_config_missing(jobmon_slurm, scratch):
    jobmon_slurm.install(config=os.path.join(scratch, "no-such.toml"))
    run_job(jobmon_slurm.cluster)


def test_spool_unwritable(jobmon_slurm, scratch):
    """A spool directory that is not set up (no sticky bit, root's): the sampler will not
    write there; the job runs on."""
    jobmon_slurm.write_config(spool=scratch)
    run_job(jobmon_slurm.cluster)
    assert os.listdir(scratch) == []
    assert "spool" in jobmon_slurm.warnings_text()


def test_spool_missing(jobmon_slurm, scratch):
    jobmon_slurm.write_config(spool=os.path.join(scratch, "gone"))
    run_job(jobmon_slurm.cluster)


def test_spool_disk_full(jobmon_slurm, scratch):
    """The spool on a full filesystem (a 512 KiB tmpfs, filled up): the job runs; what the
    sampler could not spool is counted, never silently lost."""
    mnt = os.path.join(scratch, "mnt")
    os.mkdir(mnt)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k,mode=755", "jobmon-full", mnt],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"cannot mount a small tmpfs here: {r.stderr.strip()}")
    try:
        spool = os.path.join(mnt, "spool")
        jobmon_slurm.write_config(spool=spool)
        subprocess.run([shutil.which("jobmon", path=os.path.dirname(PYTHON)), "ship"],
                       env=jobmon_slurm.env(), capture_output=True, timeout=60)
        assert os.stat(spool).st_mode & 0o1000, "the shipper did not prepare the spool"
        with open(os.path.join(mnt, "filler"), "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        run_job(jobmon_slurm.cluster)
    finally:
        subprocess.run(["umount", "-l", mnt], capture_output=True)


def test_influxdb_down(jobmon_slurm):
    """No database at all: the samplers spool as always (the shipper sends later)."""
    jobmon_slurm.write_config(url="http://127.0.0.1:9")
    jid = run_job(jobmon_slurm.cluster)
    [rec] = jobmon_slurm.wait_record(jid)
    assert rec.summary["samples"] >= 1


def test_python_missing(jobmon_slurm, scratch):
    jobmon_slurm.install(python=os.path.join(scratch, "no-python"))
    run_job(jobmon_slurm.cluster)


def test_python_broken(jobmon_slurm, scratch):
    """An interpreter that fails at once (exits 1), and one that crashes (SIGSEGV)."""
    jobmon_slurm.install(python=script(os.path.join(scratch, "python3"), "#!/bin/sh\nexit 1\n"))
    run_job(jobmon_slurm.cluster)
    jobmon_slurm.install(python=script(os.path.join(scratch, "python3"),
                                       "#!/bin/sh\nkill -SEGV $$\n"))
    run_job(jobmon_slurm.cluster)


def test_python_hangs(jobmon_slurm, scratch):
    """An interpreter that never returns (a hung file system): the wrapper's timeout ends
    it; the Prolog takes its 3 s and exits 0."""
    jobmon_slurm.install(python=script(os.path.join(scratch, "python3"),
                                       "#!/bin/sh\nexec /bin/sleep 600\n"))
    t = time.monotonic()
    run_job(jobmon_slurm.cluster)
    assert time.monotonic() - t < 60


def test_jobmon_missing(jobmon_slurm, scratch):
    jobmon_slurm.install(hooks_path=os.path.join(scratch, "hooks.py"))
    run_job(jobmon_slurm.cluster)


def test_jobmon_broken(jobmon_slurm, scratch):
    """A hooks.py that does not even compile (a botched upgrade)."""
    with open(HOOKS) as f:
        text = f.read()
    broken = os.path.join(scratch, "hooks.py")
    with open(broken, "w") as f:
        f.write(text + "\ndef (:\n")
    jobmon_slurm.install(hooks_path=broken)
    run_job(jobmon_slurm.cluster)


def test_run_dir_unwritable(jobmon_slurm, scratch):
    """No pid file can be written: the Epilog cannot reach the sampler, which ends by
    itself with its job's cgroup."""
    blocker = os.path.join(scratch, "file")
    open(blocker, "w").close()
    jobmon_slurm.install(run_dir=os.path.join(blocker, "run"))
    jid = run_job(jobmon_slurm.cluster)
    [rec] = jobmon_slurm.wait_record(jid)
    assert rec.summary.get("exit_code") is None   # no Epilog's word: not guessed


def test_sampler_disabled(jobmon_slurm):
    jobmon_slurm.write_config(enabled=False)
    jid = run_job(jobmon_slurm.cluster)
    time.sleep(1)
    assert str(jid) not in jobmon_slurm.records()


def test_job_cancelled_during_prolog(jobmon_slurm, scratch):
    """A slow interpreter start keeps the Prolog busy 2 s; the job is cancelled then."""
    slow = script(os.path.join(scratch, "python3"), f"#!/bin/sh\n/bin/sleep 2\nexec {PYTHON} \"$@\"\n")
    jobmon_slurm.install(python=slow)
    slurm = jobmon_slurm.cluster
    jid = slurm.submit("sleep 30\n")
    time.sleep(0.8)
    slurm.scancel(str(jid))
    [rec] = slurm.wait_done(jid, timeout=120)
    assert rec["JobState"] == "CANCELLED"
    assert slurm.drained_nodes() == []


def test_sampler_killed_mid_job(jobmon_slurm):
    """The job's user (or the OOM killer) kills the sampler: the job runs on; the
    Epilog finds no sampler to stop."""
    slurm = jobmon_slurm.cluster
    jid = slurm.submit("sleep 3\necho done\n")
    slurm.wait_running(jid)
    time.sleep(0.5)
    for pid, _comm in samplers(slurm):
        os.kill(pid, signal.SIGKILL)
    [rec] = slurm.wait_done(jid)
    assert rec["JobState"] == "COMPLETED" and slurm.drained_nodes() == []


def test_sampler_stuck(jobmon_slurm):
    """A sampler that never answers (stopped): the Epilog kills it after its bounded
    wait, and the node is fine."""
    slurm = jobmon_slurm.cluster
    jid = slurm.submit("sleep 2\necho done\n")
    slurm.wait_running(jid)
    time.sleep(0.5)
    stuck = samplers(slurm)
    assert stuck
    for pid, _comm in stuck:
        os.kill(pid, signal.SIGSTOP)
    [rec] = slurm.wait_done(jid, timeout=120)
    assert rec["JobState"] == "COMPLETED" and slurm.drained_nodes() == []
    assert not set(stuck) & set(samplers(slurm))
