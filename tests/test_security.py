"""A job user is hostile: everything a job user can do to the shared spool, done here as
the unprivileged test users, through the real shipper running as an unprivileged service
user, against the real InfluxDB. What a job user can and cannot do: docs/security.md.

Each test plays one attack; its docstring says what must hold.
"""
import json
import os
import pwd
import signal
import socket
import subprocess
import time

import pytest

from helpers import JOBMON, PYTHON, as_user, needs_test_user, shared_tmpdir
from influx_site import SERVICE_USER
from servers import HoldingProxy

pytestmark = [pytest.mark.root, needs_test_user]

ATTACKER, VICTIM = "jobmon-test", "jobmon-test2"
DEAD = "http://127.0.0.1:9"   # nothing listens there: the database is down
T0 = time.time_ns() - 10**12  # a recent time (the shipper refuses lines timed long ago)

# the attacker's tools: create a spool file of their own (they know its name, they
# cannot list the spool), rewrite it in place, make odd entries
PLANT = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
os.write(fd, sys.stdin.buffer.read())
os.close(fd)
"""
REWRITE = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
data = sys.stdin.buffer.read()
os.write(fd, data)
os.ftruncate(fd, len(data))
os.close(fd)
"""


def plant(site, data, name=None, user=ATTACKER):
    name = name or f"{time.time_ns()}.999.1.{os.urandom(4).hex()}.lp"
    path = os.path.join(site.spool, name)
    subprocess.run(as_user([PYTHON, "-c", PLANT, path], user), input=data, check=True)
    return path


def attacker(*argv, user=ATTACKER):
    subprocess.run(as_user(list(argv), user), check=True, capture_output=True)


def spool_entries(site):
    return sorted(n for n in os.listdir(site.spool) if n.endswith(".lp"))


