"""OOM forensics: a job whose process the kernel kills for memory gets the story -- when,
which process, the job's charge and limit then, anonymous memory against page cache, the
cgroup's counters -- in its summary, `jobmon query`, the HTML page (marked on the memory
plot) and the report card. Real OOM kills: `jobmon run` in a memory-limited cgroup of the
host's version, v1 or v2 (root: the kernel's log), the Slurm test cluster's sampler (the
job's user: no kernel log, the samples), the recorded kernel log of each."""
import json
import os
import subprocess
import time

import pytest

from helpers import (JOBMON, PYTHON, cgroup_tree, fixture, job_cgroup, jobmon, limit_job_memory,
                     memory_dir, needs_root, root)
from jobmon.probes import select
from jobmon.summary import oom
from jobmon.sinks import card_text

MiB = 1 << 20
COMM = os.path.basename(PYTHON)[:15]    # the kernel's name of the job's process
# holds 16 MiB, waits for a sample, then wants N MiB more: killed at a limit below that
GREEDY = ("import sys, time\nx = b'1' * (16 << 20)\ntime.sleep(0.6)\n"
          "y = b'2' * (int(sys.argv[1]) << 20)\ntime.sleep(1)\n")


def kmsg_records(name):
    """The records of a recorded kernel log, as KernelLog reads them from /dev/kmsg (one
    record a read: here from a FIFO, one write a record)."""
    with open(fixture("kmsg", name), "rb") as f:
        lines = [x for x in f.read().split(b"\n") if x]
    out = []
    for line in lines:
        r, w = os.pipe()
        os.write(w, line + b"\n")
        os.close(w)
        log = oom.KernelLog.__new__(oom.KernelLog)
        log.fd = r
        os.set_blocking(r, False)
        try:
            out += log.records()
        except OSError:
            pass
        log.close()
    return out


def test_the_kernel_log_of_an_oom_kill_is_read_as_written():
    [k] = oom.parse_kills(kmsg_records("cgroup-v1-6.18.kmsg"))
    assert (k["pid"], k["command"], k["memcg"]) == (32669, "python3", "/insight-oom-21503")
    assert k["charge_bytes"] == k["limit_bytes"] == 32 << 20 and k["limit_hits"] == 32
    assert k["anon_bytes"] == 33390592 and k["cache_bytes"] == 0      # total_rss, total_cache
    assert k["victim_rss_bytes"] == (32512 + 6644) * 1024
    assert k["time_us"] == 6726540475
    [k] = oom.parse_kills(kmsg_records("slurm-v1-6.18.kmsg"))
    assert k["memcg"] == "/slurm_node01/uid_999/job_3/step_batch/task_0" and k["pid"] == 7015
    # cgroup v2 (6.1): the cgroup's memory.stat comes as one record
    [k] = oom.parse_kills(kmsg_records("cgroup-v2-6.1.kmsg"))
    assert (k["pid"], k["command"], k["memcg"]) == (254, "python", "/jobmon-252")
    assert k["charge_bytes"] == k["limit_bytes"] == 48 << 20 and k["limit_hits"] == 144
    assert k["anon_bytes"] == 50114560 and k["cache_bytes"] == 0       # anon + shmem, file


def test_a_kill_counted_before_the_kernel_logged_it_is_looked_for_again():
    """The kernel counts the kill a moment before it logs the victim: the first look may
    find only the header; the next finds the whole of it."""
    chunks = [kmsg_records("cgroup-v1-6.18.kmsg")[:-1], kmsg_records("cgroup-v1-6.18.kmsg")[-1:]]
    watch = oom.OomWatch.__new__(oom.OomWatch)
    watch.memcg, watch.records, watch.first, watch.before = "/insight-oom-21503", [], None, {}
    watch.log = type("Log", (), {"records": lambda self: chunks.pop(0) if chunks else []})()
    watch.check({"time": 10**18, "oom_kills": 0, "mem_resident_bytes": 1})
    watch.check({"time": 10**18 + 10**9, "oom_kills": 1, "mem_resident_bytes": 2}, 32 << 20)
    assert watch.first["oom_source"] == "samples"
    assert watch.fields()["oom_source"] == "kernel log" and watch.fields()["oom_pid"] == 32669


