"""`jobmon query` on real Slurm jobs: what the Prolog's samplers recorded, shipped to a
real InfluxDB by `jobmon ship`, read back and shown beside what sacct recorded of the same
job, with the disagreements flagged and explained.

Ids as users type them: 12345 (a job; for an array, every task), 12345_7 (an array task).
A heterogeneous job's components never share a node, and the test cluster has one: its
het job stays pending and is cancelled, which still gives sacct's real `12345+N` records
to look up.
"""
import json
import subprocess
import time

import pytest

from helpers import JOBMON
from slurm.common import SBIN_PATH

pytestmark = [pytest.mark.root, pytest.mark.slow]

MiB = 1 << 20
# 0.5 s of CPU and 60 MiB held 1.5 s in a step of its own, then a second step
STEP = ("import time\nwhile time.process_time() < 0.5: pass\nx = bytearray(60 << 20)\n"
        "for i in range(0, len(x), 4096): x[i] = 1\ntime.sleep(1.5)")
STEPS_JOB = f'srun /usr/bin/python3 -c "{STEP}"\nsrun /bin/sleep 0.2\n'
# task N holds (120 + 80 N) MiB for a moment (the sampler, every 1 s, is unlikely to see
# it; the kernel's peak has it), then is busy 0.2 s of CPU
ARRAY_JOB = ("/usr/bin/python3 -c 'import os, time\n"
             "x = bytearray((120 + 80 * int(os.environ[\"SLURM_ARRAY_TASK_ID\"])) << 20)\n"
             "for i in range(0, len(x), 4096): x[i] = 1\n"
             "del x\nwhile time.process_time() < 0.2: pass'\n"
             "sleep 0.5\n")
# 100 MiB for 0.2 s, the whole job shorter than Slurm's 1 s between accounting samples
SHORT_JOB = ("/usr/bin/python3 -c 'import time\nx = bytearray(100 << 20)\n"
             "for i in range(0, len(x), 4096): x[i] = 1\ntime.sleep(0.2)'\n")
HET_JOB = "#!/bin/sh\n#SBATCH -n1\n#SBATCH hetjob\n#SBATCH -n1\n/bin/true\n"


def wait_pending(c, jid, timeout=60):
    """Until the controller has every component of the job, all pending."""
    deadline = time.monotonic() + timeout
    while True:
        states = [j.get("JobState") for j in c.ctld_jobs(jid)]
        if len(states) == 2 and all(s == "PENDING" for s in states):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"het job {jid}: {states}, not pending")
        time.sleep(0.2)


def wait_sacct(src, job, state, timeout=30):
    """sacct's records of `job` once it has them all in `state` (slurmdbd lags)."""
    deadline = time.monotonic() + timeout
    while True:
        recs = src.lookup(job)
        if recs and all(r.state == state for r in recs):
            return recs
        if time.monotonic() > deadline:
            raise AssertionError(f"sacct {job}: {[(r.job, r.state) for r in recs]}")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def shipped(jobmon_slurm_cluster):
    """Jobs run through jobmon's Prolog and Epilog, over in sacct, their records shipped."""
    site = jobmon_slurm_cluster
    c = site.cluster
    ids = {"steps": c.submit(STEPS_JOB), "array": c.submit(ARRAY_JOB, array="0-1"),
           "cancelled": c.submit("sleep 300\n"), "het": c.submit(HET_JOB),
           "short": c.submit(SHORT_JOB)}
    c.wait_running(ids["cancelled"])
    time.sleep(1.5)                  # sampled a while
    c.scancel(str(ids["cancelled"]))
    wait_pending(c, ids["het"])
    c.scancel(str(ids["het"]))
    c.wait_done(ids["het"])
    for name in ("steps", "array", "cancelled", "short"):
        c.wait(ids[name])
        if name != "array":
            site.wait_record(ids[name])
    for task in (0, 1):
        site.wait_record(f"{ids['array']}_{task}")
    r = site.ship()
    assert r.returncode == 0, r.stderr
    return site, ids


def query(site, *args, check=True):
    env = dict(site.env(), PATH=SBIN_PATH, SLURM_CONF=site.cluster.conf)
    r = subprocess.run([JOBMON, "query", *args], env=env, capture_output=True, text=True,
                       timeout=120)
    if check:
        assert r.returncode == 0, f"jobmon query {args}: {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def query_json(site, job):
    return json.loads(query(site, str(job), "--json").stdout)


def named(rows):
    return {r["name"]: r["value"] for r in rows}


def figures(sch):
    return {label: value for label, value, _unit in sch["figures"]}


def test_job_beside_sacct(shipped):
    site, ids = shipped
    jid = str(ids["steps"])
    doc = query_json(site, jid)
    header, sch = doc["job"], doc["scheduler"]
    assert header["job"] == jid and header["scheduler"] == "slurm"
    assert header["tags"]["account"] == "jobmon" and header["tags"]["partition"] == "debug"
    totals = named(doc["totals"])
    cpu = totals["CPU user"] + totals["CPU system"]
    assert cpu >= 0.5 and len(doc["samples"]) >= 2           # jobmon's series and totals
    assert sch["name"] == "Slurm" and sch["source"] == "sacct-json", sch
    slurm = figures(sch)
    assert slurm["state"] == "COMPLETED" and slurm["exit"] == "exit code 0"
    # sacct sums its steps' CPU; jobmon's cgroup holds them all: they agree here
    assert abs(slurm["TotalCPU"] - cpu) < max(0.1, 0.02 * cpu), (slurm["TotalCPU"], cpu)
    assert not [d for d in sch["differences"] if d["field"] == "cpu_seconds"]
    # sacct's MaxRSS is the largest step's, not .batch's (a shell of a few MiB)
    assert slurm["MaxRSS (sampled, largest step)"] >= 50 * MiB
    assert sch["end"]["max_rss_step"] == "0"
    assert sch["allocation"]["cores_allocated"] >= 1
    # where they disagree, each difference says why
    assert all(d["reason"] for d in sch["differences"])
    text = query(site, jid).stdout
    assert "Slurm" in text and "TotalCPU" in text and "COMPLETED" in text


