"""What Slurm does around a job that jobmon's Slurm sampler cannot see by sampling, on the
real cluster (tests/slurm, cgroup v1 on a hybrid host): a memory spike that lives between
two samples, and the processes Slurm kills when a job's tasks have ended.

The sampler watches from beside the job and reaps none of its processes, so its footprint
peak is sampled only; the kernel keeps the cgroup's exact high-water mark, and that is
what sizes the job (memory efficiency, advice, `jobmon report`'s right-sizing).
"""
import json
import subprocess

import pytest

from helpers import JOBMON

pytestmark = [pytest.mark.root, pytest.mark.slow]

MiB = 1 << 20
# each array task: 1 s quiet, then (40 + 30 x task id) MiB touched and held 0.3 s, freed,
# 1 s quiet again. It prints its own footprint at that peak (RssAnon + RssShmem, read
# while it holds the memory): its true peak, what a memory limit must leave it. (VmHWM
# would count the interpreter's file pages too, which the page cache holds for everyone
# and the job's cgroup is not charged for.)
SPIKE_TASK = """/usr/bin/python3 -c '
import json, os, time
def footprint():
    kb = {l.split(":")[0]: int(l.split()[1]) for l in open("/proc/self/status") if "kB" in l}
    return (kb["RssAnon"] + kb["RssShmem"]) << 10
time.sleep(1.0)
x = bytearray((40 + 30 * int(os.environ["SLURM_ARRAY_TASK_ID"])) << 20)
for i in range(0, len(x), 4096): x[i] = 1
peak = footprint()
time.sleep(0.3)
del x
time.sleep(1.0)
print(json.dumps({"peak": peak}))'
"""
TASKS = 4


def report_json(site, *args):
    r = subprocess.run([JOBMON, "report", "--json", *args], env=site.env(),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_array_spikes_between_samples_are_covered_by_rightsizing(jobmon_slurm):
    """Peaks of 0.3 s, seconds away from any sample: the records and the right-sizing
    take the kernel's exact peak (page cache included, so never below the truth), and
    the suggested request covers every task's true peak."""
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    site.write_config(interval=5.0)
    jid = slurm.submit(SPIKE_TASK, array=f"0-{TASKS - 1}", mem="400M",
                       output="slurm-%A_%a.out")
    slurm.wait_done(jid)
    truth, recs = {}, {}
    for task in range(TASKS):
        job = f"{jid}_{task}"
        [recs[job]] = site.wait_record(job)
        truth[job] = json.loads(slurm.output(job).strip().splitlines()[-1])["peak"]
    r = site.ship()
    assert r.returncode == 0, r.stderr
    batches = [b for b in report_json(site, "--since", "1h")["batches"]
               if b["kind"] == "array" and b["name"] == str(jid)]
    assert len(batches) == 1, batches
    [batch] = batches
    assert all(truth[j] <= batch["memory_bytes"] for j in truth), (batch, truth)
    print(batch["advice"][0])
    assert batch["peak_basis"] == "kernel"
    assert "the kernel's peaks, page cache included" in " ".join(batch["advice"])
    for job, rec in recs.items():
        s = rec.summary
        print(f"{job}: truth {truth[job] / MiB:.1f} MiB, kernel peak "
              f"{s['mem_peak_bytes'] / MiB:.1f}, sampled footprint "
              f"{s['rss_peak_bytes'] / MiB:.1f}")
        assert s["mem_sizing_basis"] == "kernel", s
        assert s["mem_sizing_peak_bytes"] == s["mem_peak_bytes"] >= truth[job], (job, s)
        assert s["mem_efficiency_percent"] == pytest.approx(
            100 * s["mem_peak_bytes"] / s["mem_allocated_bytes"], abs=0.01)
    # the samples did miss the spikes: what the sampled footprint alone would have said
    missed = [j for j, rec in recs.items() if rec.summary["rss_peak_bytes"] < truth[j] / 2]
    assert missed, {j: (r.summary["rss_peak_bytes"], truth[j]) for j, r in recs.items()}


# a daemon the batch script starts and does not wait for, one in an srun step too; and
# background work that ends on its own before the script does (not left over)
LEAVES_DAEMONS = """setsid sleep 300 &
(sleep 0.2) &
srun /bin/sh -c 'setsid sleep 300 & sleep 1.5'
sleep 1.5
exit 0
"""


def test_processes_slurm_kills_at_the_end_are_counted_and_shown(jobmon_slurm, tmp_path):
    """Slurm kills what is left in a step when its tasks end (proctrack/cgroup): the job
    still completes with exit code 0. Its record counts them, per step and for the job,
    and `jobmon query` and the HTML report say so."""
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    jid = slurm.submit(LEAVES_DAEMONS)
    slurm.wait_done(jid)
    [rec] = site.wait_record(jid)
    s = rec.summary
    assert (s["exit_code"], s.get("signal")) == (0, None)
    assert s["leftover_procs"] == 2, s
    assert s["procs_killed_at_end"] == 2, s
    for step, n in (("batch", 1), ("0", 1), ("extern", 0)):
        [r] = site.wait_record(f"{jid}.{step}")
        assert (r.summary["leftover_procs"], r.summary["procs_killed_at_end"]) == (n, n), \
            (step, r.summary)
    r = site.ship()
    assert r.returncode == 0, r.stderr
    q = subprocess.run([JOBMON, "query", str(jid), "--no-scheduler"], env=site.env(),
                       capture_output=True, text=True, timeout=120)
    assert q.returncode == 0, q.stderr
    line = next(l for l in q.stdout.splitlines() if "killed by the scheduler at the end" in l)
    assert line.split()[-1] == "2", q.stdout
    assert "2 processes still running when the job ended were killed by the scheduler" \
        in " ".join(q.stdout.split())
    page = tmp_path / "job.html"
    h = subprocess.run([JOBMON, "report", str(jid), "--html", str(page), "--no-scheduler"],
                       env=site.env(), capture_output=True, text=True, timeout=120)
    assert h.returncode == 0, h.stderr
    assert "of those, killed by the scheduler at the end" in page.read_text()
