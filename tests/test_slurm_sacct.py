"""The Slurm accounting source (jobmon.plugins.slurm.accounting.sacct): recorded output of
Slurm 22.05
(tests/fixtures/slurm/sacct) through both parsers, the step aggregation, the comparison
with jobmon's summary; and live lookups on the test cluster, JSON and text agreeing."""
import json
import time

import pytest

from helpers import fixture
from jobmon.accounting import AccountingError, load
from jobmon.plugins.slurm.accounting import sacct, sacct_pyslurm
from jobmon.plugins.slurm.accounting.sacct_compare import REASONS, compare
from jobmon.plugins.slurm.accounting.sacct_parse import (exit_status, mem_bytes, seconds,
                                                          tres_dict, when)

MiB = 1 << 20
JOBS = ("plain", "array", "multistep", "cancelled", "failed", "signal")


def fields():
    with open(fixture("slurm", "sacct", "fields.txt")) as f:
        return f.read().split()


def from_json(name, sub=()):
    with open(fixture("slurm", "sacct", *sub, f"{name}.json")) as f:
        return sacct.records_from_json(json.load(f))


def from_text(name, sub=()):
    """The recorded `--parsable2 --noconvert` text ('|' between values, as recorded; its
    first line the header) read as the source reads its own delimiter."""
    with open(fixture("slurm", "sacct", *sub, f"{name}.noconvert.parsable2")) as f:
        text = f.read().split("\n", 1)[1]
    return sacct.records_from_text(text.replace("|", sacct.DELIMITER), fields())


def by_job(records):
    return {r.job: r for r in records}


def test_registered_as_the_slurm_source():
    assert load("slurm") is sacct


def test_value_parsers():
    assert seconds("00:00.560") == 0.56 and seconds("01:02:03") == 3723
    assert seconds("1-02:03:04.5") == 93784.5 and seconds("UNLIMITED") is None
    assert mem_bytes("3616K") == 3616 << 10 and mem_bytes("500M") == 500 * MiB
    assert mem_bytes("1.5G") == 3 << 29 and mem_bytes("3702784") == 3702784
    assert mem_bytes("4000Mc") == 4000 * MiB and mem_bytes("") is None
    assert tres_dict("billing=1,cpu=1,mem=500M,node=1,gres/gpu=2") == \
        {"billing": 1, "cpu": 1, "mem": 500 * MiB, "node": 1, "gres/gpu": 2}
    assert tres_dict("cpu=00:00:01,fs/disk=30729,mem=3616K")["cpu"] == 1
    assert exit_status("3:0") == (3, None) and exit_status("0:9") == (None, 9)
    assert exit_status("") == (None, None)
    assert when("Unknown") is None and when("2026-11-23T13:47:55") == \
        time.mktime((2026, 11, 23, 13, 47, 55, 0, 0, -1))


@pytest.mark.parametrize("name", JOBS)
def test_json_and_text_agree(name):
    """The same jobs through both parsers: same allocations, steps and figures (JSON
    keeps microseconds, the text milliseconds)."""
    js, tx = by_job(from_json(name)), by_job(from_text(name))
    assert set(js) == set(tx)
    for job, a in js.items():
        b = tx[job]
        assert (a.state, a.job_id_raw, a.name, a.user, a.account, a.partition) == \
            (b.state, b.job_id_raw, b.name, b.user, b.account, b.partition)
        assert [s.step for s in a.steps] == [s.step for s in b.steps]
        assert abs(a.cpu_seconds - b.cpu_seconds) < 0.005
        assert abs(a.max_rss_bytes - b.max_rss_bytes) <= 8192   # text rounds to KiB
        assert (a.read_bytes, a.write_bytes) == (b.read_bytes, b.write_bytes)
        assert (a.alloc_mem_bytes, a.alloc_cpus, a.req_mem_bytes) == \
            (b.alloc_mem_bytes, b.alloc_cpus, b.req_mem_bytes) == (500 * MiB, 1, 500 * MiB)
        assert a.source == "sacct-json" and b.source == "sacct-text"
        assert not a.partial and not b.partial


def test_steps_aggregated_not_batch_alone():
    """TotalCPU is the steps' sum (22.05's JSON has zeros at job level); MaxRSS the
    largest step's -- here step 0, not .batch; disk bytes summed."""
    [job] = from_json("multistep")
    assert [s.step for s in job.steps] == ["batch", "extern", "0", "1"]
    assert job.cpu_seconds == pytest.approx(sum(s.cpu_seconds for s in job.steps))
    assert job.cpu_seconds > 0.5 and job.max_rss_step == "0"
    assert job.max_rss_bytes == job.step("0").max_rss_bytes > 50 * MiB
    assert job.max_rss_bytes > 10 * job.step("batch").max_rss_bytes
    assert job.read_bytes == sum(s.read_bytes for s in job.steps)
    s0 = job.step("0")
    assert s0.cpu_user_seconds + s0.cpu_system_seconds == pytest.approx(s0.cpu_seconds)
    assert s0.max_rss_task == 0 and s0.max_rss_node == "node01"


def test_array_tasks_and_exit_codes():
    tasks = by_job(from_json("array"))
    assert set(tasks) == {"3_0", "3_1", "3_2"}
    assert {(r.array_job_id, r.array_task_id) for r in tasks.values()} == \
        {("3", "0"), ("3", "1"), ("3", "2")}
    [failed] = from_text("failed")
    assert (failed.state, failed.exit_code, failed.signal) == ("FAILED", 3, None)
    [killed] = from_json("signal")
    assert (killed.exit_code, killed.signal) == (None, 9)
    [cancelled] = from_text("cancelled")
    assert (cancelled.state, cancelled.cancelled_by) == ("CANCELLED", "0")
    assert cancelled.step("batch").signal == 15


