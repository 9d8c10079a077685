"""Starting and stopping the cluster's processes through supervisor.py (see there why)."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "supervisor.py")


def _die_with_parent():
    import ctypes
    import signal
    ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)   # PR_SET_PDEATHSIG


class Supervisor:
    """Client of one supervisor process; every daemon of a cluster is started through it."""

    def __init__(self, log):
        self._lock = threading.Lock()
        self._log = open(log, "ab")
        self.proc = subprocess.Popen([sys.executable, SUPERVISOR], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._log, text=True,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        self.pid = json.loads(self.proc.stdout.readline())["ready"]
        self.names = {}   # pid -> daemon name

    def _ask(self, **req):
        with self._lock:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the cluster's supervisor exited ({self.proc.returncode})")
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the cluster's supervisor exited")
        return json.loads(line)

    def spawn(self, name, argv, env, log, cwd=None):
        pid = self._ask(op="spawn", argv=argv, env=env, log=log, cwd=cwd)["pid"]
        self.names[pid] = name
        return pid

    def alive(self, pid):
        return self._ask(op="status", pid=pid)["alive"]

    def exit_status(self, pid):
        return self._ask(op="status", pid=pid)["status"]

    def signal(self, pid, sig):
        return self._ask(op="signal", pid=pid, sig=int(sig))["ok"]

    def descendants(self):
        """[(pid, ppid, comm)] of every process the cluster runs now, daemons included."""
        return [tuple(p) for p in self._ask(op="descendants")["procs"]]

    def stop(self, grace=5):
        """Stops every daemon (newest first) and every process left below them.
        Returns [(pid, comm, signal)] of what had to be stopped."""
        if self.proc.poll() is not None:
            return []
        try:
            killed = [tuple(k) for k in self._ask(op="stop", grace=grace)["killed"]]
        finally:
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self._log.close()
        return killed


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tcp_open(port, host="127.0.0.1"):
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_until(what, check, timeout, alive=None, poll=0.05):
    """Polls check() until it is true; raises TimeoutError naming `what`. alive(), when
    given, is asked too, so a daemon that died is reported at once rather than at timeout."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return
        if alive is not None and not alive():
            raise RuntimeError(f"{what}: the daemon exited")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout} s")
        time.sleep(poll)


class NodeLock:
    """Held while a cluster runs a node of this name on this machine: two test sessions
    at once would otherwise share Slurm's per-node cgroups (v1 `slurm_<node>`, v2
    `<node>_slurmstepd.scope`) and job ids. An abstract unix socket: nothing to clean
    up, and the kernel frees it when the process dies."""

    def __init__(self, node):
        self.node = node
        self.sock = None

    def try_acquire(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.bind(f"\0jobmon-slurm-node-{self.node}")
        except OSError:
            s.close()
            return False
        self.sock = s
        return True

    def acquire(self, timeout):
        deadline = time.monotonic() + timeout
        while not self.try_acquire():
            if time.monotonic() > deadline:
                raise TimeoutError(f"Slurm node name {self.node!r} is in use by another test "
                                   f"session on this machine")
            time.sleep(0.5)

    def release(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def lock_free_node(prefix="node", first=1, last=99):
    """A NodeLock on the first free name node01, node02, ..."""
    for i in range(first, last + 1):
        lock = NodeLock(f"{prefix}{i:02d}")
        if lock.try_acquire():
            return lock
    raise RuntimeError("no free Slurm node name on this machine")
