"""The read service's read log, end to end: jobs of two users in a real InfluxDB 1.6.7
through the real shipper; `jobmon serve` as an unprivileged service user keeping its read
log; callers as jobmon-test (the owner), jobmon-test2 (another user) and an admin over the
Unix socket. Who read a job shows to its owner (`jobmon query JOB --readers`), the admins'
reads included, and to nobody else; the retention and the size cap drop entries; a log
the service cannot write never fails a read."""
import json
import os
import sqlite3
import stat
import time

import pytest

from helpers import as_user, have_user, needs_test_user, root, shared_tmpdir
from serve_site import ADMIN, Conversation, Munged, Service, wait_for

pytestmark = [root, needs_test_user,
              pytest.mark.skipif(not have_user(ADMIN), reason=f"needs user {ADMIN} "
                                 "(tests/setup.sh)")]

A, B = "jobmon-test", "jobmon-test2"
MINE, THEIRS, PHYS = "read-1", "read-2", "read-3"


@pytest.fixture(scope="module")
def site(influx_server, tmp_path_factory):
    from influx_site import Site
    site = Site(influx_server, tmp_path_factory.mktemp("readlog"), "readlog")
    site.prepare()
    site.run_small_job(MINE, A, 8)
    site.run_small_job(THEIRS, B, 8)
    site.run_small_job(PHYS, B, 8, ("account=phys",))
    site.ship()
    munged = Munged()
    yield site, munged
    munged.close()
    site.close()


@pytest.fixture
def service(site):
    started = []

    def start(service_keys="", coordinators=""):
        s = Service(*site, coordinators=coordinators, service_keys=service_keys).start()
        started.append(s)
        return s
    yield start
    for s in started:
        s.close()


def readers(served, job, user, check=True):
    r = served.jobmon("query", job, "--readers", "--json", user=user, check=check)
    return json.loads(r.stdout) if r.returncode == 0 else r


def reads_shown(served, job, user, want, timeout=10):
    """The reads `--readers` shows once `want(reads)` holds (the log is written after
    the answer, by its own thread)."""
    seen = []

    def ok():
        seen[:] = [readers(served, job, user)["reads"]]
        return want(seen[0])
    wait_for(f"reads of {job} as {user} wanted (last: {seen})", ok, timeout)
    return seen[0]


def query(served, job, user, check=True):
    return served.jobmon("query", job, "--json", "--no-scheduler", user=user, check=check)


def test_an_owner_sees_who_read_their_job_admins_included(service):
    served = service()
    query(served, MINE, A)
    query(served, MINE, ADMIN)
    r = query(served, MINE, B, check=False)                       # not theirs: refused
    assert r.returncode == 1 and r.stdout == ""
    served.jobmon("list", user=ADMIN)
    page = os.path.join(shared_tmpdir(), "read-1.html")
    served.jobmon("report", MINE, "--html", page, "--no-scheduler", user=ADMIN,
                  config=served.client_config(served.address))       # over TCP, MUNGE

    def has_all(reads):
        got = {(x["reader"], x["how"], x["allowed"], x["via"]) for x in reads}
        return {(A, "query", True, "peer"), (ADMIN, "query", True, "peer"),
                (B, "query", False, "peer"), (ADMIN, "list", True, "peer"),
                (ADMIN, "report", True, "munge")} <= got
    reads = reads_shown(served, MINE, A, has_all)
    assert all(x["job"] == MINE for x in reads)
    assert all(x["owner"] in (A, None) for x in reads)
    assert {x["reader"] for x in reads} == {A, ADMIN, B}, "nothing of other jobs' reads"
    assert reads == sorted(reads, key=lambda x: -x["time"]), "newest first"
    assert all(abs(x["time"] - time.time()) < 120 for x in reads)
    # the text form, as the owner reads it
    text = served.jobmon("query", MINE, "--readers", user=A).stdout
    assert text.startswith(f"Reads of job {MINE} through the read service (kept 90 days), "
                           "newest first: ")
    assert any(ADMIN in line and "query" in line and "read" in line
               for line in text.splitlines())
    assert any(B in line and "refused" in line for line in text.splitlines())
    # the admin reads any job's log; the owner of the other job reads their own
    assert has_all(readers(served, MINE, ADMIN)["reads"])
    assert {x["reader"] for x in readers(served, THEIRS, B)["reads"]} <= {B, ADMIN}