def test_placeholder_record_is_partial():
    """Right after a job ends sacct may show it built from its end message alone."""
    [j] = from_json("signal", ("early",))
    [t] = from_text("signal", ("early",))
    assert j.partial and t.partial and j.name == "allocation"


def test_rows_spanning_lines_and_delimiters_in_values():
    fs = ["JobID", "JobName", "SubmitLine"]
    d = sacct.DELIMITER
    text = (f"7{d}a|b{d}srun python -c 'x\ny'\n7.0{d}python{d}srun x\n"
            f"8{d}c{d}\n")
    rows = sacct.split_rows(text, 3)
    assert rows == [["7", "a|b", "srun python -c 'x\ny'"], ["7.0", "python", "srun x"],
                    ["8", "c", ""]]


def summary(**kw):
    s = {"method": "cgroup-v1", "cpu_user_seconds": 1.0, "cpu_system_seconds": 0.07,
         "rss_peak_bytes": 108 * MiB, "mem_peak_bytes": 109 * MiB, "exit_code": 0,
         "signal": None, "wall_seconds": 4.0}
    s.update(kw)
    return s


def test_compare_agrees_and_explains():
    [plain] = from_json("plain")          # 1.076 s CPU, MaxRSS 103 MiB, exit 0
    assert compare(summary(), plain) == []
    high = compare(summary(cpu_user_seconds=0.6, cpu_system_seconds=0.05), plain)
    assert [r["field"] for r in high] == ["cpu_seconds"] and high[0]["reason"] == REASONS["cpu_high"]
    low = compare(summary(rss_peak_bytes=400 * MiB, mem_peak_bytes=600 * MiB), plain)
    assert low[0]["field"] == "max_rss_bytes"
    assert REASONS["rss_sampled"] in low[0]["reason"] and REASONS["rss_anon"] in low[0]["reason"]
    v2 = compare(summary(method="cgroup-v2", rss_peak_bytes=50 * MiB, mem_peak_bytes=50 * MiB),
                 plain)
    assert v2[0]["reason"] == REASONS["rss_cache"]
    [cancelled] = from_json("cancelled")
    ex = compare(summary(cpu_user_seconds=0.004, cpu_system_seconds=0.0015,
                         rss_peak_bytes=33 * MiB, mem_peak_bytes=33 * MiB, wall_seconds=3.5,
                         exit_code=None, signal=15), cancelled)
    assert [r["field"] for r in ex] == ["exit"] and ex[0]["reason"] == REASONS["exit_cancelled"]
    io = compare(summary(read_bytes=20 * MiB, write_bytes=20 * MiB), plain)
    assert {r["field"] for r in io} == {"read_bytes", "write_bytes"}


def test_pyslurm_only_for_its_own_slurm():
    assert sacct_pyslurm.matches("22.5.0", (22, 5))
    assert not sacct_pyslurm.matches("25.11.2", (22, 5))
    assert not sacct_pyslurm.matches("23.2.2", None)
    assert sacct_pyslurm.pyslurm_release("24.11.0") == (24, 11)


# --- live: the test cluster's sacct -------------------------------------------------------

@pytest.fixture(scope="module")
def finished(jobmon_slurm_cluster):
    """Jobs of the jobmon cluster, over and whole in sacct."""
    c = jobmon_slurm_cluster.cluster
    # held 1.5 s: Slurm samples MaxRSS every second (task=1), and misses what is shorter
    step = ("import time\nwhile time.process_time() < 0.3: pass\nx = bytearray(60 << 20)\n"
            "time.sleep(1.5)")
    ids = {"steps": c.submit(f'srun /usr/bin/python3 -c "{step}"\nsrun sleep 0.2\n'),
           "array": c.submit("sleep 0.5\n", array="0-1"),
           "failed": c.submit("sleep 0.5\nexit 3\n")}
    for jid in ids.values():
        c.wait(jid)
    return c, ids


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["json", "text"])
def test_live_lookup(finished, mode):
    c, ids = finished
    src = sacct.SacctSource(env=c.env(), mode=mode)
    [job] = src.lookup(ids["steps"])
    assert job.source == f"sacct-{mode}" and job.run == 1 and not job.partial
    assert {"batch", "extern", "0", "1"} <= {s.step for s in job.steps}
    assert job.max_rss_step == "0" and job.max_rss_bytes >= 60 * MiB
    assert job.cpu_seconds >= 0.3 and job.user == "jobmon-test" and job.account == "jobmon"
    tasks = by_job(src.lookup(ids["array"]))
    assert set(tasks) == {f"{ids['array']}_0", f"{ids['array']}_1"}
    assert by_job(src.lookup(f"{ids['array']}_1")).keys() == {f"{ids['array']}_1"}
    [failed] = src.lookup(ids["failed"])
    assert (failed.state, failed.exit_code) == ("FAILED", 3)
    with pytest.raises(AccountingError):
        src.lookup("12; rm -rf /")


@pytest.mark.root
def test_source_from_config(finished):
    c, _ids = finished
    assert isinstance(sacct.source(env=c.env()), sacct.SacctSource)
