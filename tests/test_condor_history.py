"""HTCondor's own records through the accounting source, with the real bindings (htcondor2,
classad2) on every fixture: both history files, an epoch history, both event logs, a
removed job, a held job (condor_q); and jobmon's summary compared with them."""
import shutil

import classad2
import pytest

from helpers import fixture
from jobmon import config
from jobmon.accounting import AccountingError, Source, load
from jobmon.plugins.condor.accounting import condor_compare, condor_events, condor_records
from jobmon.plugins.condor.accounting import condor_history as ch

MiB, KiB = 1 << 20, 1 << 10
SYNTH = fixture("htcondor")
REAL = fixture("htcondor", "real-pool-25.14")


def history(*parts):
    return ch.CondorHistory(history=[fixture("htcondor", *parts)])


def events(*parts):
    return ch.CondorHistory(event_logs=[fixture("htcondor", *parts)])


def one(records, **match):
    found = [r for r in records if all(getattr(r, k) == v for k, v in match.items())]
    assert len(found) == 1, (match, records)
    return found[0]


# --- history files ----------------------------------------------------------------------------

@pytest.mark.parametrize("parts, n", [(("history",), 3), (("real-pool-25.14", "history"), 6),
                                      (("epoch-history",), 2)])
def test_records_split_on_banners_where_parseads_merges_them(parts, n):
    path = fixture("htcondor", *parts)
    with open(path) as f:
        text = f.read()
    assert len(list(classad2.parseAds(text, classad2.ParserType.Old))) == 1
    with open(path) as f:
        split = list(ch.split_records(f))
    assert len(split) == n
    assert all(b["ClusterId"] and classad2.parseOne(t, classad2.ParserType.Old)["ClusterId"]
               == int(b["ClusterId"]) for b, t in split)


def test_banner_before_the_record_too():
    text = ("*** EPOCH ClusterId=7 ProcId=0 RunInstanceId=0 Owner=\"a\"\nClusterId = 7\n"
            "ProcId = 0\n*** EPOCH ClusterId=7 ProcId=0 RunInstanceId=1 Owner=\"a\"\n"
            "ClusterId = 7\nProcId = 0\nNumJobStarts = 2\n")
    split = list(ch.split_records(text.splitlines(keepends=True)))
    assert [(b["RunInstanceId"], b["epoch"]) for b, _ in split] == [("0", True), ("1", True)]
    assert "NumJobStarts = 2" in split[1][1]


def test_completed_job_in_jobmon_units():
    r = one(history("history").lookup("4711"), job="4711.0")
    assert (r.source, r.status, r.exit_code, r.signal, r.run, r.runs) == \
        ("history", "completed", 0, None, 1, 1)
    assert (r.cpu_user_seconds, r.cpu_system_seconds) == (3412.0, 61.0)
    assert r.memory_usage_bytes == 1800 * MiB            # MemoryUsage is an expression
    assert r.rss_bytes == 1843200 * KiB and r.disk_usage_bytes == 524288 * KiB
    assert (r.request_cpus, r.request_memory_bytes, r.request_disk_bytes) == \
        (1, 2048 * MiB, 4194304 * KiB)
    assert (r.cpus_provisioned, r.memory_provisioned_bytes, r.disk_provisioned_bytes) == \
        (1, 2048 * MiB, 4194304 * KiB)
    assert (r.start_time, r.end_time, r.execute_seconds) == (1760000045.0, 1760003650.0, 3604.0)
    assert (r.read_bytes, r.write_bytes, r.cpus_usage) == (102400 * KiB, 51200 * KiB, 0.96)
    assert (r.global_job_id, r.schedd, r.owner) == \
        ("ap01.example.org#4711.0#1760000000", "ap01.example.org", "alice")
    assert r.badput_seconds == 0


def test_removed_and_held_jobs():
    recs = history("history").lookup("4711")
    assert [r.job for r in recs] == ["4711.0", "4711.1", "4711.2"]
    removed = recs[1]
    assert (removed.status, removed.end_time, removed.exit_code) == ("removed", None, None)
    assert removed.remove_reason == "via condor_rm (by user alice)"
    assert removed.badput_seconds == 1753.0
    held_then_removed = recs[2]
    assert (held_then_removed.hold_code, held_then_removed.hold_subcode) == (34, 102)
    assert "cgroup memory limit" in held_then_removed.hold_reason


def test_held_job_still_in_the_queue():
    ad = classad2.parseOne(open(fixture("htcondor", "condor_q-long.4711.2-held.ad")).read(),
                           classad2.ParserType.Old)
    r = ch.record_from_ad(ad, "queue")
    assert (r.job, r.status, r.run, r.hold_code, r.hold_subcode) == ("4711.2", "held", 1, 34, 102)
    assert r.memory_usage_bytes == 2049 * MiB and r.request_memory_bytes == 2048 * MiB
    assert r.end_time is None