def test_a_kill_the_final_read_found_came_before_the_jobs_end():
    """A sampler beside the job (Slurm's) makes its final read after the job's last process
    was gone: a kill first counted there happened before the job's end, not at the read
    (seen in the v2 guest: oom_time 0.56 s after end_time)."""
    watch = oom.OomWatch.__new__(oom.OomWatch)
    watch.memcg, watch.records, watch.first, watch.before, watch.log = None, [], None, {}, None
    watch.check({"time": 100 * 10**9, "oom_kills": 0, "mem_resident_bytes": 1})
    watch.check({"time": 102 * 10**9, "oom_kills": 1, "mem_resident_bytes": 2}, 32 << 20)
    f = watch.fields(end=101.5)
    assert (f["oom_time"], f["oom_time_within_seconds"]) == (101.5, 1.5), f
    f = watch.fields(end=103.0)                 # a kill seen by a sample before the end
    assert (f["oom_time"], f["oom_time_within_seconds"]) == (102.0, 2.0), f


def limited_job(tmp_path, limit, want, store=None):
    """`jobmon run` (root, its own cgroup, of the host's version) of GREEDY wanting `want`
    MiB, the cgroup's memory limit set to `limit` before the job starts allocating."""
    summary = str(tmp_path / "s.json")
    argv = [JOBMON, "run", "--interval=0.2", "--job-id=greedy", f"--summary={summary}",
            f"--store={store or 'none'}", "--cgroup=create",
            "--tag=request_memory=48MiB", "--", "/bin/sh", "-c",
            'while [ ! -e "$0" ]; do sleep 0.01; done; exec "$@"', str(tmp_path / "go"),
            PYTHON, "-c", GREEDY, str(want)]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        limit_job_memory(p, limit)
        (tmp_path / "go").touch()
        _out, err = p.communicate(timeout=120)
    finally:
        p.kill()
    with open(summary) as f:
        return p.returncode, json.load(f), err


@root
@needs_root
@cgroup_tree
def test_jobmon_run_with_a_memory_limit_tells_the_story_of_the_kill(tmp_path):
    """A 48 MiB limit, a job that wants 16 + 64 MiB: the kernel kills it. jobmon (root)
    reads the kernel's log: the victim, the moment, the charge and its split."""
    store = str(tmp_path / "store.db")
    t0 = time.time()
    rc, s, err = limited_job(tmp_path, 48 * MiB, 64, store)
    assert rc == -9 and s["signal"] == 9, err              # the job died of it, as it would
    assert s["oom_kills"] == 1 and s["mem_limit_hits"] > 0, s
    assert s["oom_source"] == "kernel log", s
    assert s["oom_command"] == COMM and s["oom_pid"] > 0
    assert t0 < s["oom_time"] < s["end_time"] + 0.01 and s["oom_time_within_seconds"] == 0
    assert s["oom_limit_bytes"] == 48 * MiB
    assert 40 * MiB <= s["oom_charge_bytes"] <= 48 * MiB
    assert s["oom_anon_bytes"] >= 32 * MiB and s["oom_cache_bytes"] < 8 * MiB
    assert s["oom_victim_rss_bytes"] >= 32 * MiB
    # `jobmon query`: the story, and the advice
    env = dict(os.environ, JOBMON_CONFIG=os.devnull, COLUMNS="80")
    env.pop("JOBMON_STORE", None)
    q = jobmon("query", "greedy", "--json", f"--store={store}", "--no-scheduler", env=env)
    rep = json.loads(q.stdout)
    story = "\n".join(rep["oom"])
    assert f"{COMM} (pid {s['oom_pid']})" in story and "from the kernel log" in story, story
    assert "of its 48 MiB limit" in story, story
    assert "oom_killed" in {a["rule"] for a in rep["advice"]}
    t = jobmon("query", "greedy", f"--store={store}", "--no-scheduler", env=env)
    assert "out of memory" in t.stdout and f"pid {s['oom_pid']}" in t.stdout
    # the HTML page marks it on the memory plot
    page = jobmon("report", "greedy", "--html", "-", f"--store={store}", "--no-scheduler",
                  env=env)
    assert page.returncode == 0, page.stderr
    data = page.stdout.split('<script type="application/json" id="jobmon-data">')[1].split("</script")[0]
    plots = {p["id"]: p for p in json.loads(data)["plots"]}
    [mark] = plots["memory"]["marks"]
    assert mark["label"] == f"OOM kill: {COMM} (pid {s['oom_pid']})"
    assert abs(json.loads(data)["t0"] + mark["t"] - s["oom_time"]) < 0.01
    assert "Killed for memory (OOM)" in page.stdout
    # the report card
    card = "\n".join(card_text.card_lines(s))
    assert f"OOM: {COMM} (pid {s['oom_pid']}) killed for memory" in card, card