def listed(site):
    """`jobmon list` as rows of (job, host, user, status), read by its header's columns:
    the job, user and host first (none holds a space), the status from where its header
    starts to the line's end."""
    out = subprocess.run([JOBMON, "list"], env=dict(site.env, COLUMNS="250"),
                         capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    [top] = [n for n, line in enumerate(lines) if line.startswith("JOB ")]
    status_at = lines[top].index(" STATUS") + 1
    rows = []
    for line in lines[top + 1:]:
        job, user, host = line[:status_at].split()[:3]
        rows.append((job, host, user, line[status_at:].strip()))
    assert rows, out                  # the jobs this module ran are there to read
    return rows


def status(site):
    return json.loads(site.ship("--status", "--json").stdout)


def victim_job(site, job_id, user=VICTIM):
    site.jobmon("run", "--interval=0.05", f"--job-id={job_id}", "--", "sleep", "0.3", user=user)


def job_row(site, job_id):
    [row] = site.rows('SELECT "exit_code"::field, "ended"::field, "host"::tag, "scheduler"::tag, '
                      f'"user"::tag FROM jobmon_job WHERE "job"::tag = \'{job_id}\'')
    return row


def sample_count(site, where=""):
    rows = site.rows(f'SELECT count("elapsed_seconds") FROM jobmon_sample {where}')
    return rows[0]["count"] if rows else 0


def valid_line(job="m", t=None, fields=b"procs=1i"):
    return b"jobmon_sample,job=%s %s %d\n" % (job.encode(), fields, t or time.time_ns())


@pytest.fixture
def node(site):
    """The site with its shipper running as an unprivileged service user."""
    site.use_service_user()
    site.prepare()
    return site


def test_a_refused_batch_is_resent_from_the_bytes_checked_never_read_again(node):
    """1. The attacker's file passes the check but the server refuses it; while the
    shipper waits for that answer the attacker rewrites the file with forged lines (the
    victim's summary, a sample in the victim's series, a point with no tags). Nothing of
    it is sent: the shipper re-sends the bytes it checked, and quarantines the file."""
    victim_job(node, "victim-1")
    node.ship()
    row = job_row(node, "victim-1")
    samples = sample_count(node)
    path = plant(node, valid_line("m" * 70000))   # a series key beyond 64 KiB: refused
    tags = b"job=victim-1,host=%s,scheduler=local,user=%s" % (row["host"].encode(), VICTIM.encode())
    forged = (b" jobmon_job,%s exit_code=99i,ended=1i %d\n" % (tags, row["time"])
              + b" jobmon_sample,%s procs=666i %d\n" % (tags, row["time"] + 10**8)
              + b" jobmon_sample cpu_user_seconds=1 %d\n" % time.time_ns())
    proxy = HoldingProxy(node.influx.url)
    try:
        proxy.hold(b"m" * 1000)
        node.write_config(url=proxy.url)
        shipper = subprocess.Popen(node.as_service([JOBMON, "ship"]), env=node.env,
                                   stderr=subprocess.PIPE, text=True)
        assert proxy.held.wait(60), "the attacker's batch never reached the server"
        subprocess.run(as_user([PYTHON, "-c", REWRITE, path], ATTACKER), input=forged,
                       check=True)
        proxy.release.set()
        err = shipper.communicate(timeout=120)[1]
    finally:
        proxy.close()
    assert job_row(node, "victim-1")["exit_code"] == 0
    assert sample_count(node) == samples                 # nothing added, anywhere
    assert not node.rows('SELECT * FROM jobmon_sample WHERE "procs" = 666')
    assert shipper.returncode == 0, err
    assert f"quarantined spool file {path}" in err
    assert status(node)["losses"][ATTACKER]["quarantined"]["files"] == 1


def test_a_field_named_like_a_tag_is_refused_and_never_read_as_one(node):
    """2. A spool line with fields `user` and `host` is quarantined. And data like it that
    reached a database before (written straight in here) is never read as the tags:
    `query --user victim` shows the victim's run, `list` shows every user and host."""
    victim_job(node, "victim-2")
    node.ship()
    row = job_row(node, "victim-2")
    path = plant(node, b'jobmon_job,job=victim-2,scheduler=local host="x",user="%s",'
                       b'exit_code=99i,ended=1i %d\n' % (VICTIM.encode(), row["time"]))
    r = node.ship()
    assert f"quarantined spool file {path}" in r.stderr
    assert job_row(node, "victim-2")["exit_code"] == 0
    legacy = (f'jobmon_job,job=victim-2,scheduler=local,user={ATTACKER},host=h2 '
              f'user="{VICTIM}",host="evil",exit_code=99i,ended=1i,start_time=1 '
              f'{row["time"] + 1000}\n')
    import urllib.request
    req = urllib.request.Request(f"{node.influx.url}/write?db={node.db}&precision=ns",
                                 data=legacy.encode())
    urllib.request.urlopen(req, timeout=10).close()
    rep = json.loads(node.jobmon("query", "--json", "--user", VICTIM, "victim-2").stdout)
    assert rep["job"]["user"] == VICTIM and rep["job"]["status"] == "exit code 0"
    assert rep["job"]["host"] == socket.gethostname() and rep["samples"]
    rows = [r for r in listed(node) if r[0] == "victim-2"]
    assert {(r[1], r[2]) for r in rows} == {(socket.gethostname(), VICTIM), ("h2", ATTACKER)}


def test_a_directory_named_like_a_spool_file_is_set_aside_once(node):
    """3. Directories named *.lp (one the non-root shipper cannot move, nor empty) while
    the spool is over its limit: the shipper neither crashes nor loops, sets them aside
    once, counts them against their owner, and ships the victim's job."""
    node.write_config(max_bytes=64 << 10)
    victim_job(node, "victim-3")
    full = os.path.join(node.spool, "1000000000000000000.999.1.dir.lp")
    attacker("sh", "-c", f"mkdir {full} && touch {full}/x && chmod 700 {full} && "
             f"mkdir {node.spool}/2000000000000000000.999.1.empty.lp")
    plant(node, b"".join(valid_line(t=T0 + k) for k in range(3000)))   # over the limit
    runs = [node.ship() for _ in range(2)]
    assert "set aside 2 spool entries of user jobmon-test: directory" in runs[0].stderr
    assert "set aside" not in runs[1].stderr and "Traceback" not in runs[1].stderr
    assert spool_entries(node) == []
    assert job_row(node, "victim-3")["exit_code"] == 0
    losses = status(node)["losses"]
    assert losses[ATTACKER]["rejected_entry"]["files"] == 2
    assert VICTIM not in losses


def test_status_follows_no_link_opens_no_fifo_and_reads_no_hole(node):
    """4. A link to /dev/zero, a FIFO and a 64 GiB sparse file in the spool: `ship
    --status` answers at once, within 1 GiB of address space, counting what is real."""
    attacker("ln", "-s", "/dev/zero", os.path.join(node.spool, "zero.lp"))
    attacker("mkfifo", os.path.join(node.spool, "fifo.lp"))
    sparse = plant(node, b"")
    attacker("truncate", "-s", "64G", sparse)
    real = plant(node, valid_line() * 10)
    r = subprocess.run(["prlimit", f"--as={1 << 30}"] + node.as_service(
        [JOBMON, "ship", "--status", "--json"]), env=node.env, capture_output=True, text=True,
        timeout=60)
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st["pending_points"] == 10 and st["spool_files"] == 2
    assert st["users"][ATTACKER] < 1 << 20 and os.path.exists(real)


def test_a_sparse_file_with_an_old_name_evicts_nobody_else(node):
    """5. A 20 GiB sparse file named as if it held the oldest data, and the spool over
    its limit with the database down: the limit counts what files really hold and drops
    from the user over their share (the attacker, whose sparse file goes without its
    holes being read), never the victims'; then everything of the victims ships. Another
    sparse file, within the limit, is quarantined without reading its holes either."""
    node.write_config(url=DEAD, max_bytes=200_000)
    for n in range(3):
        victim_job(node, f"victim-5-{n}")
    victims = set(spool_entries(node))
    assert len(victims) == 3
    sparse = plant(node, b"", name="1000000000000000000.999.1.sparse.lp")
    attacker("truncate", "-s", "20G", sparse)
    plant(node, b"".join(valid_line(t=T0 + k) for k in range(5000)))  # ~250 kB, real
    node.ship("--timeout=0.5", check=False, timeout=60)
    st = status(node)
    assert VICTIM not in st["losses"] and st["losses"][ATTACKER]["over_share"]["files"] >= 2
    assert victims <= set(spool_entries(node)) and not os.path.exists(sparse)
    sparse = plant(node, b"")
    attacker("truncate", "-s", "20G", sparse)
    node.write_config(max_bytes=200_000)
    r = node.ship(timeout=60)
    assert f"quarantined spool file {sparse}" in r.stderr
    for n in range(3):
        assert job_row(node, f"victim-5-{n}")["exit_code"] == 0
    assert VICTIM not in status(node)["losses"]


def test_unreadable_files_and_links_are_set_aside_once_and_bounded(node):
    """6. Hundreds of unreadable files, links and FIFOs: moved out of the spool in one
    pass, reported in one line, counted against their owner; the quarantine they fill
    counts against the owner's share too, so the limit prunes it."""
    script = ("import os, sys\nd = sys.argv[1]\nfor n in range(300):\n"
              "    p = os.path.join(d, f'{n}.u.lp'); open(p, 'w').write('x'); os.chmod(p, 0)\n"
              "    os.symlink('/etc/passwd', os.path.join(d, f'{n}.s.lp'))\n"
              "    os.mkfifo(os.path.join(d, f'{n}.f.lp'))\n")
    attacker(PYTHON, "-c", script, node.spool)
    victim_job(node, "victim-6")
    first = node.ship()
    assert len([x for x in first.stderr.splitlines() if "set aside" in x]) <= 3
    assert spool_entries(node) == []
    again = node.ship()
    assert "set aside" not in again.stderr and "cannot" not in again.stderr
    losses = status(node)["losses"][ATTACKER]
    assert losses["rejected_entry"]["files"] == 600 and losses["quarantined"]["files"] == 300
    # 900 entries of at least a block each: over a 1 MiB spool's limit, the owner's go
    node.write_config(max_bytes=1 << 20)
    node.ship()
    st = status(node)
    assert st["spool_bytes"] <= 1 << 20 and st["quarantine_entries"] < 900
    assert job_row(node, "victim-6")["exit_code"] == 0


def test_files_under_other_names_count_against_their_owner(node):
    """6. Files a user leaves in the spool under names the shipper never sends (as much
    as they like, the spool is writable) count against their share like any other: over
    the limit they go first, and the victim's job stays."""
    node.write_config(url=DEAD, max_bytes=1 << 20)
    victim_job(node, "victim-stray")
    victims = spool_entries(node)
    for n in range(40):
        plant(node, b"x" * (64 << 10), name=f"junk{n}")
    node.ship("--timeout=0.3", check=False)
    st = status(node)
    assert st["spool_bytes"] <= 1 << 20 and spool_entries(node) == victims
    assert VICTIM not in st["losses"] and st["losses"][ATTACKER]["over_share"]["files"] >= 20


HOLD = r"""
import fcntl, os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
fds = []
for k in range(n):   # as if n samplers ran: files open and locked, under the oldest names
    fd = os.open(os.path.join(d, f"{10**18 + k}.999.1.held.lp"), os.O_WRONLY | os.O_CREAT, 0o640)
    os.write(fd, b"jobmon_sample,job=held procs=1i %d\n" % (time.time_ns() + k))
    fcntl.flock(fd, fcntl.LOCK_EX)
    fds.append(fd)
print("ready", flush=True)
sys.stdin.read()
"""


def test_many_files_held_open_by_one_user_keep_nobody_else_waiting(node):
    """6. One user keeps 600 spool files open and locked, under the oldest names, and the
    shipper may hold only ~200 files open at once: each pass takes every user's files in
    turn, so the victim's job still ships."""
    holder = subprocess.Popen(as_user([PYTHON, "-c", HOLD, node.spool, "600"], ATTACKER),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"ready\n"
        victim_job(node, "victim-fair")
        r = subprocess.run(["prlimit", "--nofile=256:256"] + node.as_service(
            [JOBMON, "ship", "--timeout=30"]), env=node.env, capture_output=True, text=True,
            timeout=120)
        assert r.returncode == 0, r.stderr
        assert job_row(node, "victim-fair")["exit_code"] == 0
    finally:
        holder.stdin.close()
        holder.wait(30)


def test_full_spool_disk_loses_nothing_uncounted_and_keeps_every_summary(node, tmp_path):
    """7. The attacker fills the spool's filesystem while 7 of the victim's jobs run. Each
    job's end-of-job record still arrives (from the room kept for it, with as many of the
    samples still waiting as fit), each says how many of its samples the spool could not
    take, and shipped + lost = taken, exactly; the shipper counts that loss against the
    attacker, whose data over their share filled the disk -- never against the victim --
    and drops the attacker's filler."""
    pw = pwd.getpwnam(SERVICE_USER)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size=1m,mode=3733,uid={pw.pw_uid},"
                    f"gid={pw.pw_gid}", "jobmon-test-spool", node.spool], check=True)
    go, jobs = os.path.join(shared_tmpdir(), "go"), []
    try:
        node.prepare()
        node.write_config(url=DEAD)
        wait = f"while [ ! -e {go} ]; do sleep 0.05; done"
        jobs = [subprocess.Popen(as_user([JOBMON, "run", "--interval=0.05", f"--job-id=full-{n}",
                                          "--", "sh", "-c", wait], VICTIM),
                                 env=dict(node.env, JOBMON_PROCS_TOP="0"),   # samples only
                                 stderr=subprocess.PIPE, text=True) for n in range(7)]
        deadline = time.monotonic() + 60
        while len(spool_entries(node)) < 14:   # every job has its file and its reserve
            assert time.monotonic() < deadline and all(j.poll() is None for j in jobs)
            time.sleep(0.05)
        time.sleep(0.2)
        fill = os.path.join(node.spool, "filler.lp")
        subprocess.run(as_user(["dd", "if=/dev/zero", f"of={fill}", "bs=64k"], ATTACKER),
                       capture_output=True)
        time.sleep(10)        # the jobs sample on, into a full disk: more than their
                              # reserves can take at the end
        open(go, "w").close()
        errs = [(j.wait(60), j.stderr.read()) for j in jobs]
        assert all(rc == 0 for rc, _ in errs), errs
        node.write_config(max_bytes=900 << 10, max_bytes_per_user=200 << 10)
        node.ship()
    finally:
        open(go, "w").close()     # no job is left waiting, whatever failed
        for j in jobs:
            j.wait(60)
        subprocess.run(["umount", "-l", node.spool])
    lost_total = 0
    for n in range(7):
        rep = json.loads(node.jobmon("query", "--json", f"full-{n}").stdout)
        s = rep["summary"]
        assert s["exit_code"] == 0
        assert len(rep["samples"]) + s["lost_points"] == s["samples"]
        assert s["lost_points"] > 0, errs[n]
        lost_total += s["lost_points"]
    st = status(node)
    assert st["losses"][ATTACKER]["caused_loss"]["points"] == lost_total
    assert st["sampler_lost_points"] == lost_total
    assert "over_share" in st["losses"][ATTACKER] and VICTIM not in st["losses"]


