"""A job user is hostile, continued (tests/test_security.py has the first set): what one
user can do to the spool's filesystem, the database's shards, the end-of-job cards and the
other users' jobs, played as the unprivileged test users through the real shipper (an
unprivileged service user) against the real InfluxDB. docs/security.md says what stops
each attack, and what only a filesystem quota can.
"""
import contextlib
import json
import os
import pwd
import re
import signal
import stat
import subprocess
import time

import pytest

from helpers import JOBMON, PYTHON, REPO, as_user, needs_test_user, shared_tmpdir
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


def deploy_caps():
    """The capabilities deploy/jobmon-ship.service grants the shipper's service user."""
    with open(os.path.join(REPO, "deploy", "jobmon-ship.service")) as f:
        [line] = [x for x in f if x.startswith("AmbientCapabilities=")]
    return tuple(c.lower().removeprefix("cap_") for c in line.split("=", 1)[1].split())


DEPLOY_CAPS = deploy_caps()


@contextlib.contextmanager
def following(node):
    """`jobmon ship --follow` as the service user; stopped (and one last pass made) at
    the end. Yields a list that then holds its stderr."""
    node.write_config(max_bytes=12_000_000, poll_seconds=0.1, flush_seconds=0.1)
    shipper = subprocess.Popen(node.as_service([JOBMON, "ship", "--follow"]), env=node.env,
                               stderr=subprocess.PIPE, text=True)
    err = []
    try:
        yield err
    finally:
        shipper.send_signal(signal.SIGTERM)
        err.append(shipper.communicate(timeout=60)[1])
    err.append(node.ship().stderr)


