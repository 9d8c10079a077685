"""Network counting that no user can exhaust: 17,000 cgroups with one packet each (what a
delegated subtree -- a user's systemd slice, a rootless container -- lets any user make)
fill the node reader's 16,384-counter map. A job that starts then must say its figures are
not available, never 0 bytes; when those cgroups go, their counters go within seconds and
new jobs are counted again; and the reader's sweep for vanished cgroups costs what the map
holds, not what the tree holds (30,000 empty cgroups). The real reader's BPF program on
this host's kernel, real cgroups, real `jobmon run` jobs talking over loopback."""
import os
import subprocess
import time

import pytest

from helpers import PYTHON, needs_root
from node_site import CLIENT, NodeReader, Server, run_job, sent_as

pytestmark = needs_root

# N cgroups below ROOT, one UDP packet sent from a socket made in each; "made", then on a
# line on stdin they are removed and "removed" said
FLOOD = r"""
import os, socket, sys
root, n = sys.argv[1], int(sys.argv[2])
base = os.path.join(root, f"jobmon-test-flood-{os.getpid()}")
os.mkdir(base)
for i in range(n):
    d = os.path.join(base, str(i))
    os.mkdir(d)
    with open(os.path.join(d, "cgroup.procs"), "w") as f:
        f.write("0")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"x", ("127.0.0.1", 9))
    s.close()
with open(os.path.join(root, "cgroup.procs"), "w") as f:
    f.write("0")
print("made", flush=True)
sys.stdin.readline()
for i in range(n):
    os.rmdir(os.path.join(base, str(i)))
os.rmdir(base)
print("removed", flush=True)
"""


# a process that joins cgroup argv[1] and sends one packet from a socket made there
SEND = ("import socket, sys\nopen(sys.argv[1] + '/cgroup.procs', 'w').write('0')\n"
        "socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 9))\n")


def root():
    from jobmon.node.netcount import cgroup2_root
    r = cgroup2_root()
    if r is None:
        pytest.skip("no cgroup v2 hierarchy")
    return r


def wait_head(reader, ok, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        head = reader.head("network.txt")
        if ok(head):
            return head
        time.sleep(0.1)
    raise AssertionError(f"not after {timeout} s: {reader.head('network.txt')}")


def talk(reader, tmp, nbytes=2_000_000):
    os.makedirs(tmp)
    server = Server(answer=nbytes)
    _samples, s, r = run_job(tmp, reader.env(),
                             ["python3", "-c", CLIENT, str(server.port), str(nbytes)])
    server.join(10)
    return s, int(r.stdout.split()[0])


def test_a_full_map_leaves_new_jobs_not_available_and_empties_when_the_cgroups_go(tmp_path):
    from jobmon.node.netcount import MAX_ENTRIES
    full = MAX_ENTRIES - 256       # the kernel counts a large map's entries in batches
    reader = NodeReader(None, args=["--no-energy"]).start(period=1.0, wait_for=("network.txt",))
    flood = subprocess.Popen([PYTHON, "-c", FLOOD, root(), str(MAX_ENTRIES + 600)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert flood.stdout.readline().strip() == "made"
        wait_head(reader, lambda h: h["cgroups"] >= full, 20)
        s, _sent = talk(reader, str(tmp_path / "while-full"))
        # never 0 bytes: not available, and why
        assert all(s.get(k) is None for k in ("net_tx_bytes", "net_rx_bytes")), s
        assert s["net_source"].startswith("not available: the node reader's counter map "
                                          f"was full ({MAX_ENTRIES} cgroups)"), s["net_source"]
        head = reader.head("network.txt")
        assert head["full"] and head["full_refreshes"] >= 1
        flood.stdin.write("\n")
        flood.stdin.flush()
        assert flood.stdout.readline().strip() == "removed"
        gone = time.monotonic()
        wait_head(reader, lambda h: h["cgroups"] < 1000, 30)     # was 120-150 s
        assert time.monotonic() - gone < 30
        s, sent = talk(reader, str(tmp_path / "after"))
        assert s["net_source"] == "bpf", s["net_source"]
        assert sent_as(s["net_tx_bytes"], s["net_tx_packets"], sent), (s, sent)
    finally:
        if flood.poll() is None:
            flood.stdin.close()
            flood.wait(120)
        reader.close()


def test_the_sweep_costs_what_the_map_holds_not_what_the_tree_holds():
    """30,000 empty cgroups (no packet: no counter) beside the counted ones: a sweep for
    vanished cgroups takes well under a second (a walk of the tree took seconds, in the
    reader's one thread, and every published file went stale meanwhile)."""
    from jobmon.node.netcount import NetCounter
    base = os.path.join(root(), f"jobmon-test-empty-{os.getpid()}")
    os.mkdir(base)
    made = []
    counter = NetCounter(root(), 1.0)
    try:
        for i in range(30000):
            d = os.path.join(base, str(i))
            os.mkdir(d)
            made.append(d)
        subprocess.run([PYTHON, "-c", SEND, made[0]], check=True)   # one counted cgroup
        me = os.stat(made[0]).st_ino
        counts = counter.counts()
        assert me in counts, "the packet of a process in it is counted"
        t = time.monotonic()
        counter.sweep(counts)
        took = time.monotonic() - t
        assert took < 0.5, f"a sweep took {took:.2f} s with 30,000 empty cgroups"
        assert me not in counter.gone, "a live cgroup is never taken for vanished"
    finally:
        counter.close()
        for d in reversed(made):
            os.rmdir(d)
        os.rmdir(base)
