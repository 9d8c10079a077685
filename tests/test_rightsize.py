"""Right-sizing of arrays and batches (jobmon.report.rightsize): which jobs make a batch, the
covering request with headroom, rounded as people write it -- numbers checked by hand."""
import pytest

from jobmon.report import rightsize as rs

GiB, MiB = 1 << 30, 1 << 20


def task(job, peak, cpu=1000.0, wall=1000.0, tags=None, user="u", scheduler=None):
    return {"job": job, "user": user, "scheduler": scheduler, "tags": tags or {},
            "summary": {"wall_seconds": wall, "cpu_user_seconds": cpu, "rss_peak_bytes": peak,
                        "exit_code": 0}}


@pytest.mark.parametrize("record, batch", [
    ({"job": "12345_7"}, ("array", "12345")),
    ({"job": "12345_7", "tags": {"array_job_id": "12345"}}, ("array", "12345")),
    ({"job": "4711.3", "tags": {"JobBatchName": "fit"}}, ("batch", "fit")),
    ({"job": "4711.3", "tags": {"DAGManJobId": "4700", "schedd": "ap1"}}, ("dag", "ap1#4700")),
    ({"job": "4711.3", "scheduler": "htcondor"}, ("cluster", "4711")),
    ({"job": "4711.3", "tags": {"schedd": "ap2"}}, ("cluster", "ap2#4711")),
    ({"job": "4711.3", "scheduler": "slurm"}, None),
    ({"job": "777"}, None),
])
def test_batch_of(record, batch):
    assert rs.batch_of(record) == batch


def test_covering_is_the_nearest_rank():
    xs = list(range(1, 101))
    assert rs.covering(xs, 0.99) == 99 and rs.covering(xs, 1.0) == 100
    assert rs.covering(list(range(1, 11)), 0.99) == 10   # ceil(9.9) = the 10th
    assert rs.covering(list(range(1, 11)), 0.9) == 9


def test_round_memory_steps():
    assert rs.round_memory(100 * MiB) == 128 * MiB             # 64 MiB steps below 1 GiB
    assert rs.round_memory(int(2.25 * GiB)) == int(2.3 * GiB)  # 0.1 GiB steps below 10
    assert rs.round_memory(2 * GiB) == 2 * GiB                 # exact stays
    assert rs.round_memory(int(20.2 * GiB)) == int(20.5 * GiB)
    assert rs.round_memory(int(120.2 * GiB)) == 121 * GiB
    assert rs.memory_text(int(2.5 * GiB)) == "2.5 GiB" and rs.memory_text(2 * GiB) == "2 GiB"
    assert rs.memory_text(384 * MiB) == "384 MiB"


def test_array_suggestion_covers_99_percent_of_the_peaks():
    # 99 tasks peaking at 23, 46, ... 2277 MiB, one outlier at 8 GiB; all asked for 8 GiB and
    # 4 cores. The 99th smallest peak is 2277 MiB; +10 % = 2504.7 MiB, up to 0.1 GiB steps:
    # 2.5 GiB, which 99 of 100 peaks fit. CPU: 99 tasks kept 1.5 cores busy, one 3.9: 2 cores
    tags = {"RequestMemory": "8192", "RequestCpus": "4", "array_job_id": "9"}
    records = [task(f"9_{i}", i * 23 * MiB, cpu=1500.0, tags=tags) for i in range(1, 100)]
    records.append(task("9_100", 8 * GiB, cpu=3900.0, tags=tags))
    [b] = rs.rightsize(records)
    assert (b["kind"], b["name"], b["tasks"]) == ("array", "9", 100)
    assert b["memory_bytes"] == int(2.5 * GiB) and b["memory_covers_percent"] == 99.0
    assert b["cores"] == 2 and b["cores_cover_percent"] == 99.0
    assert b["advice"] == ["request 2.5 GiB: covers 99 % of the tasks' peaks (requested 8 GiB)",
                           "request 2 cores: covers 99 % of the tasks' average CPU use "
                           "(requested 4)"]
    assert b["peak_memory_bytes"]["max"] == 8 * GiB
    assert b["peak_memory_bytes"]["p50"] == pytest.approx(50.5 * 23 * MiB)   # tasks 50, 51
    assert b["cores_used"]["p90"] == pytest.approx(1.5)


