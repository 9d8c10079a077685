"""Network bytes per job on pure cgroup v2 (kernel 6.1): the node reader's hand-assembled
BPF program through this kernel's verifier, counting the loopback traffic of real `jobmon
run` jobs -- one talking to a local server, two talking to each other -- against what the
endpoints' own sockets say they sent (struct tcp_info)."""
import json
import os
import subprocess
import time

import pytest

import tree
from helpers import JOBMON
from node_site import CLIENT, SERVER, NodeReader, Server, received_as, run_job, sent_as


@pytest.fixture(scope="module")
def reader():
    subprocess.run(["ip", "link", "set", "lo", "up"], check=False)   # the guest's only link
    n = NodeReader(None, args=["--no-energy"]).start(period=0.5, wait_for=("network.txt",))
    yield n
    n.close()


def test_a_job_and_a_local_server(reader, tmp_path):
    head = reader.head("network.txt")
    assert head["available"] is True, head
    server = Server(answer=200_003)
    _samples, s, r = run_job(str(tmp_path), reader.env(),
                             ["python3", "-c", CLIENT, str(server.port), "1000000"], interval=1)
    server.join(30)
    sent, received = map(int, r.stdout.split())
    assert s["method"] == "cgroup-v2" and s["net_source"] == "bpf", s
    assert received == 200_003 and server.stats[1] == 1_000_000
    assert sent_as(s["net_tx_bytes"], s["net_tx_packets"], sent), (s, sent)
    assert received_as(s["net_rx_bytes"], s["net_rx_packets"], received, server.stats[0]), s


def test_two_jobs_talking_to_each_other(reader, tmp_path):
    port = tmp_path / "port"
    server = subprocess.Popen([JOBMON, "run", "--interval=1", "--store=none",
                               f"--summary={tmp_path}/server.json", "--", "python3", "-c",
                               SERVER, str(port), "300000"], env=reader.env(),
                              stdout=subprocess.PIPE, text=True)
    end = time.monotonic() + 120
    while not port.exists() and time.monotonic() < end:
        time.sleep(0.1)
    (tmp_path / "c").mkdir()
    _samples, c, r = run_job(str(tmp_path / "c"), reader.env(),
                             ["python3", "-c", CLIENT, port.read_text(), "700000"], interval=1)
    out, _ = server.communicate(timeout=120)
    assert server.returncode == 0
    c_sent, c_received = map(int, r.stdout.split())
    s_sent, s_received = map(int, out.split())
    assert (c_received, s_received) == (300_000, 700_000)
    s = json.load(open(tmp_path / "server.json"))
    assert sent_as(c["net_tx_bytes"], c["net_tx_packets"], c_sent), c
    assert sent_as(s["net_tx_bytes"], s["net_tx_packets"], s_sent), s
    assert received_as(s["net_rx_bytes"], s["net_rx_packets"], s_received, c_sent), s
    assert received_as(c["net_rx_bytes"], c["net_rx_packets"], c_received, s_sent), c


def test_what_a_packet_costs_the_program(raw_guest):
    """The kernel runs the program on a packet of a socket in this test's cgroup, four
    levels down as a Slurm task's (BPF_PROG_TEST_RUN), and times it: printed for
    docs/performance.md (under emulation, far slower than on hardware)."""
    from jobmon.node import bpf, netcount
    tree.move(os.getpid(), tree.make("system.slice/job_1/step_0/task_0"))
    m = bpf.map_create(bpf.MAP_PERCPU_HASH, 8, 32, 64, bpf.NO_PREALLOC)
    p = bpf.prog_load(bpf.PROG_CGROUP_SKB, netcount.program(m, True), bpf.CGROUP_INET_EGRESS)
    packet = b"\0" * 12 + b"\x08\x00" + b"\x45" + b"\0" * 85       # Ethernet + IPv4
    try:
        ret, ns = bpf.test_run(p, packet, 20000)
    finally:
        os.close(p)
        os.close(m)
    depth = open("/proc/self/cgroup").read().strip().partition("::")[2].count("/")
    tree.move(os.getpid(), raw_guest)
    print(f"BPF program per packet, cgroup depth {depth}: {ns} ns (TCG emulation)")
    assert ret == 1 and ns > 0 and depth == 4
