"""Network bytes per job: the node reader's hand-assembled BPF program, loaded through the
kernel's verifier on this host's real kernel, counting real loopback traffic of real
`jobmon run` jobs. A job run as root gets a cgroup v2 of its own: on a hybrid host one
beside its v1 ones, on a pure v2 host its only one, and that is what its sockets are
counted by (the pure v2 case, Slurm's and a job's own, is also
tests/guest/inside/test_network.py)."""
import json
import os
import subprocess
import threading

import pytest

from helpers import (JOBMON, TEST_USER, as_user, fixture, job_cgroup_method, needs_root,
                     needs_test_user)
from node_site import (CLIENT, HEADER, SERVER, NodeReader, Server, received_as, run_job,
                       sent_as)

pytestmark = needs_root
@pytest.fixture(scope="module")
def reader():
    n = NodeReader(None).start(wait_for=("network.txt",))
    yield n
    n.close()


def within(counted, payload, packets):
    return payload <= counted <= payload + HEADERS * packets


def test_the_program_passes_the_verifier_and_counts_its_cgroups_traffic(reader):
    head = reader.head("network.txt")
    assert head["available"] is True and head["levels"] == 16 and head["max_cgroups"] == 16384


def test_a_job_talking_to_a_local_server(reader, tmp_path):
    server = Server(answer=123_457)
    samples, s, r = run_job(str(tmp_path), reader.env(),
                            ["python3", "-c", CLIENT, str(server.port), "3000000"])
    server.join(10)
    sent, received = map(int, r.stdout.split())
    assert s["method"] == job_cgroup_method() != "procfs" and s["net_source"] == "bpf"
    assert sent >= 3_000_000 and received == 123_457 and server.stats[1] == 3_000_000
    assert sent_as(s["net_tx_bytes"], s["net_tx_packets"], sent), (s, sent)
    assert received_as(s["net_rx_bytes"], s["net_rx_packets"], received, server.stats[0])
    counted = [x["net_tx_bytes"] for x in samples if "net_tx_bytes" in x]
    assert counted == sorted(counted) and counted[-1] <= s["net_tx_bytes"]


def test_two_jobs_on_loopback_count_each_others_packets(reader, tmp_path):
    """What one job sends the other receives: the same bytes, each packet with its
    headers (the kernel may hand a large packet to the receiver in more pieces than the
    sender passed down, so the packet counts differ)."""
    port_file = tmp_path / "port"
    server = subprocess.Popen([JOBMON, "run", "--interval=0.1", "--store=none",
                               f"--summary={tmp_path}/server.json", "--", "python3", "-c",
                               SERVER, str(port_file), "2500000"], env=reader.env(),
                              stdout=subprocess.PIPE, text=True)
    for _ in range(600):
        if port_file.exists():
            break
        threading.Event().wait(0.05)
    client = tmp_path / "client"
    client.mkdir()
    r = subprocess.run([JOBMON, "run", "--interval=0.1", "--store=none",
                        f"--summary={client}/summary.json", "--", "python3", "-c", CLIENT,
                        port_file.read_text(), "4000000"], env=reader.env(),
                       capture_output=True, text=True, timeout=120)
    out, _ = server.communicate(timeout=60)
    assert r.returncode == 0 and server.returncode == 0, r.stderr
    c_sent, c_received = map(int, r.stdout.split())
    s_sent, s_received = map(int, out.split())
    assert (c_received, s_received) == (2_500_000, 4_000_000)
    c = json.load(open(client / "summary.json"))
    s = json.load(open(tmp_path / "server.json"))
    assert sent_as(c["net_tx_bytes"], c["net_tx_packets"], c_sent), (c, c_sent)
    assert sent_as(s["net_tx_bytes"], s["net_tx_packets"], s_sent), (s, s_sent)
    assert received_as(s["net_rx_bytes"], s["net_rx_packets"], s_received, c_sent)
    assert received_as(c["net_rx_bytes"], c["net_rx_packets"], c_received, s_sent)
    # one side's payload is the other's: they differ by headers alone
    assert abs((s["net_rx_bytes"] - HEADER[0] * s["net_rx_packets"])
               - (c["net_tx_bytes"] - HEADER[0] * c["net_tx_packets"])) <= \
        (HEADER[1] - HEADER[0]) * max(s["net_rx_packets"], c["net_tx_packets"])


def test_a_job_without_a_cgroup_v2_of_its_own_gets_none(reader, tmp_path):
    server = Server(answer=10)
    _s, s, _e = run_job(str(tmp_path), reader.env(),
                        ["python3", "-c", CLIENT, str(server.port), "1000"],
                        extra=["--cgroup=none"])
    assert s["method"] == "procfs" and s.get("net_tx_bytes") is None
    assert s["net_source"].startswith("not available: the job has no cgroup v2 of its own")


def test_no_counters_where_the_node_has_no_cgroup_v2():
    from jobmon.node.netcount import network_source
    src = network_source(1.0, mountinfo=fixture("proc", "mountinfo_v1"))
    assert src.why.startswith("this node has no cgroup v2 hierarchy (cgroup v1 only)")
    assert json.loads(src.refresh(1))["available"] is False


@needs_test_user
def test_a_reader_without_privileges_says_it_cannot_count(tmp_path):
    n = NodeReader(None, args=["--no-energy"])
    os.makedirs(n.dir)
    import pwd
    pw = pwd.getpwnam(TEST_USER)
    os.chown(n.dir, pw.pw_uid, pw.pw_gid)
    n.argv = as_user(n.argv)
    try:
        n.start(wait_for=("network.txt",))
        head = n.head("network.txt")
        assert head["available"] is False
        assert "refused the counting program: Operation not permitted (the node reader " \
               "needs root" in head["why"]
        server = Server(answer=10)
        _s, s, _e = run_job(str(tmp_path), n.env(),
                            ["python3", "-c", CLIENT, str(server.port), "1000"])
    finally:
        n.close()
    assert s.get("net_tx_bytes") is None
    assert s["net_source"].startswith("not available: the kernel refused the counting program")


def test_a_reader_that_counts_no_network(tmp_path):
    n = NodeReader(None, args=["--no-network"]).start()
    try:
        _s, s, _e = run_job(str(tmp_path), n.env(), ["true"])
    finally:
        n.close()
    assert s["net_source"] == "not available: the node reader publishes no network " \
        "counters here"
