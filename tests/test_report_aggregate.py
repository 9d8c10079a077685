"""`jobmon report` over many jobs (jobmon.report.aggregate, job_efficiency): groups, the
p10/p50/p90 of CPU and memory efficiency, idle canonical core-hours and GPU-hours, top
wasters, suspects and goodput/badput -- every number checked by hand below."""
import pytest

from jobmon.report import aggregate as agg
from jobmon.report.distribution import quantile
from jobmon.report.job_efficiency import efficiency_of

GiB, MiB, HOUR = 1 << 30, 1 << 20, 3600.0


def rec(job, user, summary, tags=None, **kw):
    s = None if summary is None else dict({"exit_code": 0, "signal": None, "samples": 100},
                                          **summary)
    return dict({"job": job, "user": user, "host": "wn1", "tags": tags or {},
                 "start_time": 1.7e9, "summary": s}, **kw)


# A: 4 cores + 8 GiB for 2 h, 1 core busy, 2 GiB peak: 25 % CPU, 25 % memory; idle 3 cores +
#    6 GiB = 3 whole units x 2 h = 6 canonical core-h
# B: 1 core + 2 GiB for 1 h, all busy, 1 GiB peak, exit 1: 100 % CPU, 50 % memory, 0 idle
# C: 8 cores + 4 GiB for 1 h, no CPU, 512 MiB peak, SIGKILL: idle 8 cores + 3.5 GiB = 1 unit
#    (memory-limited) x 1 h = 1; 0 % CPU, 12.5 % memory
# D: 1 core + 2 GiB + 2 GPUs for 4 h, 1 core busy, 2 GiB peak, GPUs 25 % busy: 0 canonical
#    core-h idle, 8 GPU-h of which 6 idle; idle in 60 of 100 samples: a suspect
# E: `jobmon run` without requests: no efficiency; CPU at ~0 in 50 of 100 samples and memory
#    rising: a suspect twice
# F: still running
RECORDS = [
    rec("100.0", "alice", {"wall_seconds": 2 * HOUR, "cpu_user_seconds": 2 * HOUR,
                           "rss_peak_bytes": 2 * GiB},
        {"RequestCpus": "4", "RequestMemory": "8192", "account": "physics"}),
    rec("100.1", "alice", {"wall_seconds": HOUR, "cpu_user_seconds": 3000.0,
                           "cpu_system_seconds": 600.0, "rss_peak_bytes": GiB, "exit_code": 1},
        {"RequestCpus": "1", "RequestMemory": "2048", "account": "physics"}),
    rec("200.0", "bob", {"wall_seconds": HOUR, "cpu_user_seconds": 0.0,
                         "rss_peak_bytes": 512 * MiB, "exit_code": None, "signal": 9},
        {"request_cpus": "8", "request_memory": "4GiB", "account": "cms", "queue": "long"}),
    rec("300.0", "bob", {"wall_seconds": 4 * HOUR, "cpu_user_seconds": 4 * HOUR,
                         "rss_peak_bytes": 2 * GiB, "gpu_count": 2, "gpu_util_avg_percent": 25.0,
                         "gpu_idle_samples": 60},
        {"RequestCpus": "1", "RequestMemory": "2048", "RequestGPUs": "2", "account": "cms"}),
    rec("local-e", "carol", {"wall_seconds": 100.0, "cpu_user_seconds": 1.0,
                             "rss_peak_bytes": 10 * MiB, "cpu_idle_samples": 50,
                             "mem_rising": 1, "mem_growth_bytes_per_hour": 36 * MiB}),
    rec("400.0", "carol", None),
]


def test_quantiles_interpolate_between_ranks():
    xs = [50, 10, 40, 20, 30]
    assert quantile(xs, 0.1) == pytest.approx(14.0)   # position 0.4: 10 + 0.4 x 10
    assert quantile(xs, 0.5) == 30
    assert quantile(xs, 0.9) == pytest.approx(46.0)   # position 3.6: 40 + 0.6 x 10
    assert quantile([7], 0.9) == 7 and quantile([], 0.5) is None
    assert agg.distribution([None, 25.0, 100.0]) == {"n": 2, "p10": 32.5, "p50": 62.5,
                                                     "p90": 92.5}