def test_a_job_whose_sampler_was_killed_does_not_look_as_if_it_still_ran(node):
    """7. A job whose sampler died before its end-of-job record: once its file is
    finished the shipper marks it ended; `query` says it was cut short (its figures its
    samples') and `list` that it has no summary."""
    job = subprocess.Popen(as_user([JOBMON, "run", "--interval=0.05", "--job-id=killed",
                                    "--", "sleep", "30"], VICTIM), env=node.env)
    deadline = time.monotonic() + 60
    while not any(os.path.getsize(os.path.join(node.spool, n)) > 2000   # a few samples in
                  for n in spool_entries(node) if not n.endswith(".end.lp")):
        assert time.monotonic() < deadline and job.poll() is None
        time.sleep(0.05)
    job.kill()
    job.wait()
    subprocess.run(["pkill", "-KILL", "-u", VICTIM, "-x", "sleep"])
    node.ship()
    rep = json.loads(node.jobmon("query", "--json", "killed").stdout)
    assert rep["job"]["status"] == "no exit status; cut short: figures up to its last " \
                                   "sample, at most 0.05 s missing" and rep["samples"]
    assert rep["summary"]["cut_short"] == 1 and rep["summary"]["samples"] == len(rep["samples"])
    assert [r[3] for r in listed(node) if r[0] == "killed"] == ["no summary"]
    st = status(node)
    assert st["jobs_without_summary"] == 1 and st["losses"][VICTIM]["no_summary"]["files"] == 1
    assert spool_entries(node) == []


