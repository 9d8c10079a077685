"""The read service under a hostile user: idle connections by the thousand over the Unix
socket and over TCP (never sending a MUNGE credential), a service out of descriptors, one
user's connections beyond their share, deeply nested and over-long requests, and a job id
longer than 4 KiB. Real `jobmon serve` as its service user with systemd's default limits
(1024 descriptors unless the unit says LimitNOFILE), real InfluxDB 1.6.7, a real munged;
the attackers are real processes of another user (jobmon-test2)."""
import json
import os
import subprocess
import time

import pytest

from helpers import PYTHON, as_user, have_user, needs_test_user, root
from serve_site import ADMIN, Conversation, Munged, Service

pytestmark = [root, needs_test_user,
              pytest.mark.skipif(not have_user(ADMIN), reason=f"needs user {ADMIN} "
                                 "(tests/setup.sh)")]

A, B = "jobmon-test", "jobmon-test2"
# a service's descriptors where its unit sets none: systemd's 1024 (soft), its hard limit
# 524288, or this machine's where that is less
LONG = "L" * 5000                    # a job id over 4 KiB (stored shortened, as every tag)
SYSTEMD_DEFAULT = f"1024:{min(524288, __import__('resource').getrlimit(7)[1])}"

# N connections to ADDRESS, held; "opened K" once made, then on a line on stdin
# "closed C": how many the service has closed meanwhile. IDENTIFY: say {} and read the
# answer first (the Unix socket's identification).
FLOOD = r"""
import json, socket, sys, time
address, n, identify = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
socks, answers = [], []
for _ in range(n):
    try:
        if address.startswith("/"):
            s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(address)
        else:
            h, p = address.rsplit(":", 1); s = socket.create_connection((h, int(p)), 10)
        if identify:
            f = s.makefile("rwb"); f.readline(); f.write(b"{}\n"); f.flush()
            answers.append(json.loads(f.readline() or b"null"))
        socks.append(s)
    except OSError as e:
        answers.append(str(e))
print(json.dumps({"opened": len(socks), "answers": answers[-3:]}), flush=True)
sys.stdin.readline()
closed = 0
for s in socks:
    s.setblocking(False)
    try:
        while s.recv(65536):           # the service's first line, then its end or nothing
            pass
        closed += 1
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
print(json.dumps({"closed": closed}), flush=True)
"""

# the victim: RemoteStore as the command line uses it, timed from connecting to the answer
ASK = r"""
import json, sys, time
from jobmon.serve.client import RemoteStore
out = []
for _ in range(int(sys.argv[3])):
    t = time.monotonic()
    st = RemoteStore(sys.argv[1], sys.argv[2], timeout=30)
    jobs = st.jobs(50)
    st.close()
    out.append([time.monotonic() - t, sorted(j["job"] for j in jobs)])
print(json.dumps(out))
"""


# connect, send half a line or nothing, close; again, for SECONDS (the door then sees
# connections end while it closes others of the same peer)
CHURN = r"""
import socket, sys, time
path, end, n = sys.argv[1], time.monotonic() + float(sys.argv[2]), 0
while time.monotonic() < end and n < 200000:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        if n % 2:
            s.send(b'{"op"')
    except OSError:
        pass
    s.close()
    n += 1
print(n)
"""


