"""An HTCondor job's command_hash is its job ad's Cmd and Arguments as submitted, not the
argv the starter gives the wrapper (a copy in each job's own scratch directory): the
wrapper run as the starter runs it, on the real pool's job ad (tests/fixtures/htcondor)."""
import hashlib

from helpers import needs_test_user, root
from test_condor_wrapper import FAST, Starter, edit_ad, py

pytestmark = [root, needs_test_user]


def sha(parts):
    return hashlib.sha256(b"".join(p.encode() + b"\0" for p in parts)).hexdigest()[:16]


def test_the_ads_command_not_the_scratch_copy():
    starter = Starter(site=FAST)
    for _ in range(2):           # two runs, two scratch directories
        code, _out, err = starter.run(py("pass"))
        assert code == 0, err
    starter.job_ad_text = edit_ad(starter.job_ad_text, {"Arguments": '"y z"'})
    code, _out, err = starter.run(py("pass"))
    assert code == 0, err
    hashes = [desc["tags"]["command_hash"] for desc, _s, _x in starter.records("5.0")]
    # the real pool's ad: Cmd = "/home/alice/jm/cap.sh", Args = "x" (old syntax)
    assert hashes == [sha(["/home/alice/jm/cap.sh", "x"])] * 2 + \
        [sha(["/home/alice/jm/cap.sh", "y z"])]
    assert sha(py("pass")) not in hashes      # what the wrapper was given is not it
