"""The rules of whose job a record is (jobmon.report.ownership), on records as the stores
give them: the scheduler's word decides, a claim is never the job's, its account's or its
pilot's, and a job's own say (an unsettled mark) is never read. The attacks themselves,
with real users, shipper, InfluxDB, HTCondor's contract and Slurm: test_ownership.py."""
import pytest

from jobmon.report import aggregate, ownership
from jobmon.report.pilot_records import PilotNotFound, own_payloads, pilot_record
from jobmon.serve.policy import Scope, account_of


def rec(user, job="4711.0", scheduler="htcondor", reconciled=1, verdict=None, owner=None,
        account="group_physics", **tags):
    summary = {"start_time": 1.0, "end_time": 61.0, "wall_seconds": 60.0, "exit_code": 0,
               "cpu_user_seconds": 30.0, "cpu_system_seconds": 0.0, "outcome": "goodput",
               "reconciled": reconciled}
    if verdict:
        summary.update(ownership=verdict, scheduler_user=owner)
    return {"job": job, "user": user, "host": "wn1", "scheduler": scheduler, "run": "1",
            "start_time": 1.0, "summary": summary,
            "tags": dict(tags, account=account, RequestCpus="1")}


def test_the_scheduler_names_the_owner():
    assert ownership.judge(rec("ann"), {"ann"}) == ownership.OWN
    assert ownership.judge(rec("ben"), {"ann"}) == ownership.CLAIM
    assert ownership.judge(rec("ben"), set()) == ownership.UNCONFIRMED
    assert ownership.judge(rec("ben", scheduler="local"), {"ann"}) == ownership.CLAIM
    assert ownership.judge(rec("ann", scheduler="local"), {"ann"}) == ownership.LOCAL
    assert ownership.judge(rec("ben", scheduler="local"), set()) == ownership.LOCAL
    # a pilot account runs others' jobs: vouched for by the site
    assert ownership.judge(rec("osg07"), {"ann"}, ("osg*",)) == ownership.OWN


def test_an_unsettled_mark_is_the_jobs_own_say_and_not_read():
    forged = rec("ben", reconciled=0, verdict=ownership.OWN, owner="ben")
    assert ownership.stored(forged) == ownership.UNCONFIRMED
    assert ownership.stored(rec("ben", verdict=ownership.CLAIM, owner="ann")) == \
        ownership.CLAIM


def test_a_confirmed_run_makes_the_others_claims():
    """The owner known from one run settles the runs read with it: a run not reconciled
    yet, a `jobmon run` under the id; another job's runs stay as they are."""
    mine = rec("ann", verdict=ownership.OWN, owner="ann")
    late = rec("ben", reconciled=0)
    local = rec("ben", scheduler="local")
    other = rec("ben", job="4712.0", reconciled=0)
    v = ownership.settle([mine, late, local, other])
    assert [v[id(r)] for r in (mine, late, local, other)] == \
        [ownership.OWN, ownership.CLAIM, ownership.CLAIM, ownership.UNCONFIRMED]
    assert "is ann's" in ownership.why(late, {"ann"})


def test_report_counts_no_claim_and_marks_the_unconfirmed():
    records = [rec("ann", verdict=ownership.OWN, owner="ann"),
               rec("ben", verdict=ownership.CLAIM, owner="ann"),
               rec("cid", job="99.0", reconciled=0),
               rec("dan", job="demo", scheduler="local")]
    m = aggregate.aggregate(records, "account")
    [g] = m["groups"]
    assert (g["key"], g["jobs"], g["unconfirmed"], g["local"]) == ("group_physics", 3, 1, 1)
    assert m["claim_count"] == 1 and m["claims"][0]["user"] == "ben"


def test_a_claim_is_no_accounts_for_its_coordinators_nor_a_pilots_payload():
    claim = rec("ben", verdict=ownership.CLAIM, owner="ann")
    assert account_of(claim) is None and account_of(rec("ann")) == "group_physics"
    assert not Scope("carl", accounts={"group_physics"}).allows(claim)
    assert Scope("ben").allows(claim)          # still its runner's to read
    pilot = rec("ann", job="pilot-1", scheduler="local")
    payloads = [rec("ann", job="1.0", pilot="pilot-1"), rec("ben", job="2.0", pilot="pilot-1"),
                rec("ann", job="3.0", pilot="pilot-1", verdict=ownership.CLAIM, owner="cid")]
    mine, claims = own_payloads(pilot, payloads)
    assert [r["job"] for r in mine] == ["1.0"]
    assert [(r["job"], why.split(";")[0]) for r, why in claims] == \
        [("2.0", "run by ben, not by the pilot's user ann"), ("3.0", "run by ann")]
    mine, _ = own_payloads(dict(pilot, user="osgpilot"),
                           [rec("osg07", job="4.0", pilot="pilot-1")], ("osg*", "osgpilot"))
    assert [r["job"] for r in mine] == ["4.0"]


def test_a_claim_is_never_the_pilot_and_two_users_pilots_are_said():
    """Newest first, as the stores give them: a claim under the pilot's id is skipped; two
    users' unconfirmed runs of one id are named (--user picks one)."""
    ann = rec("ann", job="pilot-1", scheduler="local")
    claim = rec("ben", job="pilot-1", verdict=ownership.CLAIM, owner="ann")
    assert pilot_record([claim, ann], "pilot-1") == (ann, [])
    assert pilot_record([rec("ben", job="pilot-1", scheduler="local"), ann],
                        "pilot-1")[1] == ["ann"]
    assert pilot_record([claim, ann], "pilot-1", user="ann") == (ann, [])
    with pytest.raises(PilotNotFound, match=r"^no pilot 'pilot-1' in the store "
                       r"\(records by ben\)$"):
        pilot_record([claim], "pilot-1")
