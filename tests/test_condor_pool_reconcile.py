"""One `jobmon reconcile` pass stores the real HTCondor 25.14 pool's end of each run
(tests/fixtures/condor-25: its epoch history, where every ad says JobStatus 2): runs made
through the starter's contract under the pool's job ids -- the removed job that ignored
SIGTERM, the held-then-released job's two runs, the vacated run, the job left held --
each hard-killed after the vacate time as the pool's were (or completed), then settled
from the pool's own records."""
import json
import os

from helpers import fixture, needs_test_user, root
from test_scheduler_ends import completed_run, hard_killed_run, reconcile, starter, stored

pytestmark = [root, needs_test_user]
POOL = fixture("condor-25")


def global_ids():
    with open(os.path.join(POOL, "condor_history-epochs.json")) as f:
        return {str(ad["ClusterId"]): ad["GlobalJobId"] for ad in json.load(f)}


def test_one_pass_settles_every_run_as_the_pool_ended_it():
    st = starter(f'history = "{os.path.join(POOL, "epoch_history")}"\n')
    cases = dict(line.split() for line in open(os.path.join(POOL, "cases.txt")))
    gids = global_ids()

    def ids(case, starts):
        c = cases[case]
        return dict(ClusterId=c, ProcId="0", GlobalJobId=f'"{gids[c]}"', NumJobStarts=str(starts))

    for case in ("rm_ignore_term", "hold_release", "vacate", "left_held"):
        hard_killed_run(st, busy=0.5, **ids(case, 0))
    completed_run(st, **ids("hold_release", 1))
    got = reconcile(st, f"--store={st.store}")
    assert (got["records"], got["settled"], got["waiting"], got["written"]) == (5, 5, 0, 5)

    def ended(case):
        return [(s["scheduler_state"], s["outcome"], s["outcome_reason"])
                for s in stored(st, f"{cases[case]}.0")]

    user = "(by user jobmon-test)"
    assert ended("rm_ignore_term") == [
        ("removed", "badput", f"removed (condor_rm or a removal policy): via condor_rm {user}")]
    assert ended("hold_release") == [
        ("held", "badput", f"held (code 1): via condor_hold {user}"),
        ("completed", "goodput", "completed (exit code 0)")]
    assert ended("vacate") == [("evicted", "badput", "evicted (code 1022): Job vacated by schedd")]
    assert ended("left_held") == [("held", "badput", f"held (code 1): via condor_hold {user}")]
    assert reconcile(st, f"--store={st.store}")["records"] == 0