def test_cancelled_job(shipped):
    site, ids = shipped
    doc = query_json(site, ids["cancelled"])
    sch = doc["scheduler"]
    assert figures(sch)["state"] == "CANCELLED"
    # the Epilog's status and sacct's ExitCode (0:0 for the job; 0:15 its batch step) agree
    assert doc["summary"]["exit_code"] == 0 and sch["end"]["exit_code"] == 0
    assert not [d for d in sch["differences"] if d["field"] == "exit"]
    assert "CANCELLED" in query(site, str(ids["cancelled"])).stdout


def test_short_job_sampled_maxrss_flagged(shipped):
    """A job shorter than Slurm's sampling interval: sacct's MaxRSS misses its 100 MiB,
    jobmon's kernel high-water mark has it, and the report says why they differ."""
    site, ids = shipped
    doc = query_json(site, ids["short"])
    sch = doc["scheduler"]
    assert doc["summary"]["mem_peak_bytes"] >= 100 * MiB
    assert figures(sch)["MaxRSS (sampled, largest step)"] < 50 * MiB, sch["figures"]
    rows = [d for d in sch["differences"] if d["field"] == "max_rss_bytes"]
    assert len(rows) == 1, ({k: v for k, v in doc["summary"].items() if "peak" in k or
                             "rss" in k}, sch["differences"])
    [row] = rows
    assert row["jobmon"] >= 100 * MiB and "JobAcctGatherFrequency" in row["reason"]
    text = " ".join(query(site, str(ids["short"])).stdout.split())
    assert "JobAcctGatherFrequency" in text


def test_array_task_and_whole_array(shipped):
    site, ids = shipped
    arr = ids["array"]
    doc = query_json(site, f"{arr}_1")
    assert doc["job"]["job"] == f"{arr}_1"
    assert doc["job"]["tags"]["array_job_id"] == str(arr)
    assert doc["job"]["tags"]["array_task_id"] == "1"
    sch = doc["scheduler"]
    assert sch["end"]["job"] == f"{arr}_1" and sch["end"]["array_task_id"] == "1"
    assert figures(sch)["state"] == "COMPLETED"
    cpu = named(doc["totals"])["CPU user"] + named(doc["totals"])["CPU system"]
    assert abs(figures(sch)["TotalCPU"] - cpu) < 0.1
    group = json.loads(query(site, str(arr), "--json").stdout)
    assert sorted(j["job"]["job"] for j in group["jobs"]) == [f"{arr}_0", f"{arr}_1"]


def test_the_array_table_shows_each_tasks_sizing_peak(shipped):
    """`jobmon query ARRAY`: the table of tasks shows the peak that sizes each one -- a
    Slurm task's is the kernel's (memory.max_usage_in_bytes), which has each task's
    moment of 120 or 200 MiB -- not the sampled resident peak, which misses it."""
    site, ids = shipped
    arr = ids["array"]
    env_cols = dict(site.env(), PATH=SBIN_PATH, SLURM_CONF=site.cluster.conf, COLUMNS="200")
    r = subprocess.run([JOBMON, "query", str(arr)], env=env_cols, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = {}
    for line in r.stdout.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) > 2 and cells[1] in (f"{arr}_0", f"{arr}_1"):
            rows[cells[1]] = cells[-2]
    assert "memory peak" in r.stdout and "kernel peak" in r.stdout, r.stdout
    for task, mib in ((0, 120), (1, 200)):
        summary = query_json(site, f"{arr}_{task}")["summary"]
        peak, unit = rows[f"{arr}_{task}"].split()
        print(f"task {task}: table {peak} {unit}, kernel {summary['mem_peak_bytes'] >> 20} "
              f"MiB, sampled resident {summary['rss_peak_bytes'] / MiB:.1f} MiB")
        assert unit == "MiB" and mib <= float(peak) < mib + 60, (task, r.stdout)


def test_het_components_in_sacct(shipped):
    site, ids = shipped
    from jobmon.plugins.slurm.accounting import sacct
    src = sacct.SacctSource(env=site.cluster.env())
    het = ids["het"]
    assert sorted(r.job for r in wait_sacct(src, str(het), "CANCELLED")) == \
        [f"{het}+0", f"{het}+1"]
    for offset in (0, 1):
        [rec] = src.lookup(f"{het}+{offset}")
        assert rec.job == f"{het}+{offset}" and rec.het_job_id == str(het)
        assert rec.het_job_offset == str(offset) and rec.state == "CANCELLED"
    # no Prolog ran for it, so jobmon has nothing, and says so
    r = query(site, f"{het}+0", check=False)
    assert r.returncode == 1 and "no job" in r.stderr
