"""OSG canonical units and run classification (jobmon.report.canonical): the OSG report's
worked examples as they are written, the GiB reading of its "GB", and goodput/badput of
runs from jobmon's summaries and from real HTCondor and Slurm records (tests/fixtures)."""
import json
import signal

import pytest

from helpers import fixture
from jobmon.plugins.condor.accounting import condor_history
from jobmon.plugins.slurm.accounting import sacct
from jobmon.report import canonical as c
from jobmon.report.canonical import GIB, Resources, RunEnd

MiB = 1 << 20
HOUR = 3600.0


# --- the report's examples: idle cores and memory over one hour --------------------------

@pytest.mark.parametrize("cores, gib, units, limit", [
    (3, 3, 1, "memory"),   # "3 CPU cores and 3 GB of memory unused ... 1 CPU core hour"
    (3, 1, 0, "memory"),   # "3 CPU cores and 1 GB ... 0 CPU core hours"
    (2, 6, 2, "cores"),    # "2 CPU cores and 6 GB ... 2 CPU core hours (CPU core limited)"
])
def test_report_examples_idle_canonical_core_hours(cores, gib, units, limit):
    assert c.whole_units(cores, gib * GIB) == units
    assert c.limited_by(cores, gib * GIB) == limit
    job = c.job_canonical(Resources(cores, gib * GIB, 0), Resources(0, 0, 0), HOUR)
    assert job.idle_canonical_core_hours == units
    assert job.idle_limited_by == limit
    assert job.idle_core_hours == cores   # the remainder the pilot account hands on


def test_a_run_using_part_of_its_slot_has_idle_time_in_whole_units_only():
    # 4 cores + 12 GiB for 2 h; it kept 1.5 cores busy and peaked at 3 GiB: 2.5 cores and
    # 9 GiB idle -> 2 whole units (core-limited: the memory would make 4)
    job = c.job_canonical(Resources(4, 12 * GIB, 0), Resources(1.5, 3 * GIB, 0), 2 * HOUR)
    assert (job.provisioned_core_hours, job.used_core_hours) == (8.0, 3.0)
    assert job.idle_core_hours == 5.0
    assert job.idle_canonical_core_hours == 4.0 and job.idle_limited_by == "cores"


def test_one_byte_short_of_a_unit_is_a_unit_less():
    assert c.whole_units(3, 6 * GIB) == 3
    assert c.whole_units(3, 6 * GIB - 1) == 2


def test_cores_left_over_by_float_subtraction_still_count_whole():
    idle = 8 - 2.2 - 2.8          # 2.9999999999999996 in binary floating point
    assert c.whole_units(idle, 100 * GIB) == 3


def test_gb_is_gib_by_default_and_a_parameter():
    # a slot of 4 cores and 8000 MiB (just under 2 GiB a core): 3 units with GiB, 4 with
    # decimal GB (2e9 bytes)
    assert c.CANONICAL_MEMORY_BYTES == 2 * 1024 ** 3
    assert c.whole_units(4, 8000 * MiB) == 3
    assert c.whole_units(4, 8000 * MiB, memory_per_unit=2 * 10 ** 9) == 4
    # OSG's 2048 MB (MiB) a core is exactly one unit a core
    assert c.whole_units(8, 8 * 2048 * MiB) == 8 and c.limited_by(8, 8 * 2048 * MiB) == "both"


def test_unknown_memory_limits_nothing():
    assert c.whole_units(3.7, None) == 3 and c.limited_by(3, None) == "cores"
    job = c.job_canonical(Resources(4, None, 0), Resources(1, 2 * GIB, 0), HOUR)
    assert job.idle_canonical_core_hours == 3.0


def test_gpu_idle_time_is_canonical_time_unrounded():
    job = c.job_canonical(Resources(1, 2 * GIB, 2), Resources(1, 2 * GIB, 0.5), 2 * HOUR)
    assert (job.provisioned_gpu_hours, job.used_gpu_hours, job.idle_gpu_hours) == (4.0, 1.0, 3.0)
    assert job.idle_canonical_core_hours == 0.0
    unknown = c.job_canonical(Resources(1, 2 * GIB, 2), Resources(1, 2 * GIB, None), HOUR)
    assert unknown.idle_gpu_hours is None and unknown.provisioned_gpu_hours == 2.0


def test_use_beyond_the_slot_leaves_nothing_idle():
    job = c.job_canonical(Resources(1, 2 * GIB, 0), Resources(1.8, 3 * GIB, 0), HOUR)
    assert (job.used_core_hours, job.idle_core_hours, job.idle_canonical_core_hours) == \
        (1.0, 0.0, 0.0)