@pytest.mark.parametrize("store", ["influxdb", "local"])
def test_ids_and_tags_that_are_not_utf8_lose_nothing(node, store):
    """8. A job id and a tag value with bytes that are not UTF-8: the job is recorded
    (those bytes become U+FFFD) and `jobmon query` with the same bytes finds it."""
    args = [b"--job-id=bad\xff\xfeid", b"--tag=partition=p\xff"]
    if store == "local":
        args.append(b"--store=" + os.path.join(shared_tmpdir(), "jobs.db").encode())
    r = subprocess.run(as_user([JOBMON.encode(), b"run", b"--interval=0.05", *args, b"--",
                                b"true"], VICTIM), env=node.env, capture_output=True)
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    if store == "influxdb":
        node.ship()
    query = [JOBMON.encode(), b"query", b"--json", b"bad\xff\xfeid"] + args[2:]
    r = subprocess.run(query, env=node.env, capture_output=True)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["job"]["job"] == "bad\ufffd\ufffdid" and rep["job"]["tags"]["partition"] == "p\ufffd"
    assert b"Traceback" not in r.stderr


def test_a_tag_beyond_the_series_key_limit_is_bounded_by_the_writer(node):
    """9. A 70 kB job id and tag value: the writer bounds them, so the job's file ships
    (nothing quarantined) and `jobmon query` with the same id finds the job."""
    long_id = "j" * 70000
    node.jobmon("run", "--interval=0.05", f"--job-id={long_id}", f"--tag=partition={'p' * 70000}",
                "--", "sleep", "0.2", user=VICTIM)
    r = node.ship()
    assert "quarantined" not in r.stderr
    rep = json.loads(node.jobmon("query", "--json", long_id).stdout)
    assert rep["job"]["status"] == "exit code 0" and rep["samples"]
    assert status(node)["quarantined_files"] == 0


