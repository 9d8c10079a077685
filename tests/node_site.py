"""A node with a node reader, for the tests: a recorded powercap tree (tests/fixtures/powercap)
whose energy counters a driver thread advances at set powers, the node's CPU time in a
/proc/stat of the same shape advanced at a set number of busy cores, and the real
`jobmon node-reader` publishing them in a directory the job side trusts (root's, in
sticky /tmp); real `jobmon run` jobs read it. Needs root."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time

from helpers import JOBMON, fixture

WIDTH = 20        # digits written in place (no truncation: the reader may read meanwhile)


class Powered:
    """The recorded tree in a private copy, driven: each zone's energy_uj rises at its
    power (W) from its recorded value, wrapping at its max_energy_range_uj as RAPL does;
    /proc/stat's busy time rises at `busy` cores of `cpus`."""

    def __init__(self, tree, watts, busy=4.0, cpus=8, step=0.02):
        self.base = tempfile.mkdtemp(prefix="jobmon-node-test-")
        os.chmod(self.base, 0o755)
        self.powercap = os.path.join(self.base, "powercap")
        shutil.copytree(fixture("powercap", tree), self.powercap)
        self.zones = {}
        for z, w in watts.items():
            d = os.path.join(self.powercap, z)
            start = int(open(os.path.join(d, "energy_uj")).read())
            rng = int(open(os.path.join(d, "max_energy_range_uj")).read())
            self.zones[z] = [os.path.join(d, "energy_uj"), start, rng, w]
        self.stat = os.path.join(self.base, "stat")
        self.busy, self.cpus, self.step = busy, cpus, step
        self.t0 = time.monotonic()
        self.advance()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def set_range(self, zone, rng):
        """Make `zone` wrap at `rng` uJ (before the reader starts: it reads the range once)."""
        self.zones[zone][2] = rng
        with open(os.path.join(os.path.dirname(self.zones[zone][0]), "max_energy_range_uj"),
                  "w") as f:
            f.write(f"{rng}\n")

    def _put(self, path, text):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, text.encode(), 0)
        finally:
            os.close(fd)

    def advance(self):
        t = time.monotonic() - self.t0
        for path, start, rng, w in self.zones.values():
            self._put(path, f"{(start + round(w * t * 1e6)) % rng:0{WIDTH}d}\n")
        busy = round(self.busy * t * 100) + 10 ** 9          # ticks since "boot"
        idle = round((self.cpus - self.busy) * t * 100) + 10 ** 9
        per = [f"cpu{i} {busy // self.cpus:0{WIDTH}d} 0 0 {idle // self.cpus:0{WIDTH}d} "
               "0 0 0 0 0 0" for i in range(self.cpus)]
        self._put(self.stat, f"cpu  {busy:0{WIDTH}d} 0 0 {idle:0{WIDTH}d} 0 0 0 0 0 0\n"
                  + "\n".join(per) + "\nintr 0\n")

    def _run(self):
        while not self.stop.wait(self.step):
            self.advance()

    def close(self):
        self.stop.set()
        self.thread.join()
        shutil.rmtree(self.base, ignore_errors=True)


class NodeReader:
    """`jobmon node-reader` on a Powered tree (or none), in a trusted directory."""

    def __init__(self, powered=None, config="", args=()):
        self.base = tempfile.mkdtemp(prefix="jobmon-node-dir-")
        os.chmod(self.base, 0o755)
        self.dir = os.path.join(self.base, "node")
        self.config = os.path.join(self.base, "jobmon.toml")
        with open(self.config, "w") as f:
            f.write(config)
        self.powered = powered
        argv = [JOBMON, "node-reader", f"--dir={self.dir}", "--no-gpus",
                f"--config={self.config}"]
        if powered:
            argv += [f"--powercap={powered.powercap}", f"--cpu-stat={powered.stat}"]
        else:
            argv += ["--powercap=/nonexistent"]
        self.argv = argv + list(args)
        self.proc = None

    def start(self, period=0.2, wait_for=("energy.json",)):
        self.proc = subprocess.Popen(self.argv + [f"--period={period}"],
                                     stderr=subprocess.PIPE, text=True)
        for name in wait_for:
            self.wait(name)
        return self

    def wait(self, name, after_seq=0, timeout=20):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            assert self.proc.poll() is None, self.proc.stderr.read()
            try:
                head = self.head(name)
                if head.get("seq", 1) > after_seq:
                    return head
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        raise AssertionError(f"the node reader published no {name}")

    def head(self, name):
        with open(os.path.join(self.dir, name), "rb") as f:
            return json.loads(f.readline())

    def env(self, **extra):
        env = dict(os.environ, JOBMON_NODE_DIR=self.dir, JOBMON_GPU="off")
        env.update(extra)
        return env

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def close(self):
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


