"""The batch script's hash on the suite's real Slurm cluster: the sampler reads slurmd's
own copy of the script while the job runs and records its SHA-256 (docs/schema.md,
`script_hash`), never its text."""
import hashlib

import pytest

pytestmark = [pytest.mark.root, pytest.mark.slow]

SCRIPT = """#!/bin/sh
# {marker}
sleep {seconds}
"""


def expected(text):
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_batch_script_hash_recorded_not_its_text(jobmon_slurm):
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    texts = [SCRIPT.format(marker="jobmon-compare-marker-one", seconds=2),
             SCRIPT.format(marker="jobmon-compare-marker-two", seconds=2)]
    jids = [slurm.submit(t) for t in texts]
    recs = [site.wait_record(j)[0] for j in jids]
    got = [r.job_tags.get("script_hash") for r in recs]
    assert got == [expected(t) for t in texts], got
    assert got[0] != got[1]
    for r in recs:     # the job point's own field too, where InfluxQL selects by it
        assert r.summary["script_hash"] == r.job_tags["script_hash"]
        with open(r.path, "rb") as f:
            assert b"jobmon-compare-marker" not in f.read()   # never the script's text
    assert site.warnings_text() == ""


def test_a_job_without_a_batch_script_has_its_tasks_command_hash(jobmon_slurm):
    """`srun` without sbatch: no script; the hash is the first task's command line, the
    same for two such jobs, and never the batch script's kind."""
    import shutil
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    task = ["/bin/sh", "-c", "echo $SLURM_JOB_ID; sleep 2"]
    jids = [int(slurm.run([shutil.which("srun"), "-N1", "-n1", *task], user="jobmon-test",
                          timeout=120).stdout.split()[0]) for _ in range(2)]
    recs = [site.wait_record(j)[0] for j in jids]
    want = hashlib.sha256(b"".join(a.encode() + b"\0" for a in task)).hexdigest()[:16]
    assert [r.job_tags.get("command_hash") for r in recs] == [want, want]
    assert all("script_hash" not in r.job_tags for r in recs)
    assert site.warnings_text() == ""