def test_the_backoff_survives_attempt_1024_and_beyond(node):
    """10. With tiny retry settings and the database down, the follow-mode shipper goes
    past 1024 attempts without dying, and stops cleanly when told."""
    node.write_config(url=DEAD, retry_initial_seconds=1e-6, retry_max_seconds=1e-6,
                      poll_seconds=1e-3)
    plant(node, valid_line())
    shipper = subprocess.Popen(node.as_service([JOBMON, "ship", "--follow"]), env=node.env,
                               stderr=subprocess.PIPE, text=True)
    retries = 0
    deadline = time.monotonic() + 120
    while retries < 1100:
        line = shipper.stderr.readline()
        assert line and time.monotonic() < deadline, f"stopped after {retries} retries"
        retries += "retrying in" in line
    shipper.send_signal(signal.SIGTERM)
    rest = shipper.communicate(timeout=30)[1]
    assert shipper.returncode == 0 and "Traceback" not in rest


def test_ids_with_control_characters_and_backslashes_are_found(node):
    """13. Ids as the writer stores them (control characters and unsafe backslashes are
    replaced) are found by `jobmon query` given the same id; a bad --limit is an error
    message, not an InfluxQL error or a traceback."""
    ids = ["tab\there", "back\\slash\\", "cr\rid", "quote'id"]
    for job_id in ids:
        node.jobmon("run", "--interval=0.05", f"--job-id={job_id}", "--", "true", user=VICTIM)
    node.ship()
    for job_id in ids:
        r = node.jobmon("query", "--json", job_id, check=False)
        assert r.returncode == 0, (job_id, r.stderr)
        assert json.loads(r.stdout)["job"]["status"] == "exit code 0"
    for bad in ("-1", "0"):
        r = node.jobmon("list", "-n", bad, check=False)
        assert r.returncode == 2 and "Traceback" not in r.stderr and "InfluxQL" not in r.stderr