def run_job(tmp, env, cmd, interval=0.1, extra=()):
    """`jobmon run` of cmd to its end: (samples, summary, the CompletedProcess)."""
    out = os.path.join(tmp, "samples.jsonl")
    summary = os.path.join(tmp, "summary.json")
    r = subprocess.run([JOBMON, "run", f"--interval={interval}", f"--out={out}",
                        f"--summary={summary}", "--store=none", *extra, "--"] + list(cmd),
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        samples = [json.loads(line) for line in f]
    with open(summary) as f:
        return samples, json.load(f), r


BUSY = "import time\nend = time.process_time() + float(__import__('sys').argv[1])\n" \
       "while time.process_time() < end:\n    pass\n"
# busy for so many seconds of wall time, however little CPU the machine gives it
BUSY_WALL = "import time\nend = time.monotonic() + float(__import__('sys').argv[1])\n" \
            "while time.monotonic() < end:\n    pass\n"


# what the kernel says a TCP socket sent and received (struct tcp_info, Linux 4.19):
# bytes_sent counts retransmitted bytes too, bytes_received new bytes only (and the
# peer's FIN as one); read once the socket's own FIN was acknowledged (FIN_WAIT2,
# TIME_WAIT or CLOSE), so every byte it sent is in
TCP_STATS = ("import socket, struct, time\n"
             "def stats(s):\n"
             "    end = time.monotonic() + 60\n"
             "    while True:\n"
             "        i = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 232)\n"
             "        if i[0] in (5, 6, 7) or time.monotonic() > end:\n"
             "            break\n"
             "        time.sleep(0.01)\n"
             "    return (struct.unpack_from('<Q', i, 200)[0],\n"
             "            struct.unpack_from('<Q', i, 128)[0] - 1)\n")
CLIENT = TCP_STATS + (
    "import sys\n"
    "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
    "s.sendall(b'x' * int(sys.argv[2])); s.shutdown(socket.SHUT_WR)\n"
    "while s.recv(1 << 16):\n"
    "    pass\n"
    "print(*stats(s))\n")
SERVER = TCP_STATS + (
    "import os, sys\n"
    "listener = socket.create_server(('127.0.0.1', 0))\n"
    "open(sys.argv[1] + '.tmp', 'w').write(str(listener.getsockname()[1]))\n"
    "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
    "c, _ = listener.accept()\n"
    "while c.recv(1 << 16):\n"
    "    pass\n"
    "c.sendall(b'y' * int(sys.argv[2])); c.shutdown(socket.SHUT_WR)\n"
    "print(*stats(c))\n")
HEADER = (40, 80)    # bytes a packet adds to its payload: IPv4 + TCP, + options (SYN: most)


def sent_as(counted, packets, sent):
    """The counter holds `sent` payload bytes in `packets` packets, each with its headers."""
    return sent + HEADER[0] * packets <= counted <= sent + HEADER[1] * packets


def received_as(counted, packets, received, peer_sent):
    """At least the new bytes, at most all the peer sent (duplicates included)."""
    return received + HEADER[0] * packets <= counted <= peer_sent + HEADER[1] * packets


class Server(threading.Thread):
    """A local server outside every job: takes what comes, answers `answer` bytes."""

    def __init__(self, answer):
        super().__init__(daemon=True)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.answer, self.stats = answer, None
        self.start()

    def run(self):
        c, _ = self.sock.accept()
        while c.recv(1 << 16):
            pass
        c.sendall(b"y" * self.answer)
        c.shutdown(socket.SHUT_WR)
        scope = {}
        exec(TCP_STATS, scope)
        self.stats = scope["stats"](c)
        c.close()