def test_used_from_a_jobmon_summary():
    summary = {"wall_seconds": 100.0, "cpu_user_seconds": 150.0, "cpu_system_seconds": 50.0,
               "rss_peak_bytes": 3 * GIB, "mem_peak_bytes": 5 * GIB,
               "gpu_count": 2, "gpu_util_avg_percent": 40.0}
    assert c.used_from_summary(summary) == Resources(2.0, 3 * GIB, 0.8)
    no_gpu = c.used_from_summary({"wall_seconds": 10, "cpu_user_seconds": 5})
    assert no_gpu == Resources(0.5, None, 0.0)
    gpu_no_util = c.used_from_summary({"wall_seconds": 10, "gpu_count": 1})
    assert gpu_no_util.gpus is None


def test_slot_resources_from_htcondor_attributes_in_mib():
    """The HTCondor object reads what it gave a slot from the attributes its wrapper copies
    into the job's tags (jobmon.schedulers)."""
    from jobmon import schedulers
    slot = schedulers.get("htcondor").slot_resources
    tags = {"CpusProvisioned": "4", "MemoryProvisioned": "8192", "GPUsProvisioned": "1",
            "RequestMemory": "ifThenElse(MemoryUsage > 2048, 4096, 2048)"}
    assert slot(tags) == Resources(4.0, 8 * GIB, 1.0)
    # Request* where Provisioned is missing; an unevaluated expression is not a number
    assert slot({"RequestCpus": "2", "RequestMemory": "2048"}) == Resources(2.0, 2 * GIB, 0.0)
    assert slot({"RequestCpus": "1", "RequestMemory": "x * 2"}) == Resources(1.0, None, 0.0)
    assert slot({"Owner": "alice"}) is None
    assert schedulers.get("slurm").slot_resources(tags) is None


@pytest.mark.parametrize("bad", [dict(cores=-1), dict(memory_bytes=-1.0),
                                 dict(gpus=float("nan")), dict(cores=float("inf"))])
def test_resources_refuse_negative_or_non_finite_counts(bad):
    with pytest.raises(ValueError):
        Resources(**bad)


# --- how a run ended ---------------------------------------------------------------------

@pytest.mark.parametrize("end, outcome, cause", [
    (RunEnd(exit_code=0), "goodput", "none"),
    (RunEnd(exit_code=1), "badput", "user"),
    (RunEnd(exit_code=127), "badput", "user"),
    (RunEnd(signal=signal.SIGSEGV), "badput", "user"),
    (RunEnd(signal=signal.SIGABRT), "badput", "user"),
    (RunEnd(signal=signal.SIGXCPU), "badput", "user"),
    (RunEnd(signal=signal.SIGTERM), "badput", "unknown"),
    (RunEnd(signal=signal.SIGKILL), "badput", "unknown"),
    (RunEnd(), "unknown", "unknown"),
])
def test_jobmon_run_jobs_by_exit_status(end, outcome, cause):
    got = c.classify(end)
    assert (got.outcome, got.cause) == (outcome, cause), got
    assert got.reason


@pytest.mark.parametrize("end, outcome, cause", [
    (RunEnd(state="completed", exit_code=0), "goodput", "none"),
    (RunEnd(state=4, exit_code=2), "badput", "user"),
    (RunEnd(state="removed"), "badput", "user"),
    (RunEnd(state=3), "badput", "user"),
    (RunEnd(state="held", hold_code=1), "badput", "user"),
    (RunEnd(state="held", hold_code=34, hold_subcode=102), "badput", "user"),
    (RunEnd(state="held", hold_code=45), "badput", "site"),       # Singularity test failed
    (RunEnd(state="held", hold_code=6, hold_subcode=8), "badput", "site"),
    (RunEnd(state="held", hold_code=13, hold_subcode=2), "badput", "user"),   # input missing
    (RunEnd(state="held", hold_code=13, hold_subcode=62), "badput", "site"),  # plugin timeout
    (RunEnd(state="held"), "badput", "unknown"),
    (RunEnd(state="evicted"), "badput", "preemption"),
    (RunEnd(state="evicted", vacate_code=1013), "badput", "preemption"),     # startd shutdown
    (RunEnd(state="evicted", vacate_code=1014), "badput", "preemption"),     # draining
    (RunEnd(state="evicted", vacate_code=1007), "badput", "site"),           # starter error
    (RunEnd(state="evicted", vacate_code=34), "badput", "user"),             # memory retry
    (RunEnd(state="idle"), "badput", "unknown"),
    (RunEnd(state="running"), "unknown", "unknown"),
    (RunEnd(state=2, signal=signal.SIGTERM), "unknown", "unknown"),
])
def test_htcondor_states_and_codes(end, outcome, cause):
    got = c.classify(end)
    assert (got.outcome, got.cause) == (outcome, cause), got


