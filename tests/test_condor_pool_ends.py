"""How each run ended, as a real HTCondor 25.14 pool recorded it (tests/fixtures/condor-25,
README there: eight jobs through jobmon's wrapper -- completed, exit 3, SIGKILL by the
job itself, condor_rm of a job that ignores SIGTERM, hold then release, condor_vacate_job,
an exec failure held by jobmon's access-point policy, a job left held in the queue), read
through every HTCondor source jobmon has, with the real bindings: the epoch history file,
the schedd's answers (condor_history -json, condor_history -epochs -json, condor_q -json),
the history file and the job event log. Every `*** EPOCH` ad has JobStatus 2 whatever ended
its run; the run's end is in its other fields, and each source must give the same end."""
import json
import os

import classad2
import pytest

from helpers import fixture
from jobmon.plugins.condor.accounting import condor_history as ch
from jobmon.report import canonical
from jobmon.report.scheduler import ending

POOL = fixture("condor-25")
CASES = dict(line.split() for line in open(os.path.join(POOL, "cases.txt")))

# (case, run) -> (status, outcome, cause, reason): what the pool says ended each run
ENDS = {
    ("completed", 1): ("completed", "goodput", "none", "completed (exit code 0)"),
    ("exit3", 1): ("completed", "badput", "user", "failed (exit code 3)"),
    ("sigkill", 1): ("completed", "badput", "unknown", "killed by SIGKILL (sent from outside)"),
    ("rm_ignore_term", 1): ("removed", "badput", "user", "removed (condor_rm or a removal "
                            "policy): via condor_rm (by user jobmon-test)"),
    ("hold_release", 1): ("held", "badput", "user",
                          "held (code 1): via condor_hold (by user jobmon-test)"),
    ("hold_release", 2): ("completed", "goodput", "none", "completed (exit code 0)"),
    ("vacate", 1): ("evicted", "badput", "unknown",
                    "evicted (code 1022): Job vacated by schedd"),
    ("vacate", 2): ("completed", "goodput", "none", "completed (exit code 0)"),
    ("exec_failure", 1): ("held", "badput", "user", "held (code 26.13): Failed to execute "
                          "'/home/jobmon-test/condor-jobs/notexec.sh' with arguments a b: "
                          "(errno=13: 'Permission denied')"),
    ("left_held", 1): ("held", "badput", "user",
                       "held (code 1): via condor_hold (by user jobmon-test)"),
}


def json_ads(name):
    with open(os.path.join(POOL, name)) as f:
        return [classad2.ClassAd(ad) for ad in json.load(f)]


def schedd_records():
    """What CondorHistory's schedd source makes of the schedd's three answers."""
    out = [r for ad in json_ads("condor_history.json") for r in ch.records_from_ad(ad, "schedd")]
    out += [ch.record_from_ad(ad, "epoch") for ad in json_ads("condor_history-epochs.json")]
    out += [r for ad in json_ads("condor_q.json") for r in ch.records_from_ad(ad, "queue")]
    return out


def file_records(kind):
    src = ch.CondorHistory(**{kind: [os.path.join(POOL, "epoch_history" if kind == "history"
                                                  else "events.log")]})
    return src.lookup_many(CASES.values())


def check(pick, case, run):
    status, outcome, cause, reason = ENDS[(case, run)]
    rec = pick(f"{CASES[case]}.0", run)
    assert rec is not None, (case, run)
    assert rec.status == status, (case, run, rec.status, rec.source)
    got = canonical.classify(canonical.run_end(record=rec.as_dict()))
    assert (got.outcome, got.cause, got.reason) == (outcome, cause, reason), (case, run)
    return rec


def test_every_epoch_ad_says_running_whatever_ended_its_run():
    ads = json_ads("condor_history-epochs.json")
    assert len(ads) == 11 and {ad["JobStatus"] for ad in ads} == {2}


@pytest.mark.parametrize("case, run", sorted(ENDS))
def test_epoch_history_file(case, run):
    found = file_records("history")
    rec = check(lambda job, n: ch.pick(found[job.split(".")[0]], job, n), case, run)
    assert rec.source == "epoch"


@pytest.mark.parametrize("case, run", sorted(ENDS))
def test_schedd_with_epochs_and_queue(case, run):
    recs = schedd_records()
    check(lambda job, n: ch.pick(recs, job, n), case, run)


@pytest.mark.parametrize("case, run", sorted(ENDS))
def test_event_log(case, run):
    found = file_records("event_logs")
    rec = check(lambda job, n: ch.pick(found[job.split(".")[0]], job, n), case, run)
    assert rec.source == "eventlog"


def test_history_file_alone_gives_the_last_run_and_the_one_vacated_before_it():
    """A history file holds a job's last run; its ad's vacate fields (LastVacateTime
    between JobLastStartDate and JobCurrentStartDate) tell how the run before it ended."""
    src = ch.CondorHistory(history=[os.path.join(POOL, "history")])
    found = src.lookup_many(CASES.values())
    for case, run in ENDS:
        if case in ("exec_failure", "left_held"):   # still in the queue: not in history
            assert found[CASES[case]] == []
            continue
        status, outcome, _cause, reason = ENDS[(case, run)]
        rec = ch.pick(found[CASES[case]], f"{CASES[case]}.0", run)
        got = canonical.classify(canonical.run_end(record=rec.as_dict()))
        assert (rec.status, got.outcome) == (status, outcome), (case, run)
        # a vacate's text is cleared by the job's next start: its code stays (NumVacatesByReason)
        assert reason == got.reason or reason.startswith(got.reason + ":"), (case, run)


def test_an_epoch_ad_written_twice_the_held_one_decides():
    """The exec failure's run: the shadow writes its ad at the job's exit (ExitCode 126)
    and again when the access-point policy holds it."""
    job = f"{CASES['exec_failure']}.0"
    ads = [r for r in schedd_records() if r.job == job and r.source == "epoch"]
    assert sorted(r.status for r in ads) == ["completed", "held"]
    assert ch.pick(ads, job, 1).hold_code == 26


def test_spawn_ads_are_not_runs():
    with open(os.path.join(POOL, "epoch_history")) as f:
        kinds = [b.get("spawn") for b, _ in ch.split_records(f)]
    assert kinds.count(True) == 10
    assert all(r.run is not None for recs in file_records("history").values() for r in recs)


def test_a_run_still_held_in_the_queue_settles_as_held():
    job = f"{CASES['left_held']}.0"
    [queued] = [r for r in schedd_records() if r.job == job and r.source == "queue"]
    assert (queued.status, queued.hold_code, queued.vacate_code) == ("held", 1, 1)
    settled = ending({"exit_code": None, "signal": None}, queued.as_dict())
    assert (settled["scheduler_state"], settled["outcome"], settled["scheduler_code"],
            settled["outcome_reason"]) == ("held", "badput", 1, ENDS[("left_held", 1)][3])