class Flood:
    def __init__(self, address, n, user=B, identify=False):
        argv = ["prlimit", "--nofile=4096:4096", "--"] + as_user(
            [PYTHON, "-c", FLOOD, address, str(n), "1" if identify else "0"], user)
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self.made = json.loads(self.proc.stdout.readline())

    def end(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        closed = json.loads(self.proc.stdout.readline())["closed"]
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return closed


def ask(service, user, address=None, times=3):
    r = subprocess.run(as_user([PYTHON, "-c", ASK, address or service.socket,
                                service.munged.socket, str(times)], user),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr + service.logged()[-2000:]
    return json.loads(r.stdout)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def mine():
    from jobmon.influx.lineprotocol import clean_tag
    return sorted([clean_tag(LONG), "mine-1"])


MINE = mine()


@pytest.fixture(scope="module")
def site(influx_server, tmp_path_factory):
    from influx_site import Site
    site = Site(influx_server, tmp_path_factory.mktemp("flood"), "flood")
    site.prepare()
    site.run_small_job("mine-1", A, 8)
    site.run_small_job(LONG, A, 8)
    site.run_small_job("theirs-1", B, 8)
    site.ship()
    munged = Munged()
    yield site, munged
    munged.close()
    site.close()


@pytest.fixture
def served(site):
    service = Service(*site).start(nofile=SYSTEMD_DEFAULT)
    yield service
    service.close()


def held_under_flood(service, address, n, victim_address=None):
    """Another user's reads while `n` idle connections of B's are held, then while B also
    connects and closes in a loop: their times; the service's CPU over 2 s of the idle
    flood (before its 5-s deadline closes it); how many of the flood were closed."""
    flood = Flood(address, n)
    opened = time.monotonic()
    churn = None
    try:
        assert flood.made["opened"] >= n * 0.9, flood.made
        cpu0 = cpu_seconds(service.proc.pid)
        time.sleep(2)
        cpu = cpu_seconds(service.proc.pid) - cpu0
        times = ask(service, A, victim_address)
        churn = subprocess.Popen(as_user([PYTHON, "-c", CHURN, service.socket, "4"], B),
                                 stdout=subprocess.PIPE, text=True)
        times += ask(service, A, victim_address)
        time.sleep(max(0.0, opened + 7 - time.monotonic()))   # past the 5-s deadline
    finally:
        closed = flood.end()
        if churn:
            assert int(churn.communicate(timeout=60)[0]) > 0
    assert service.proc.poll() is None, service.logged()[-3000:]
    return times, cpu, closed


def test_idle_unix_connections_leave_other_users_served(served):
    times, cpu, closed = held_under_flood(served, served.socket, 1100)
    assert all(jobs == MINE for _t, jobs in times), times
    assert max(t for t, _j in times) < 1.0, times
    assert cpu < 0.2, f"the service used {cpu:.2f} s of CPU in 2 s under the flood"
    assert closed >= 1000, "connections that never identified are closed"
    assert "Traceback" not in served.logged()


def test_tcp_connections_without_a_credential_leave_other_users_served(served):
    times, cpu, closed = held_under_flood(served, served.address, 1200,
                                          victim_address=served.address)
    assert all(jobs == MINE for _t, jobs in times), times
    assert max(t for t, _j in times) < 1.0, times
    assert cpu < 0.2, f"the service used {cpu:.2f} s of CPU in 2 s under the flood"
    assert closed >= 1100


def test_an_unidentified_connection_is_closed_within_seconds(served):
    conv = Conversation(served.address)
    t = time.monotonic()
    assert conv.receive() is None          # closed, not answered
    assert time.monotonic() - t < 8
    conv.close()


def test_out_of_descriptors_the_service_pauses_rather_than_spins(site):
    service = Service(*site).start(nofile="96:96")
    try:
        times, cpu, _closed = held_under_flood(service, service.socket, 400)
        assert max(t for t, _j in times) < 1.0, times
        assert cpu < 0.2, f"the service used {cpu:.2f} s of CPU in 2 s out of descriptors"
    finally:
        service.close()


def test_one_users_connections_beyond_their_share_are_refused(served):
    mine = Flood(served.socket, 12, user=B, identify=True)
    try:
        answers = mine.made["answers"]
        assert mine.made["opened"] == 12 and answers[-1]["kind"] == "busy", answers
        assert "connections of yours are open already" in answers[-1]["error"]
        assert ask(served, A, times=1)[0][1] == MINE
    finally:
        mine.end()
    # B's own come back once theirs are closed (the service sees them end as it reads)
    end = time.monotonic() + 10
    while True:
        r = subprocess.run(as_user([PYTHON, "-c", ASK, served.socket, served.munged.socket,
                                    "1"], B), capture_output=True, text=True, timeout=60)
        if r.returncode == 0 or time.monotonic() > end:
            break
        assert "connections of yours are open already" in r.stderr, r.stderr
        time.sleep(0.2)
    assert json.loads(r.stdout)[0][1] == ["theirs-1"], r.stderr


def test_nested_and_over_long_requests_are_refused_in_one_line(served):
    conv = Conversation(served.socket)
    assert conv.ask({})["user"] == "root"
    answer = conv.ask(b"[" * 50000)
    assert answer["kind"] == "bad-request" and "nested" in answer["error"]
    assert conv.ask({"op": "jobs", "args": {"limit": 5}})["result"] == []
    answer = conv.ask(b'{"op": "jobs", "pad": "' + b"x" * (600 << 10) + b'"}')
    assert answer["kind"] == "bad-request" and "over" in answer["error"]
    assert conv.receive() is None, "the rest of an over-long line is never read as requests"
    conv.close()
    log = served.logged()
    assert "RecursionError" not in log and "Traceback" not in log


def test_a_job_id_over_4_kib_is_read_through_the_service(served):
    r = served.jobmon("query", LONG, "--json", "--no-scheduler", user=A)
    rep = json.loads(r.stdout)
    assert rep["job"]["job"] in MINE and rep["job"]["job"] != "mine-1" and rep["samples"]