@pytest.mark.parametrize("state, exit_code, sig, outcome, cause", [
    ("COMPLETED", 0, None, "goodput", "none"),
    ("FAILED", 3, None, "badput", "user"),
    ("FAILED", 0, None, "badput", "user"),    # 22.05's JSON loses a failed job's code
    ("FAILED", None, 9, "badput", "unknown"),
    ("CANCELLED", 0, None, "badput", "user"),
    ("TIMEOUT", None, 15, "badput", "user"),
    ("OUT_OF_MEMORY", None, 9, "badput", "user"),
    ("PREEMPTED", None, 15, "badput", "preemption"),
    ("NODE_FAIL", None, None, "badput", "site"),
    ("BOOT_FAIL", None, None, "badput", "site"),
    ("REQUEUED", None, None, "badput", "unknown"),
    ("RUNNING", None, None, "unknown", "unknown"),
    ("PENDING", None, None, "unknown", "unknown"),
])
def test_slurm_states(state, exit_code, sig, outcome, cause):
    got = c.classify(RunEnd(state=state, exit_code=exit_code, signal=sig))
    assert (got.outcome, got.cause) == (outcome, cause), got


def test_a_run_the_job_had_to_repeat_is_badput():
    # exit 0 but the job started again: its result was lost on the way (the site's)
    lost = c.classify(RunEnd(exit_code=0, run=1, job_starts=2))
    assert (lost.outcome, lost.cause) == ("badput", "site")
    assert c.classify(RunEnd(exit_code=0, run=2, job_starts=2)).outcome == "goodput"
    silent = c.classify(RunEnd(run=1, job_starts=3))
    assert (silent.outcome, silent.cause) == ("badput", "unknown")
    killed = c.classify(RunEnd(signal=signal.SIGTERM, run=1, job_starts=2))
    assert "started again" in killed.reason


def test_run_end_prefers_jobmons_exit_status_and_keeps_the_schedulers_reasons():
    record = {"status": "held", "exit_code": None, "signal": None, "hold_code": 34,
              "hold_subcode": 102, "hold_reason": "over memory", "remove_reason": "x",
              "run": 1, "runs": 1}
    end = c.run_end({"exit_code": None, "signal": 9}, record)
    assert (end.signal, end.state, end.hold_code, end.reason) == (9, "held", 34, "over memory")
    got = c.classify(end)
    assert (got.cause, got.reason) == ("user", "held (code 34.102): over memory")
    # no summary: the record's own exit status
    assert c.run_end(None, {"state": "FAILED", "exit_code": 3}).exit_code == 3


def test_run_end_uses_a_record_of_another_run_only_for_its_count_of_starts():
    final = {"status": "completed", "exit_code": 0, "run": 2, "runs": 2}
    first = c.run_end({"exit_code": None, "signal": 15}, final, run=1)
    assert (first.state, first.run, first.job_starts) == (None, 1, 2)
    assert c.classify(first).outcome == "badput"
    last = c.run_end({"exit_code": 0, "signal": None}, final, run=2)
    assert c.classify(last).outcome == "goodput"


def _condor(source, *parts):
    path = fixture("htcondor", *parts)
    return condor_history.CondorHistory(**{source: [path]})


def test_real_htcondor_event_log_runs():
    """The real pool's event log: two runs the job wrapper failed to start (evicted, code
    1007, the starter's error: the site's); the job's own PeriodicHold held it later, while
    idle, which ended neither run."""
    first, second = _condor("event_logs", "real-pool-25.14", "events.log").lookup("4.0")
    for run in (first, second):
        got = c.classify(c.run_end(record=run.as_dict()))
        assert (got.outcome, got.cause) == ("badput", "site") and "wrapper failed" in got.reason


def test_real_htcondor_history_records():
    src = _condor("history", "real-pool-25.14", "history")
    by_job = {r.job: c.classify(c.run_end(record=r.as_dict())) for r in src.lookup("1")
              + src.lookup("3") + src.lookup("5")}
    assert (by_job["1.0"].outcome, by_job["1.0"].reason) == ("badput", "failed (exit code 3)")
    assert (by_job["3.0"].outcome, by_job["3.0"].cause) == ("badput", "user")   # condor_rm
    assert by_job["5.0"].outcome == "goodput"
    held, done = _condor("history", "epoch-history").lookup("4711.2")
    assert c.classify(c.run_end(record=held.as_dict())).cause == "user"      # memory, 34
    assert c.classify(c.run_end(record=done.as_dict())).outcome == "goodput"


@pytest.mark.parametrize("name, outcome, cause", [
    ("plain", "goodput", "none"), ("cancelled", "badput", "user"),
    ("failed", "badput", "user"), ("signal", "badput", "unknown")])
def test_real_slurm_records(name, outcome, cause):
    with open(fixture("slurm", "sacct", f"{name}.json")) as f:
        (record,) = sacct.records_from_json(json.load(f))
    got = c.classify(c.run_end(record=record.as_dict()))
    assert (got.outcome, got.cause) == (outcome, cause), got