def test_figures_computed_from_totals_and_tags():
    a = efficiency_of(RECORDS[0]["summary"], RECORDS[0]["tags"])
    assert (a["cores_allocated"], a["mem_allocated_bytes"]) == (4.0, 8 * GiB)
    assert (a["cpu_efficiency_percent"], a["mem_efficiency_percent"]) == (25.0, 25.0)
    assert (a["provisioned_core_hours"], a["used_core_hours"], a["idle_core_hours"]) == \
        (8.0, 2.0, 6.0)
    assert a["idle_canonical_core_hours"] == 6.0 and a["canonical_units"] == 4.0
    assert (a["outcome"], a["outcome_reason"]) == ("goodput", "completed (exit code 0)")
    c = efficiency_of(RECORDS[2]["summary"], RECORDS[2]["tags"])
    assert c["idle_canonical_core_hours"] == 1.0 and c["idle_limited_by"] == "memory"
    assert c["outcome"] == "badput" and "SIGKILL" in c["outcome_reason"]
    d = efficiency_of(RECORDS[3]["summary"], RECORDS[3]["tags"])
    assert (d["gpus_allocated"], d["gpu_hours"], d["idle_gpu_hours"]) == (2, 8.0, 6.0)
    e = efficiency_of(RECORDS[4]["summary"], {})
    assert e["cpu_efficiency_percent"] is None and e["idle_canonical_core_hours"] is None
    assert efficiency_of(None, {}) == {}


def test_stored_fields_win_over_computing():
    # a summary the sampler filled: its figures as they are, an absent one is unknown
    s = dict(RECORDS[0]["summary"], cpu_efficiency_percent=42.0, idle_canonical_core_hours=1.5,
             outcome="badput", outcome_reason="evicted")
    f = efficiency_of(s, RECORDS[0]["tags"])
    assert (f["cpu_efficiency_percent"], f["idle_canonical_core_hours"]) == (42.0, 1.5)
    assert (f["outcome"], f["outcome_reason"]) == ("badput", "evicted")
    assert f["mem_efficiency_percent"] is None
    # a summary with some of them (an InfluxDB point lists every field, None if absent)
    s = dict(RECORDS[0]["summary"], cpu_efficiency_percent=42.0, outcome=None)
    f = efficiency_of(s, RECORDS[0]["tags"])
    assert (f["cpu_efficiency_percent"], f["mem_efficiency_percent"]) == (42.0, 25.0)
    assert f["outcome"] == "goodput"


def test_groups_by_user_with_hand_checked_figures():
    m = agg.aggregate(RECORDS, "user")
    assert (m["jobs"], m["running"]) == (5, 1)
    assert [g["key"] for g in m["groups"]] == ["alice", "bob", "carol"]   # most idle first
    alice, bob, carol = m["groups"]
    assert (alice["jobs"], alice["goodput"], alice["badput"]) == (2, 1, 1)
    assert alice["cpu_efficiency_percent"] == {"n": 2, "p10": 32.5, "p50": 62.5, "p90": 92.5}
    assert alice["mem_efficiency_percent"]["p50"] == 37.5      # 25 and 50
    assert alice["idle_canonical_core_hours"] == 6.0 and alice["wall_hours"] == 3.0
    assert bob["cpu_efficiency_percent"]["p50"] == 50.0        # 0 and 100
    assert (bob["idle_canonical_core_hours"], bob["gpu_hours"], bob["idle_gpu_hours"]) == \
        (1.0, 8.0, 6.0)
    assert (bob["goodput"], bob["badput"], bob["suspects"]) == (1, 1, 1)
    assert carol["cpu_efficiency_percent"]["n"] == 0 and carol["suspects"] == 1
    t = m["total"]
    assert (t["jobs"], t["goodput"], t["badput"], t["unknown"]) == (5, 3, 2, 0)
    assert t["idle_canonical_core_hours"] == 7.0 and t["idle_gpu_hours"] == 6.0
    assert t["provisioned_core_hours"] == 8 + 1 + 8 + 4


def test_top_wasters_and_suspects():
    m = agg.aggregate(RECORDS, "user", limits={"top": 2})
    # A wastes 6 canonical core-h, D 6 GPU-h (a tie: by id), C 1: only two asked for
    assert [w["job"] for w in m["top_wasters"]] == ["100.0", "300.0"]
    assert m["top_wasters"][0]["idle_canonical_core_hours"] == 6.0
    assert m["suspect_count"] == 2
    e, d = m["suspects"]
    assert e["job"] == "local-e" and e["kinds"] == ["mem_rising", "cpu_idle"]
    # 36 MiB/h over a 100 s run: what it rose by over the run, not a rate per hour
    assert e["why"] == ["memory rose steadily (+1.0 MiB over its 100 s)",
                        "CPU at ~0 in 50 of 100 samples"]
    assert d["job"] == "300.0" and d["kinds"] == ["gpu_idle"]