def test_the_log_is_private_to_the_owner_and_the_admins(service):
    served = service()
    query(served, MINE, A)
    reads_shown(served, MINE, A, lambda reads: any(x["how"] == "query" for x in reads))
    r = readers(served, MINE, B, check=False)                     # another user: refused
    assert r.returncode == 1 and r.stdout == "" and "no job 'read-1' of yours" in r.stderr
    assert A not in r.stderr
    r = readers(served, THEIRS, A, check=False)
    assert r.returncode == 1 and r.stdout == ""
    r = served.jobmon("query", MINE, "--readers", "--user", A, user=B, check=False)
    assert r.returncode == 1 and r.stdout == ""
    # the file itself: the service user's, 0600, in a 0700 directory; no user opens it
    path = os.path.join(served.dir, "state", "reads.db")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    import subprocess
    r = subprocess.run(as_user(["cat", path], A), capture_output=True)
    assert r.returncode != 0 and r.stdout == b""
    # B's refused attempt is in the log, shown to the owner
    reads_shown(served, MINE, A, lambda reads: any(
        x["reader"] == B and not x["allowed"] for x in reads))


def test_a_coordinators_reads_show_and_their_scan_notes_nothing_refused(service):
    """A coordinator of account phys lists jobs: the phys job of another user shows them
    to its owner; the jobs outside their accounts that the listing scanned were never
    asked for, and show nobody a refusal."""
    served = service(coordinators=f"phys: {A}\n")
    assert PHYS in served.jobmon("list", user=A).stdout
    reads_shown(served, PHYS, B, lambda reads: (A, "list", True) in {
        (x["reader"], x["how"], x["allowed"]) for x in reads})
    served.jobmon("query", THEIRS, "--readers", user=B)       # B's own read of the log
    assert A not in {x["reader"] for x in readers(served, THEIRS, B)["reads"]}
    r = readers(served, PHYS, A, check=False)     # the coordinator reads the job, not its log
    assert r.returncode == 1 and r.stdout == "" and "of yours" in r.stderr


def test_entries_past_the_retention_are_dropped(service):
    served = service(f'read_log = "{{dir}}/reads.db"\nread_log_days = {3 / 86400!r}\n')
    path = served.read_log_path
    query(served, MINE, A)
    reads_shown(served, MINE, A, lambda reads: any(x["how"] == "query" for x in reads))
    time.sleep(3.5)
    served.jobmon("list", user=A)                    # a later write trims what expired
    reads = reads_shown(served, MINE, A, lambda reads: not any(
        x["how"] == "query" for x in reads))
    assert all(x["how"] in ("list", "readers") for x in reads)

    def gone():
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return not db.execute("SELECT count(*) FROM reads WHERE how = 'query'"
                                  ).fetchone()[0]
    wait_for("the expired entries gone from the file", gone, 10)


def test_the_oldest_entries_go_past_the_size_cap(service):
    cap = 64 << 10
    served = service(f'read_log = "{{dir}}/reads.db"\nread_log_max_bytes = {cap}\n')
    path = served.read_log_path
    conv = Conversation(served.socket)
    try:
        assert "user" in conv.ask({})
        for i in range(700):             # each asks for a job of nobody: a refused read
            text = f"nobody-{i:04d}-" + "x" * 120
            answer = conv.ask({"op": "records", "command": "query", "args": {"ref": {
                "text": text, "exact": [text], "prefixes": [], "global_id": None}}})
            assert answer == {"result": []}
    finally:
        conv.close()

    def trimmed():
        """The last entry written and the file back under the cap (each batch of entries
        is written, then the oldest dropped: for a moment the file may be over it)."""
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            newest = db.execute("SELECT max(job) FROM reads").fetchone()[0] or ""
            pages = db.execute("PRAGMA page_count").fetchone()[0]
            size = db.execute("PRAGMA page_size").fetchone()[0]
        return newest.startswith("nobody-0699-") and pages * size <= cap
    wait_for("the last entry written, the file under the cap", trimmed, 10)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        jobs = [j for (j,) in db.execute("SELECT job FROM reads ORDER BY id")]
    on_disk = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    assert on_disk <= cap + (3 << 19), "the write-ahead file adds up to about 1 MiB"
    assert 100 < len(jobs) < 700, "the oldest dropped, not all"
    kept = [int(j.split("-")[1]) for j in jobs]
    assert kept == list(range(700 - len(jobs), 700)), "the newest kept, in order"


