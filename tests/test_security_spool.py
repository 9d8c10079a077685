"""A job user is hostile, continued (tests/test_security.py has the first set): what one
user can do to the spool's filesystem, the database's shards, the end-of-job cards and the
other users' jobs, played as the unprivileged test users through the real shipper (an
unprivileged service user) against the real InfluxDB. docs/security.md says what stops
each attack, and what only a filesystem quota can.
"""
import contextlib
import os
import pwd
import stat
import subprocess
import time

import pytest

from helpers import JOBMON, as_user, needs_test_user, shared_tmpdir
from influx_site import SERVICE_USER
from test_security import (ATTACKER, VICTIM, attacker, job_row, node,  # noqa: F401 (node:
                           plant, status, valid_line, victim_job)      # a fixture)

pytestmark = [pytest.mark.root, needs_test_user]


# --- config values that cannot work: refused when loaded, naming the key ---

@pytest.mark.parametrize("text, error", [
    ('[spool]\ndir = "spool"\n', ":2: spool.dir must be an absolute path"),
    ('[report]\ncard_dir = "cards"\n', ":2: report.card_dir must be an absolute path"),
    ('[shipper]\nstate_dir = "state"\n', ":2: shipper.state_dir must be an absolute path"),
    ('[slurm]\nwarnings = "/no/such/dir/jobmon.log"\n',
     ":2: slurm.warnings: no directory /no/such/dir"),
    ('[spool]\nmax_bytes_per_user = 20000\n', ":2: spool.max_bytes_per_user must be at least"),
    ('[spool]\nmax_bytes = 20000\n', ":2: spool.max_bytes must be at least"),
])
def test_config_values_that_cannot_work_are_refused_with_the_key(tmp_path, text, error):
    """A relative spool or card directory (each job's working directory would decide), a
    warnings file in a directory that does not exist (every warning lost without a word),
    a per-user share below the room one job keeps for its end-of-job record (each job's
    reserve dropped as soon as it is made): `jobmon config check` and `jobmon ship` refuse
    them, naming the key and its line."""
    path = tmp_path / "jobmon.toml"
    path.write_text(text)
    for argv in (["config", "check"], ["ship", "--status"]):
        r = subprocess.run([JOBMON, *argv, "--config", str(path)], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 2 and error in r.stderr, (argv, r.stderr)
        assert "Traceback" not in r.stderr


def test_an_empty_password_file_is_refused_with_the_key(tmp_path):
    """An empty secret file is a mistake, not "no password": refused by `config check`
    and by the shipper, naming the key."""
    secret = tmp_path / "password"
    secret.write_text("\n")
    os.chmod(secret, 0o600)
    path = tmp_path / "jobmon.toml"
    path.write_text(f'[store]\nkind = "influxdb"\n[influxdb]\nusername = "u"\n'
                    f'password_file = "{secret}"\n[spool]\ndir = "{tmp_path}/spool"\n'
                    f'[shipper]\nstate_dir = "{tmp_path}/state"\n')
    for argv in (["config", "check"], ["ship", "--timeout=1"]):
        r = subprocess.run([JOBMON, *argv, "--config", str(path)], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 2, (argv, r.stderr)
        assert f"influxdb.password_file: {secret} is empty" in r.stderr


# --- the shipper's state ---

def test_status_leaves_a_corrupt_state_as_it_is_and_no_copy_overwrites_another(node):
    """`jobmon ship --status` only reads: a corrupt state file stays where it is (and is
    said to be unreadable); the shipper keeps each corrupt file it finds under a name of
    its own, never over an earlier one."""
    state = os.path.join(node.state, "ship-state.json")
    kept = []
    for n, content in enumerate((b"{not json", b"[1, 2]")):
        victim_job(node, f"victim-state-{n}")
        with open(state, "wb") as f:
            f.write(content)
        os.chown(state, *[getattr(os.stat(node.state), k) for k in ("st_uid", "st_gid")])
        st = status(node)
        with open(state, "rb") as f:
            assert f.read() == content
        assert "ship-state.json" in st["state_unreadable"]
        node.ship()
        kept.append(content)
        copies = sorted(n for n in os.listdir(node.state) if ".corrupt" in n)
        assert [open(os.path.join(node.state, c), "rb").read() for c in copies] == kept
        assert "state_unreadable" not in status(node)
        assert job_row(node, f"victim-state-{n}")["exit_code"] == 0


# --- the end-of-job card in a shared directory ---

def test_a_card_name_claimed_first_by_another_user_gets_them_nothing(tmp_path):
    """A shared card_dir (mode 1777): the attacker makes the victim's card file first
    (mode 0666). The victim's card never goes into a file the
    victim did not just create: it is the victim's own, readable by the victim alone, and
    the attacker's file stays empty."""
    from test_report_card import condor, run_job
    cards = shared_tmpdir("jobmon-cards-")
    claimed = os.path.join(cards, "jobmon-card-5.0.txt")
    attacker("sh", "-c", f"umask 0; touch {claimed} && chmod 666 {claimed}")
    starter = condor(f'[report]\ncard = "file"\ncard_dir = "{cards}"\n', user=VICTIM,
                     JobMonitorReportCard="true")
    rc, _out, _err = run_job(starter, code=0)
    assert rc == 0
    assert os.path.getsize(claimed) == 0
    [card] = [os.path.join(cards, n) for n in os.listdir(cards) if n != "jobmon-card-5.0.txt"]
    st = os.lstat(card)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == pwd.getpwnam(VICTIM).pw_uid
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert open(card).read().startswith("jobmon: job 5.0 exit code 0 after ")
    peek = subprocess.run(as_user(["cat", card], ATTACKER), capture_output=True)
    assert peek.returncode != 0 and peek.stdout == b""


# --- the database's shards ---

WEEK = 7 * 86400 * 10**9


def shard_starts(node):
    """Start times (s) of the database's shards."""
    import datetime
    [res] = node.influx.query("SHOW SHARDS", node.db)["results"]
    rows = [dict(zip(s["columns"], v)) for s in res["series"] for v in s.get("values", [])]
    return [datetime.datetime.fromisoformat(r["start_time"].replace("Z", "+00:00")).timestamp()
            for r in rows if r["database"] == node.db]


def test_a_shard_bomb_is_refused_and_opens_no_shard(node):
    """Grammar-valid lines timed where no sampler could write them -- 3,000 points a week
    apart from 2001 on, a job that claims to have started 40 days ago, a sample two hours
    ahead of the clock -- are refused: each file quarantined and counted against its
    owner, no shard opened for them, and the victim's job ships meanwhile."""
    now = time.time_ns()
    bombs = [plant(node, b"".join(valid_line(t=10**18 + k * WEEK) for k in range(3000))),
             plant(node, b"jobmon_job,job=old,scheduler=local interval=1 %d\n"
                   % (now - 40 * 86400 * 10**9) + valid_line(t=now)),
             plant(node, valid_line(t=now) + valid_line(t=now + 2 * 3600 * 10**9))]
    victim_job(node, "victim-shards")
    r = node.ship()
    for path in bombs:
        assert f"quarantined spool file {path}" in r.stderr
    assert "is timed at" in r.stderr
    assert job_row(node, "victim-shards")["exit_code"] == 0
    starts = shard_starts(node)
    assert starts and all(abs(s - now / 1e9) < 8 * 86400 for s in starts), starts
    losses = status(node)["losses"]
    assert losses[ATTACKER]["quarantined"]["files"] == 3 and VICTIM not in losses
    assert losses[ATTACKER]["quarantined"]["points"] == 3000 + 2 + 2


# --- the spool's own small filesystem ---

@contextlib.contextmanager
def small_spool(node, size):
    """The spool on a tmpfs of its own, `size` bytes, as docs/security.md advises."""
    pw = pwd.getpwnam(SERVICE_USER)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=3733,uid={pw.pw_uid},"
                    f"gid={pw.pw_gid}", "jobmon-test-spool", node.spool], check=True)
    try:
        node.prepare()
        yield
    finally:
        subprocess.run(["umount", "-l", node.spool], check=True)