def test_headroom_and_coverage_come_from_the_limits():
    records = [task(f"5_{i}", i * 100 * MiB) for i in range(1, 11)]   # 100 .. 1000 MiB
    [b] = rs.rightsize(records, {"rightsize_coverage_percent": 90.0,
                                 "rightsize_headroom_percent": 0.0})
    assert b["memory_bytes"] == 960 * MiB and b["memory_covers_percent"] == 90.0   # 900 up
    [b] = rs.rightsize(records, {"rightsize_coverage_percent": 90.0,
                                 "rightsize_headroom_percent": 20.0})
    assert b["memory_bytes"] == int(1.1 * GiB)   # 1080 MiB, in 0.1 GiB steps: 1126.4 MiB
    assert b["memory_covers_percent"] == 100.0


def test_a_tasks_peak_is_its_largest_over_runs_and_small_batches_get_no_advice():
    records = [task("7_1", GiB), task("7_1", 3 * GiB), task("7_2", GiB)]
    [b] = rs.rightsize(records)
    assert b["tasks"] == 2 and b["peak_memory_bytes"]["max"] == 3 * GiB
    assert b["advice"] == [] and b["memory_bytes"] is None   # fewer than 3 tasks


def test_batches_of_different_users_stay_apart_and_running_tasks_are_left_out():
    records = [task(f"8_{i}", GiB, user=u) for u in ("ann", "ben") for i in range(3)]
    records.append({"job": "8_9", "user": "ann", "tags": {}, "summary": None})
    out = rs.rightsize(records)
    assert sorted((b["user"], b["tasks"]) for b in out) == [("ann", 3), ("ben", 3)]


def test_a_suggestion_equal_to_the_request_says_so():
    tags = {"request_cpus": "1", "request_memory": "128MiB"}
    records = [task(f"6_{i}", 100 * MiB, cpu=900.0, tags=tags) for i in range(3)]
    [b] = rs.rightsize(records)   # 110 MiB -> 128 MiB; 0.9 cores -> 1
    assert b["advice"] == ["request 128 MiB: covers 100 % of the tasks' peaks (as requested)",
                           "request 1 core: covers 100 % of the tasks' average CPU use "
                           "(as requested)"]


def test_a_slurm_array_is_sized_by_the_kernel_peaks_and_says_so():
    """The Slurm sampler reaps nothing: its resident peaks are samples. Its records say
    the kernel's peak sizes them (mem_sizing_basis); records written before that (only the
    tags `measured` and `job_id` tell them apart) are read the same way."""
    slurm = {"array_job_id": "9", "measured": "job-cgroup", "job_id": "10"}
    now = [task(f"9_{i}", 4 * MiB, tags=slurm) for i in range(3)]
    for i, t in enumerate(now):
        t["summary"].update(mem_peak_bytes=(100 + i) * MiB, mem_sizing_basis="kernel")
    old = [task(f"9_{i}", 4 * MiB, tags=slurm) for i in range(3, 5)]
    for t in old:
        t["summary"].update(mem_peak_bytes=300 * MiB, outcome="goodput",
                            mem_efficiency_percent=1.0)
    [b] = rs.rightsize(now + old)
    assert b["peak_basis"] == "kernel" and b["peak_memory_bytes"]["max"] == 300 * MiB
    assert b["memory_bytes"] >= 300 * MiB
    assert "(the kernel's peaks, page cache included)" in b["advice"][0]


def test_a_sampled_peak_in_a_batch_says_a_spike_may_be_missed():
    tasks = [task(f"9_{i}", 100 * MiB) for i in range(3)]
    tasks[0]["summary"]["mem_sizing_basis"] = "sampled"
    [b] = rs.rightsize(tasks)
    assert b["peak_basis"] == "sampled"
    assert "(sampled peaks: a spike between samples may be missed)" in b["advice"][0]
    [b] = rs.rightsize([task(f"9_{i}", 100 * MiB) for i in range(3)])
    assert b["peak_basis"] == "resident" and b["advice"][0].endswith("tasks' peaks")