def test_job_ids_cluster_proc_and_global():
    src = history("history")
    assert [r.job for r in src.lookup("4711.1")] == ["4711.1"]
    assert [r.job for r in src.lookup("ap01.example.org#4711.2#1760000000")] == ["4711.2"]
    assert src.lookup("ap02.example.org#4711.2#1760000000") == []   # another schedd's
    assert src.lookup("4712") == []
    for bad in ("abc", "4711.x", "#4711.0#", ""):
        with pytest.raises(ValueError):
            src.lookup(bad)


def test_real_pool_history():
    src = history("real-pool-25.14", "history")
    r = one(src.lookup("1.0"))
    # a 20 s busy loop on a procd node: HTCondor recorded 13 s of CPU
    assert (r.status, r.exit_code, r.cpu_user_seconds, r.execute_seconds) == \
        ("completed", 3, 13.0, 20.0)
    assert r.memory_usage_bytes == ((325000 + 1023) // 1024) * MiB
    assert [(x.job, x.status) for x in src.lookup("3")] == [("3.0", "removed"), ("3.1", "removed")]
    assert one(src.lookup("vm#5.0#1795333940")).exit_code == 0


def test_epoch_history_one_record_per_run_and_badput():
    recs = history("epoch-history").lookup("4711.2")
    assert [(r.source, r.run, r.run_instance, r.status) for r in recs] == \
        [("epoch", 1, 0, "held"), ("epoch", 2, 1, "completed")]
    first, second = recs
    assert first.hold_code == 34 and first.cpu_user_seconds == 1371.0
    # the earlier run's cost stays visible on the last one
    assert second.cpu_user_seconds_all_runs - second.cpu_user_seconds == first.cpu_user_seconds
    assert second.badput_seconds == first.wall_seconds == 1430.0
    assert second.memory_provisioned_bytes == 3072 * MiB
    assert ch.pick(recs, "4711.2", 1) is first and ch.pick(recs, "4711.2") is second
    assert ch.pick(recs, "4711.2", 3) is None


# --- event logs ---------------------------------------------------------------------------------

def test_event_log_runs():
    recs = events("run042.log").lookup("4711")
    done = one(recs, job="4711.0")
    assert (done.source, done.run, done.status, done.exit_code) == ("eventlog", 1, "completed", 0)
    assert (done.cpu_user_seconds, done.cpu_system_seconds) == (3412.0, 61.0)
    assert (done.memory_usage_bytes, done.disk_usage_bytes) == (1800 * MiB, 524288 * KiB)
    assert (done.wall_seconds, done.execute_seconds) == (3605.0, 3604.0)
    assert done.host == "slot1_1@wn01.example.org"
    removed = one(recs, job="4711.1")
    assert (removed.status, removed.vacate_code, removed.cpu_user_seconds) == \
        ("removed", 1023, 1650.0)
    held = one(recs, job="4711.2")
    assert (held.status, held.hold_code, held.hold_subcode) == ("held", 34, 102)
    assert held.memory_usage_bytes == 2049 * MiB    # the largest image-size update
    assert held.remove_reason == "via condor_rm (by user alice)"


def test_real_event_log_two_runs_and_holds():
    src = events("real-pool-25.14", "events.log")
    # the wrapper failed twice (code 1007); the job's own policy held it afterwards, while
    # idle (input files for a third start already sent): that hold ended no run
    assert [(r.run, r.status, r.vacate_code) for r in src.lookup("4.0")] == \
        [(1, "evicted", 1007), (2, "evicted", 1007)]
    second = src.lookup("4.0")[1]
    assert second.hold_code is None and "job wrapper failed" in second.vacate_reason
    user_hold = one(src.lookup("3.1"))
    assert (user_hold.status, user_hold.hold_code, user_hold.cpu_user_seconds) == ("held", 1, 230.0)
    r = one(src.lookup("1.0"))
    assert (r.status, r.exit_code, r.cpu_user_seconds, r.memory_usage_bytes) == \
        ("completed", 3, 13.0, 311 * MiB)


def test_usage_text():
    assert condor_events.usage_seconds("Usr 1 02:03:04, Sys 0 00:00:05") == (93784.0, 5.0)
    assert condor_events.usage_seconds(None) == (None, None)


# --- the source ---------------------------------------------------------------------------------

def test_registered_and_built_from_the_site_configuration(tmp_path):
    assert load("htcondor") is ch
    assert ch.source(config.load(str(_write(tmp_path / "empty.toml", "")))) is None
    spool = tmp_path / "spool"
    spool.mkdir()
    shutil.copy(fixture("htcondor", "history"), spool / "history.20251009T000000")
    shutil.copy(fixture("htcondor", "real-pool-25.14", "history"), spool / "history")
    cfg = config.load(str(_write(tmp_path / "jobmon.toml", (
        f'[condor]\nhistory = "{spool}/history*"\n'
        f'event_log = "{fixture("htcondor", "run042.log")}"\n'))))
    src = ch.source(cfg)
    assert isinstance(src, Source) and len(src.history) == 2
    recs = src.lookup("4711.0")
    assert [(r.source, r.run) for r in recs] == [("eventlog", 1), ("history", 1)]
    assert ch.pick(recs, "4711.0").source == "eventlog"
    assert one(src.lookup("5.0")).exit_code == 0   # the other (rotated) file


def test_unreachable_sources():
    src = ch.CondorHistory(schedd="no-such-schedd.example.org")
    with pytest.raises(AccountingError) as e:
        src.lookup("4711.0")
    assert "no-such-schedd" in str(e.value)
    with pytest.raises(AccountingError):
        ch.CondorHistory(history=["/nonexistent/history"]).lookup("1")
    # one source answering is enough
    both = ch.CondorHistory(schedd="no-such-schedd.example.org",
                            history=[fixture("htcondor", "history")])
    assert [r.job for r in both.lookup("4711.0")] == ["4711.0"]


def test_fields_documented_with_units():
    r = condor_records.Record(job="1.0")
    assert set(r.as_dict()) == set(condor_records.FIELDS)
    for name, (unit, meaning) in condor_records.FIELDS.items():
        assert meaning and (unit in ("", "s", "bytes", "count", "cores"))
        if name.endswith("_bytes"):
            assert unit == "bytes"
        if name.endswith("_seconds"):
            assert unit == "s"


# --- jobmon beside HTCondor ---------------------------------------------------------------------

# what jobmon's summary of the real pool's job 1.0 (a 20 s busy loop, exit 3) holds: its
# figures as jobmon measures such a job (CPU exact, the wrapper's own cost apart)
JOBMON_1_0 = {"method": "cgroup-v2", "exit_code": 3, "signal": None, "wall_seconds": 20.1,
              "cpu_user_seconds": 19.96, "cpu_system_seconds": 0.02, "monitor_cpu_seconds": 0.06,
              "rss_peak_bytes": 317 * MiB, "mem_peak_bytes": 330 * MiB}


def test_procd_cpu_loss_is_flagged_with_its_reason():
    rec = one(history("real-pool-25.14", "history").lookup("1.0"))
    rows = condor_compare.compare(JOBMON_1_0, rec)
    assert [r["field"] for r in rows] == ["cpu_seconds"]
    cpu = rows[0]
    assert (cpu["jobmon"], cpu["htcondor"], cpu["unit"]) == (19.98, 13.0, "s")
    assert round(cpu["difference"], 2) == -6.98
    assert "condor_procd snapshots" in cpu["reason"] and "cgroup-v2" in cpu["reason"]


def test_agreeing_figures_give_no_rows():
    rec = one(history("real-pool-25.14", "history").lookup("1.0"))
    agree = dict(JOBMON_1_0, cpu_user_seconds=12.9, cpu_system_seconds=0.0)
    assert condor_compare.compare(agree, rec) == []


def test_exit_memory_and_wall_disagreements():
    rec = one(history("real-pool-25.14", "history").lookup("1.0"))
    rows = {r["field"]: r for r in condor_compare.compare(
        dict(JOBMON_1_0, exit_code=None, signal=9, rss_peak_bytes=600 * MiB,
             wall_seconds=12.0, cpu_user_seconds=13.0, cpu_system_seconds=0.0), rec)}
    assert set(rows) == {"exit", "memory_bytes", "wall_seconds"}
    assert (rows["exit"]["jobmon"], rows["exit"]["htcondor"]) == ("signal 9", "exit 3")
    assert "a peak between two polls is missed" in rows["memory_bytes"]["reason"]
    assert "spawn of the job wrapper" in rows["wall_seconds"]["reason"]
    high = condor_compare.compare(dict(JOBMON_1_0, rss_peak_bytes=200 * MiB, cpu_user_seconds=13.0,
                                       cpu_system_seconds=0.0), rec)
    assert [r["field"] for r in high] == ["memory_bytes"]
    assert "330.0 MiB" in high[0]["reason"]


def test_no_exit_comparison_for_a_removed_run():
    rec = one(history("history").lookup("4711.1"))
    rows = condor_compare.compare({"exit_code": None, "signal": 15, "method": "procfs"}, rec)
    assert rows == []


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path