@root
@needs_root
@cgroup_tree
def test_without_the_kernel_log_the_samples_tell_what_they_can(tmp_path):
    """A real kill in a real cgroup of the host's version, sampled by the real probe, with a
    kernel log that cannot be read (as for a job's user where dmesg_restrict is on): the
    moment within an interval; the charge at the kill from the cgroup's high-water mark and
    the limit hits by then, both read by the sample that counted the kill (the sample
    before has the 16 MiB the job held before it asked for more); no victim, no split."""
    cg = job_cgroup(f"jobmon-pytest-oom-{os.getpid()}", memory=48 * MiB)
    try:
        probe = select(cgroups=cg)
        watch = oom.OomWatch(memory_dir(cg), kmsg=str(tmp_path / "no-kmsg"))
        assert watch.memcg and watch.log is None
        p = subprocess.Popen([PYTHON, "-c", GREEDY, "64"], preexec_fn=cg.join)
        while p.poll() is None:
            watch.check(dict(probe.read(), time=time.time_ns()), 48 * MiB)
            time.sleep(0.1)
        watch.check(dict(probe.read(), time=time.time_ns()), 48 * MiB)
        probe.close()
    finally:
        time.sleep(0.05)
        cg.remove()
    assert p.returncode == -9
    f = watch.fields()
    assert f["oom_source"] == "samples" and f["oom_pid"] is None, f
    assert 0 < f["oom_time_within_seconds"] < 1.0 and f["oom_limit_bytes"] == 48 * MiB
    assert 40 * MiB <= f["oom_charge_bytes"] <= 48 * MiB, f     # at the limit, not 16 MiB
    assert f["oom_limit_hits"] > 0 and f["oom_anon_bytes"] is None, f
    story = "\n".join(oom.story(dict(f, oom_kills=1)))
    assert "which one: no kernel log to read" in story
    assert "of its 48 MiB limit by then (the cgroup's high-water mark), its limit hit" in \
        story, story


@pytest.mark.slow
@root
def test_a_slurm_job_killed_for_memory(jobmon_slurm):
    """The real Slurm cluster (cgroup v1, ConstrainRAMSpace): a job with --mem=100M that
    wants 300 MiB. Its sampler runs as the job's user, who may not read the kernel's log:
    the samples' story, the kill counted in the job's cgroup, the charge at the kill
    (the job's memory.max_usage_in_bytes then: its limit), not at the sample before (the
    shell's few MiB during its first sleep)."""
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    jid = slurm.submit("#!/bin/sh\nsleep 1.5\n"
                       f"{PYTHON} -c \"import time; x = b'1' * (300 << 20); time.sleep(1)\"\n"
                       "sleep 1\n", mem="100M")
    slurm.wait_done(jid)
    [rec] = site.wait_record(jid)
    s = rec.summary
    assert s["oom_kills"] >= 1 and s["mem_limit_hits"] > 0, s
    assert s["oom_source"] == "samples" and s.get("oom_pid") is None, s
    assert s["oom_limit_bytes"] == 100 * MiB and s["oom_time_within_seconds"] <= 2.5, s
    assert s["start_time"] < s["oom_time"] <= s["end_time"] + 0.01
    assert 90 * MiB <= s["oom_charge_bytes"] <= 100 * MiB, s
    assert 0 < s["oom_limit_hits"] <= s["mem_limit_hits"], s
    story = "\n".join(oom.story(s))
    print(story)
    assert "of its 100 MiB limit by then (the cgroup's high-water mark)" in story, story
    assert "oom_killed" in {r for r in (a["rule"] for a in _advice(s))}


def _advice(s):
    from jobmon.summary.advice import advise
    from jobmon.config.report import defaults
    return advise(s, defaults())