@pytest.mark.parametrize("content", [b"", b"{not json", b'{"files": [], "counters": 1}'])
def test_a_corrupt_state_file_is_set_aside_not_a_crash_loop(node, content):
    """14. An empty, corrupt or wrongly shaped state file: the shipper keeps a copy, starts
    afresh and ships; --status works."""
    victim_job(node, "victim-14")
    state = os.path.join(node.state, "ship-state.json")
    with open(state, "wb") as f:
        f.write(content)
    os.chown(state, *[getattr(os.stat(node.state), k) for k in ("st_uid", "st_gid")])
    r = node.ship()
    assert "unreadable" in r.stderr and "Traceback" not in r.stderr
    assert os.path.exists(state + ".corrupt")
    assert job_row(node, "victim-14")["exit_code"] == 0
    assert status(node)["shipped_points"] > 0


def test_tag_keys_beyond_the_schema_never_become_tags(node):
    """15. A file with 2,000 points under 7 made-up tag keys: quarantined; the database
    gets no new tag key and no new series."""
    victim_job(node, "victim-15")
    node.ship()
    keys = {r["tagKey"] for r in node.rows("SHOW TAG KEYS FROM jobmon_sample, jobmon_job")}
    series = len(node.rows("SHOW SERIES FROM jobmon_sample, jobmon_job"))
    t = time.time_ns()
    path = plant(node, b"".join(
        b"jobmon_sample,job=m,%s procs=1i %d\n" % (b",".join(b"k%d=%d" % (k, n) for k in range(7)),
                                                   t + n) for n in range(2000)))
    r = node.ship()
    assert f"quarantined spool file {path}" in r.stderr
    assert {r["tagKey"] for r in node.rows("SHOW TAG KEYS FROM jobmon_sample, jobmon_job")} == keys
    assert len(node.rows("SHOW SERIES FROM jobmon_sample, jobmon_job")) == series


def test_a_field_of_another_type_is_refused_before_it_can_fix_the_shard(node):
    """The first type written for a field in a shard is the only one the server takes
    there after: a user who writes `cpu_user_seconds` as a string first would make every
    other user's samples refused. The shipper refuses any field of another type, any
    field jobmon does not write, and a timestamp beyond int64."""
    t = time.time_ns()
    for bad in (b'cpu_user_seconds="x"', b"cpu_user_seconds=1i", b"procs=1.5",
                b"procs=1i,procs=2i", b"time=1i", b"made_up=1"):
        plant(node, valid_line(t=t, fields=bad))
    plant(node, b"jobmon_sample,job=m procs=1i 9999999999999999999\n")
    victim_job(node, "victim-types")
    r = node.ship()
    assert r.stderr.count("quarantined spool file") == 7
    assert job_row(node, "victim-types")["exit_code"] == 0
    assert status(node)["losses"][ATTACKER]["quarantined"]["files"] == 7