def fill(node, user=ATTACKER):
    """Fill the spool's filesystem with a file of `user`'s."""
    subprocess.run(as_user(["dd", "if=/dev/zero", f"of={node.spool}/filler.lp", "bs=64k"],
                           user), capture_output=True)


def test_a_job_started_on_a_full_spool_has_its_loss_counted(node):
    """The attacker fills the spool's filesystem; a job of the victim's starts, samples
    and ends with not one byte written. Its sampler says what really happens, and the
    shipper counts every point of it -- against the attacker, whose data over their
    share filled the disk, not the victim."""
    with small_spool(node, 2 << 20):
        node.write_config(max_bytes=1 << 20, max_bytes_per_user=256 << 10)
        fill(node)
        r = node.jobmon("run", "--interval=0.05", "--job-id=victim-full", "--", "sleep", "0.5",
                        user=VICTIM)
        assert r.returncode == 0
        assert "the shipper counts them against the user whose data filled it" in r.stderr
        assert "will mark the job as ended" not in r.stderr
        node.ship()
        st = status(node)
    assert VICTIM not in st["losses"]
    lost = st["losses"][ATTACKER]["caused_loss"]["points"]
    assert lost >= 3 and st["sampler_lost_points"] == lost   # its start, samples and end
    assert st["spool_files"] == 0
