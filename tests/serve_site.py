"""A read service for the tests: its own munged (own key and socket, as the Slurm test
cluster runs one), `jobmon serve` as an unprivileged service user holding the site's
config, and the configs its callers use (a Unix socket path, or HOST:PORT with MUNGE)."""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

from helpers import JOBMON, as_user
from influx_site import SERVICE_GROUP, SERVICE_USER

ADMIN_GROUP, ADMIN = "jobmon-test-admins", "jobmon-test-admin"


def wait_for(what, ok, timeout=30, alive=lambda: True):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ok():
            return
        assert alive(), f"died before {what}"
        time.sleep(0.05)
    raise AssertionError(f"no {what} after {timeout} s")


class Munged:
    """A munged of our own: its key, its socket in a directory every user can reach."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="jobmon-munge-")
        os.chmod(self.dir, 0o711)
        self.socket = os.path.join(self.dir, "munge.sock")
        key = os.path.join(self.dir, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self.log = os.path.join(self.dir, "munged.log")
        self.proc = subprocess.Popen(
            [shutil.which("munged", path="/usr/sbin:/sbin:/usr/bin") or "munged",
             "--foreground", "--force", f"--socket={self.socket}", f"--key-file={key}",
             f"--pid-file={self.dir}/munged.pid", f"--seed-file={self.dir}/munged.seed",
             f"--log-file={self.log}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for("munged", lambda: subprocess.run(
            ["munge", "-n", "-S", self.socket], capture_output=True).returncode == 0,
            alive=lambda: self.proc.poll() is None)

    def credential(self, payload, ttl=None, user=None):
        """A credential made by `user` (root when None) with this munged."""
        argv = ["munge", "-S", self.socket, "-s", payload] + (["-t", str(ttl)] if ttl else [])
        r = subprocess.run(as_user(argv, user) if user else argv, capture_output=True,
                           text=True, check=True)
        return r.stdout.strip()

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


class Service:
    """`jobmon serve` for `site` (an influx_site.Site): its socket, its TCP port."""

    def __init__(self, site, munged, coordinators="", service_keys=""):
        """service_keys: more lines of its [service] section, "{dir}" its directory; the
        read log's, by default in its directory."""
        from servers import free_port
        self.site, self.munged = site, munged
        self.dir = tempfile.mkdtemp(prefix="jobmon-serve-")
        os.chmod(self.dir, 0o755)
        pw = __import__("pwd").getpwnam(SERVICE_USER)
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.socket = os.path.join(self.dir, "read.sock")
        self.address = f"127.0.0.1:{free_port()}"
        self.config = os.path.join(self.dir, "serve.toml")
        coord = ""
        if coordinators:
            path = os.path.join(self.dir, "coordinators")
            with open(path, "w") as f:
                f.write(coordinators)
            coord = f'coordinators_file = "{path}"\n'
        with open(site.config) as f:
            base = f.read()
        service_keys = (service_keys or 'read_log = "{dir}/state/reads.db"\n').replace(
            "{dir}", self.dir)
        self.read_log_path = re.search(r'read_log = "([^"]*)"', service_keys).group(1)
        with open(self.config, "w") as f:
            f.write(base + f'[service]\nsocket = "{self.socket}"\nlisten = "{self.address}"\n'
                    f'munge_socket = "{munged.socket}"\nadmin_group = "{ADMIN_GROUP}"\n{coord}'
                    + service_keys)
        self.log = os.path.join(self.dir, "serve.log")
        self.proc = None

    def start(self, nofile=None):
        """nofile: the service's limits of open descriptors, "SOFT:HARD" (systemd gives a
        service 1024:524288 unless its unit says LimitNOFILE); None: the tests' own."""
        env = dict(os.environ, JOBMON_CONFIG=self.config)
        env.pop("JOBMON_STORE", None)
        limit = ["prlimit", f"--nofile={nofile}", "--"] if nofile else []
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                limit + ["setpriv", f"--reuid={SERVICE_USER}", f"--regid={SERVICE_GROUP}",
                         "--clear-groups", "--", JOBMON, "serve"], env=env, stdout=log,
                stderr=log)
        wait_for("the service's socket", lambda: os.path.exists(self.socket)
                 and _answers(self.socket), alive=lambda: self.proc.poll() is None)
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def logged(self):
        with open(self.log, encoding="utf-8", errors="replace") as f:
            return f.read()

    def client_config(self, address=None):
        """A caller's config: the service's address, nothing of the database."""
        path = os.path.join(self.dir, f"client-{len(os.listdir(self.dir))}.toml")
        with open(path, "w") as f:
            f.write(f'[service]\naddress = "{address or self.socket}"\n'
                    f'munge_socket = "{self.munged.socket}"\n')
        os.chmod(path, 0o644)
        return path

    def jobmon(self, *args, user=None, config=None, check=True):
        """`jobmon ARGS` as `user` (root when None) reading through the service."""
        env = dict(os.environ, JOBMON_CONFIG=config or self.client_config())
        env.pop("JOBMON_STORE", None)
        argv = [JOBMON, *args]
        r = subprocess.run(as_user(argv, user) if user else argv, env=env,
                           capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            raise AssertionError(f"jobmon {' '.join(args)} as {user} -> {r.returncode}\n"
                                 f"{r.stdout}\n{r.stderr}\n{self.logged()[-2000:]}")
        return r

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def _answers(path):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


class Conversation:
    """The protocol by hand, as an attacker would speak it."""

    def __init__(self, address):
        if address.startswith("/"):
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.connect(address)
        else:
            host, port = address.rsplit(":", 1)
            self.sock = socket.create_connection((host, int(port)))
        self.sock.settimeout(20)
        self.f = self.sock.makefile("rwb")
        self.hello = self.receive()

    def send(self, obj):
        self.f.write((obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n")
        self.f.flush()

    def receive(self):
        line = self.f.readline()
        return json.loads(line) if line else None

    def ask(self, obj):
        self.send(obj)
        return self.receive()

    def close(self):
        self.f.close()
        self.sock.close()