def test_suspect_thresholds_come_from_the_limits():
    # E idle in 50 samples, D's GPUs in 60: at least 61 asked for, neither is idle enough
    m = agg.aggregate(RECORDS, "user", limits={"suspect_min_samples": 61})
    assert [s["kinds"] for s in m["suspects"]] == [["mem_rising"]]
    # 50 and 60 of 100 samples, under the share asked for: 61 %
    m = agg.aggregate(RECORDS, "user", limits={"idle_samples_percent": 61.0})
    assert [s["kinds"] for s in m["suspects"]] == [["mem_rising"]]
    m = agg.aggregate(RECORDS, "user", limits={"idle_samples_percent": 60.0})
    assert [s["kinds"] for s in m["suspects"]] == [["gpu_idle"], ["mem_rising"]]   # by id


def test_other_dimensions_and_their_fallbacks():
    by_account = agg.aggregate(RECORDS, "account")
    assert {g["key"]: g["jobs"] for g in by_account["groups"]} == \
        {"physics": 2, "cms": 2, "(none)": 1}
    # no "group" tag: the accounting group stands for it; no partition: the queue
    assert {g["key"] for g in agg.aggregate(RECORDS, "group")["groups"]} == \
        {"physics", "cms", "(none)"}
    assert {g["key"]: g["jobs"] for g in agg.aggregate(RECORDS, "partition")["groups"]} == \
        {"long": 1, "(none)": 4}
    site = [rec("1.0", "u", {"wall_seconds": 1.0}, {"GLIDEIN_Site": "UCSD"})]
    assert agg.aggregate(site, "site")["groups"][0]["key"] == "UCSD"
    pool = [rec("1.0", "u", {"wall_seconds": 1.0}, cluster="osg-pool")]
    assert agg.aggregate(pool, "pool")["groups"][0]["key"] == "osg-pool"
    with pytest.raises(ValueError):
        agg.aggregate(RECORDS, "host")


def test_nothing_ended_is_an_empty_report():
    m = agg.aggregate([RECORDS[-1]], "user")
    assert (m["jobs"], m["running"], m["groups"], m["top_wasters"]) == (0, 1, [], [])


def test_the_allocation_cache_keys_on_every_tag_the_allocation_reads():
    # the tasks of an array share their requests, so allocations are cached by those tags:
    # a tag jobmon.summary.efficiency.allocation reads but the key lacks would mix jobs up
    import inspect
    import re
    from jobmon.summary import efficiency
    from jobmon.report import job_efficiency
    read = set(re.findall(r't\.get\("(\w+)"\)', inspect.getsource(efficiency.allocation)))
    assert read and read <= set(job_efficiency._ALLOCATION_TAGS)


def slurm_records(job, user="dana", run="1", host="n1", steps=("batch", "extern"), **summary):
    """A Slurm job run as the sampler records it: the job's record (its cgroup holds every
    step) and one record per step (job `<job>.<step>`, tag parent_job)."""
    tags = {"array_job_id": job.split("_")[0], "request_cpus": "1",
            "request_memory": "1GiB"} if "_" in job else {"request_cpus": "1"}
    s = dict({"wall_seconds": 600.0, "cpu_user_seconds": 300.0, "rss_peak_bytes": 100 * MiB},
             **summary)
    out = [rec(job, user, s, dict(tags), run=run, host=host, scheduler="slurm")]
    for step in steps:
        out.append(rec(f"{job}.{step}", user, dict(s, wall_seconds=590.0),
                       dict(tags, parent_job=job, step=step), run=run, host=host,
                       scheduler="slurm"))
    return out


def test_steps_belong_to_their_job_and_nodes_to_their_run():
    """An array of 6 tasks, each with its batch and extern steps, is 6 job runs (not 18); a
    two-node job is one run, its nodes' core-hours added up."""
    from jobmon.report import rightsize
    records = [r for k in range(6) for r in slurm_records(f"77_{k}")]
    records += slurm_records("78", host="n1", steps=("batch", "extern", "0"))
    records += slurm_records("78", host="n2", steps=("extern", "0"), exit_code=1)
    m = agg.aggregate(records, "user")
    assert (m["jobs"], m["running"]) == (7, 0)
    t = m["total"]
    assert (t["goodput"], t["badput"]) == (6, 1)          # a node's failure fails its run
    assert t["wall_hours"] == pytest.approx(7 * 600 / 3600)
    assert t["provisioned_core_hours"] == pytest.approx(8 * 600 / 3600, abs=1e-5)
    assert t["cpu_efficiency_percent"]["n"] == 7 and t["cpu_efficiency_percent"]["p50"] == 50.0
    [batch] = rightsize.rightsize(records)
    assert (batch["name"], batch["tasks"]) == ("77", 6)