def test_an_unwritable_log_never_fails_a_read(service):
    import tempfile
    locked = tempfile.mkdtemp(prefix="jobmon-readlog-")   # root's: the service user
    os.chmod(locked, 0o755)                               # reaches it, may not write it
    served = service(f'read_log = "{locked}/state/reads.db"\n')
    for _ in range(3):
        rep = json.loads(query(served, MINE, A).stdout)
        assert rep["job"]["user"] == A
    assert json.loads(query(served, THEIRS, B).stdout)["job"]["user"] == B
    wait_for("the service saying so", lambda: "is not being kept" in served.logged(), 10)
    assert served.logged().count("is not being kept") == 1, served.logged()
    r = readers(served, MINE, A, check=False)
    assert r.returncode == 1 and "cannot be read" in r.stderr
    assert not os.path.exists(os.path.join(locked, "state"))
    assert "Permission denied" in served.logged()
    os.rmdir(locked)


def test_a_full_disk_never_fails_a_read(service):
    """The log's file system fills up while the service runs (a 256 KiB tmpfs): reads go
    on being answered, the service says once that the log is not being kept; with room
    again, it says so and keeps it again."""
    import pathlib
    import pwd
    import shutil
    import subprocess
    import tempfile
    from influx_site import SERVICE_USER
    top = tempfile.mkdtemp(prefix="jobmon-readlog-")     # the service user reaches it
    os.chmod(top, 0o755)
    mnt = pathlib.Path(top) / "mnt"
    mnt.mkdir()
    pw = pwd.getpwnam(SERVICE_USER)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size=256k,mode=700,uid={pw.pw_uid},"
                        f"gid={pw.pw_gid}", "jobmon-readlog-full", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"cannot mount a small tmpfs here: {r.stderr.strip()}")
    try:
        served = service(f'read_log = "{mnt}/reads.db"\n')
        query(served, MINE, A)
        reads_shown(served, MINE, A, lambda reads: any(x["how"] == "query" for x in reads))
        with open(mnt / "filler", "wb", buffering=0) as f:
            for chunk in (65536, 4096, 512):
                try:
                    while True:
                        f.write(b"\0" * chunk)
                except OSError:
                    pass
        conv = Conversation(served.socket)
        try:
            assert "user" in conv.ask({})
            for i in range(3000):         # refused reads of long ids until the log is full
                text = f"nobody-{i:04d}-" + "x" * 200
                answer = conv.ask({"op": "records", "args": {"ref": {
                    "text": text, "exact": [text], "prefixes": [], "global_id": None}}})
                assert answer == {"result": []}
                if i % 100 == 99 and "is not being kept" in served.logged():
                    break
        finally:
            conv.close()
        wait_for("the service saying so", lambda: "is not being kept" in served.logged(), 10)
        for _ in range(2):
            assert json.loads(query(served, MINE, A).stdout)["job"]["user"] == A
        assert served.logged().count("is not being kept") == 1, served.logged()[-3000:]
        assert "full" in served.logged()
        os.unlink(mnt / "filler")          # room again: kept again, at a read 10 s on

        def kept_again():
            query(served, THEIRS, B)
            return "is kept again" in served.logged()
        wait_for("the log kept again", kept_again, 30)
        since = time.time()
        query(served, MINE, ADMIN)
        reads_shown(served, MINE, A, lambda reads: any(
            x["reader"] == ADMIN and x["time"] >= since for x in reads))
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        shutil.rmtree(top, ignore_errors=True)