def test_one_user_over_their_share_loses_only_their_own_data(node):
    """The quota: the attacker holds far more than their share with old-looking names,
    the victim a little, the database is down and the spool over its limit. Only the
    attacker's files go, oldest first, counted against the attacker."""
    node.write_config(url=DEAD, max_bytes=300_000, max_bytes_per_user=100_000)
    for n in range(3):
        victim_job(node, f"victim-q{n}")
    victims = spool_entries(node)
    hog = [plant(node, b"".join(valid_line(t=T0 + 1000 * n + k) for k in range(1500)),
                 name=f"{10**18 + n}.999.1.hog.lp") for n in range(8)]
    node.ship("--timeout=0.3", check=False)
    left = spool_entries(node)
    assert set(victims) <= set(left)
    gone = [h for h in hog if os.path.basename(h) not in left]
    assert gone and gone == hog[:len(gone)]          # the attacker's oldest first
    st = status(node)
    assert st["spool_bytes"] <= 300_000 and VICTIM not in st["losses"]
    assert st["losses"][ATTACKER]["over_share"]["files"] == len(gone)
    assert st["dropped_files"] == len(gone)


def test_with_nobody_over_their_share_the_largest_holder_loses_first(node):
    """Everybody within their share but the spool over its limit: the largest holder
    loses their oldest data; the others keep theirs."""
    node.write_config(url=DEAD, max_bytes=200_000, max_bytes_per_user=150_000)
    big = [plant(node, b"".join(valid_line(t=T0 + k) for k in range(1000)),
                 name=f"{10**18 + n}.999.1.big.lp") for n in range(3)]      # 3 x 49 kB
    small = [plant(node, b"".join(valid_line(t=T0 + k) for k in range(900)),
                   user=VICTIM) for _ in range(2)]                            # 2 x 44 kB
    site_files = set(spool_entries(node))
    node.ship("--timeout=0.3", check=False)
    left = set(spool_entries(node))
    assert {os.path.basename(p) for p in small} <= left
    assert os.path.basename(big[0]) not in left and site_files - left
    st = status(node)
    assert "spool_full" in st["losses"][ATTACKER] and VICTIM not in st["losses"]


def test_the_shippers_health_reaches_the_database(node):
    """Losses by user and reason, the last success, quarantined entries: in --status and
    in the jobmon_shipper points, so a dashboard can show them and a silent node."""
    plant(node, b"not line protocol\n")
    victim_job(node, "victim-health")
    node.ship()
    st = status(node)
    assert st["last_success"] and st["quarantine_entries"] == 1
    assert st["losses"][ATTACKER]["quarantined"]["files"] == 1
    text = node.ship("--status").stdout
    assert f"lost by {ATTACKER}" in text and "quarantined: 1 point(s)" in text
    rows = node.rows('SELECT "lost_files"::field, "user"::tag, "reason"::tag FROM jobmon_shipper '
                     'WHERE "reason"::tag != \'\'')
    assert {(r["user"], r["reason"], r["lost_files"]) for r in rows} == \
        {(ATTACKER, "quarantined", 1)}
    [main] = node.rows('SELECT "last_success"::field, "quarantined_files"::field FROM '
                       'jobmon_shipper WHERE "reason"::tag = \'\' ORDER BY time DESC LIMIT 1')
    assert main["last_success"] > time.time() - 600 and main["quarantined_files"] == 1
    assert SERVICE_USER != "root"


def test_only_a_trusted_samplers_files_may_name_their_user(node):
    """A sampler run by root for another user's job (the Slurm Prolog's) writes that
    user's `user` tag, and it is kept; the same line in a job user's file ships under
    the file's owner, as always. The node's own tags are the shipper's for both."""
    t = time.time_ns()
    line = b"jobmon_sample,job=trusted,user=%s,host=elsewhere procs=1i %d\n" % (VICTIM.encode(), t)
    with open(os.path.join(node.spool, f"{t}.0.1.root.lp"), "wb") as f:   # root's own
        f.write(line)
    plant(node, line.replace(b"job=trusted", b"job=forged"))
    from test_influx_ship import spool_job   # jobmon's own writer, run by root for VICTIM
    spool_job(node.spool, "root-sampled", 3, user=VICTIM)
    node.ship()
    rows = node.rows('SELECT "procs"::field, "job"::tag, "user"::tag, "host"::tag '
                     'FROM jobmon_sample')
    host = socket.gethostname()
    assert {(r["job"], r["user"], r["host"]) for r in rows} == {
        ("trusted", VICTIM, host), ("forged", ATTACKER, host), ("root-sampled", VICTIM, host)}
    rep = json.loads(node.jobmon("query", "--json", "--user", VICTIM, "root-sampled").stdout)
    assert rep["job"]["status"] == "exit code 0" and len(rep["samples"]) == 3