def victim_sampling(node, job_id, seconds, until=None):
    """The victim's job, sampling every 50 ms, `seconds` long and, given a path `until`,
    until that exists; returns once its spool file and the room for its end-of-job record
    are there."""
    cmd = ["sleep", str(seconds)] if until is None else [
        "sh", "-c", f'sleep {seconds}; until [ -e "$0" ]; do sleep 0.05; done', until]
    job = subprocess.Popen(as_user([JOBMON, "run", "--interval=0.05", f"--job-id={job_id}",
                                    "--"] + cmd, VICTIM), env=node.env,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(n.endswith(".end.lp") for n in os.listdir(node.spool)):
        assert time.monotonic() < deadline and job.poll() is None
        time.sleep(0.02)
    return job


FILL = r"""
import os, sys
parts = sys.argv[2].split("/")
fd = os.open(sys.argv[1], os.O_PATH | os.O_DIRECTORY)   # the spool: not readable
for d in parts[:-1]:      # every directory held open: moving them changes nothing
    os.mkdir(d, dir_fd=fd)
    fd = os.open(d, os.O_PATH | os.O_DIRECTORY, dir_fd=fd)
out = os.open(parts[-1], os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
chunk = os.urandom(1 << 20)
try:
    for _ in range(17):
        os.write(out, chunk)
except OSError:
    pass
"""


def fill_through_a_directory(node, path):
    """As the attacker: make the directories of `path` in the spool and write 17 MB
    into its file (or until the disk is full)."""
    subprocess.run(as_user([PYTHON, "-c", FILL, node.spool, path], ATTACKER), check=True)


def room(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def ended_once_the_disk_has_room(node, job, until):
    """Ends the victim's job (victim_sampling's `until`) once the spool's filesystem has
    room again -- the shipper took back what filled it -- however long a busy machine
    makes that take: the job lost nothing only if the room came while it ran."""
    deadline = time.monotonic() + 60
    while room(node.spool) < 8 << 20:
        assert time.monotonic() < deadline, "the spool's filesystem stayed full"
        time.sleep(0.05)
    open(until, "w").close()
    assert job.wait(60) == 0, job.stderr.read()


def lost_nothing(node, job_id):
    rep = json.loads(node.jobmon("query", "--json", job_id).stdout)
    s = rep["summary"]
    assert s["exit_code"] == 0 and s["lost_points"] == 0
    assert len(rep["samples"]) == s["samples"] > 40
    return s


def test_a_directory_that_fills_the_spool_is_charged_to_its_maker_and_removed(node):
    """The spool on its own 16 MiB filesystem, the shipper following, a victim's job
    sampling; the attacker makes a directory there and fills the disk through it. The
    directory is charged to the attacker by what it really holds, and removed: the
    victim loses not one sample, and no loss is the victim's."""
    node.service_caps = DEPLOY_CAPS
    until = os.path.join(shared_tmpdir(), "end")
    with small_spool(node, 16 << 20), following(node) as err:
        job = victim_sampling(node, "victim-dir", 6, until)
        time.sleep(1)
        fill_through_a_directory(node, "1.lp/deeper/fill")
        ended_once_the_disk_has_room(node, job, until)
        time.sleep(0.5)
    lost_nothing(node, "victim-dir")
    st = status(node)
    assert VICTIM not in st["losses"]
    assert "removed 1.lp of user jobmon-test" in "".join(err)
    assert st["losses"][ATTACKER]["over_share"]["bytes"] > 12 << 20


HOLD_DROPPED = r"""
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
os.write(fd, sys.stdin.buffer.read())
while os.fstat(fd).st_nlink:    # until the shipper has sent it and dropped it
    time.sleep(0.02)
try:
    while True:
        os.write(fd, b"x" * (1 << 20))
except OSError:
    pass
print("full", flush=True)
time.sleep(60)
"""


@contextlib.contextmanager
def disk_filled_through_a_dropped_file(node):
    """As the attacker: a spool file kept open after the shipper sent and removed it,
    written into until the disk is full, and held so. Yields its holder."""
    holder = subprocess.Popen(as_user([PYTHON, "-c", HOLD_DROPPED, os.path.join(
        node.spool, f"{time.time_ns()}.999.1.held.lp")], ATTACKER),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        holder.stdin.write(valid_line())
        holder.stdin.close()
        assert holder.stdout.readline() == b"full\n"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def test_a_file_held_open_after_it_was_dropped_is_charged_named_and_emptied(node):
    """The attacker keeps their spool file open after the shipper sent and removed it,
    and writes into it until the disk is full. The shipper finds it (/proc), names its
    holder, charges it to the attacker and empties it: the victim loses nothing."""
    node.service_caps = DEPLOY_CAPS
    until = os.path.join(shared_tmpdir(), "end")
    with small_spool(node, 16 << 20), following(node) as err:
        job = victim_sampling(node, "victim-held", 6, until)
        with disk_filled_through_a_dropped_file(node) as holder:
            ended_once_the_disk_has_room(node, job, until)
            time.sleep(0.5)
    lost_nothing(node, "victim-held")
    st = status(node)
    assert VICTIM not in st["losses"]
    assert re.search(rf"held by pid {holder.pid} \(command '\w+', user jobmon-test\)",
                     "".join(err))
    assert st["losses"][ATTACKER]["over_share"]["bytes"] > 12 << 20


def test_a_held_file_the_shipper_cannot_see_is_no_loss_of_the_victims(node):
    """Without the capabilities to look into other users' processes, the shipper cannot
    see whose removed file fills the disk: it says so, and the victim's samples the disk
    kept out are counted as caused by data it cannot see -- never against the victim."""
    with small_spool(node, 16 << 20):
        with following(node) as err:
            job = victim_sampling(node, "victim-unseen", 8)
            with disk_filled_through_a_dropped_file(node):
                assert job.wait(60) == 0
                time.sleep(0.5)
    st = status(node)
    assert VICTIM not in st["losses"]
    lost = json.loads(node.jobmon("query", "--json", "victim-unseen").stdout)["summary"][
        "lost_points"]
    assert lost > 0 and st["losses"]["(unseen)"]["caused_loss"]["points"] == lost
    assert "root or CAP_SYS_PTRACE can name them" in "".join(err)


def test_without_the_capabilities_the_loss_is_still_the_fillers(node):
    """A shipper without CAP_FOWNER cannot remove another user's directory: it says so,
    charges the attacker for all the directory holds, and the victim's samples that the
    full disk kept out are counted against the attacker, never the victim."""
    with small_spool(node, 16 << 20):
        with following(node) as err:
            job = victim_sampling(node, "victim-nocap", 8)
            fill_through_a_directory(node, "1.lp/fill")
            assert job.wait(60) == 0
            time.sleep(0.5)
        st = status(node)
    assert VICTIM not in st["losses"] and st["users"][ATTACKER] > 15 << 20
    assert "needs root or CAP_FOWNER" in "".join(err)
    lost = json.loads(node.jobmon("query", "--json", "victim-nocap").stdout)["summary"][
        "lost_points"]
    assert lost > 0 and st["losses"][ATTACKER]["caused_loss"]["points"] == lost
