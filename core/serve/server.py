"""`jobmon serve`: answers the read operations of jobmon.serve.protocol for whoever
connects, each inside their scope, with the read credential only the service holds.

Local callers connect to a Unix socket and are known by the kernel's peer credentials;
remote ones connect over TCP and prove who they are with a MUNGE credential made for the
connection. A connection is one caller: its own store handle and record handles."""
import os
import socket
import sys
import threading
import time

from . import gate, identity, protocol
from .read_log import NotKept, Noter, how_of
from .scoped import NotFound, ScopedStore

IDLE_SECONDS = 300         # an identified connection silent this long is closed
MAX_CONNECTIONS = 256      # identified callers served at once (a thread each)
MAX_PER_USER = 8           # of them one user's


def log(text):
    print(f"jobmon serve: {text}", file=sys.stderr, flush=True)


class Service:
    """open_store(): a store for one connection; policy: jobmon.serve.policy.Policy;
    munge: jobmon.serve.munge.Munge, for TCP callers; store_errors: what a store raises
    when its server fails (answered as such, the connection kept); read_log:
    jobmon.serve.read_log.ReadLog, or None where none is kept."""

    def __init__(self, open_store, policy, munge=None, store_errors=(),
                 most=MAX_CONNECTIONS, per_user=MAX_PER_USER, read_log=None):
        self.open_store, self.policy, self.munge = open_store, policy, munge
        self.read_log = read_log
        self.store_errors = tuple(store_errors)
        self.most, self.per_user = most, per_user
        self.lock = threading.Lock()
        self.serving = 0
        self.users = {}           # peer or user -> connections served

    @staticmethod
    def hello(remote):
        nonce = identity.new_nonce() if remote else None
        line = {"service": "jobmon", "version": protocol.VERSION,
                **({"nonce": nonce} if remote else {})}
        return (json_line(line), nonce)

    def admit(self, conn, remote, peer, line, nonce):
        """A caller whose first line came (jobmon.serve.gate): a thread of its own, unless
        MAX_CONNECTIONS are served, or MAX_PER_USER of its uid (Unix socket) already."""
        key = None if remote else peer
        if not self._enter(key):
            return self._busy(conn, key)
        threading.Thread(target=self._conversation, args=(conn, remote, line, nonce, key),
                         daemon=True).start()

    def _enter(self, key):
        with self.lock:
            if self.serving >= self.most or (key is not None and
                                             self.users.get(key, 0) >= self.per_user):
                return False
            self.serving += 1
            if key is not None:
                self.users[key] = self.users.get(key, 0) + 1
            return True

    def _leave(self, key, serving=True):
        with self.lock:
            self.serving -= serving
            if key is not None:
                self.users[key] -= 1
                if not self.users[key]:
                    del self.users[key]

    def _busy(self, conn, key):
        mine = key is not None and self.users.get(key, 0) >= self.per_user
        text = (f"{self.per_user} connections of yours are open already" if mine else
                f"the service serves {self.most} callers already; try again shortly")
        try:
            conn.settimeout(1.0)
            conn.sendall(json_line({"error": text, "kind": "busy"}))
        except OSError:
            pass
        conn.close()

    def _conversation(self, conn, remote, line, nonce, key):
        user_key = None
        try:
            conn.settimeout(IDLE_SECONDS)
            f = conn.makefile("rwb")
            try:
                who = self.authenticate(conn, protocol.parse(line), nonce)
            except identity.Refused as e:
                log(f"refused {self._peer(conn, remote)}: {e}")
                self._answer(f, {"error": str(e), "kind": "refused"})
                return
            except (OSError, protocol.BadRequest):
                return
            if remote:                # over TCP a user is known now: their share counts
                user_key = ("uid", who.uid)
                if not self._enter_user(user_key):
                    self._answer(f, {"error": f"{self.per_user} connections of yours are "
                                     "open already", "kind": "busy"})
                    return
            scope = self.policy.scope(who)
            protocol.send(f, {"user": who.user, "reads": scope.describe()})
            noter = Noter(self.read_log, who.user, who.via) if self.read_log else None
            scoped = ScopedStore(self.open_store(), scope, noter and noter.note, self.read_log)
            try:
                if self.serve(f, who, scoped, noter):
                    _drain(conn)
            finally:
                scoped.close()
        except OSError:
            pass     # the caller went away
        finally:
            conn.close()
            if user_key is not None:
                self._leave(user_key, serving=False)
            self._leave(key)
            _give_back_memory()

    def _enter_user(self, key):
        with self.lock:
            if self.users.get(key, 0) >= self.per_user:
                return False
            self.users[key] = self.users.get(key, 0) + 1
            return True

    def authenticate(self, conn, hello, nonce):
        if nonce is None:
            return identity.peer(conn)
        if self.munge is None:
            raise identity.Refused("this service takes no remote callers")
        cred = hello.get("munge")
        if not isinstance(cred, str):
            raise identity.Refused("no MUNGE credential")
        return identity.from_munge(self.munge, cred, nonce)

    def serve(self, f, who, scoped, noter=None):
        while True:
            try:
                request = protocol.receive(f, protocol.MAX_REQUEST_BYTES)
                if request is None:
                    return
                op, args = protocol.arguments(request)
            except protocol.BadRequest as e:
                self._answer(f, {"error": str(e), "kind": "bad-request"})
                if isinstance(e, protocol.TooLong):
                    return True           # the rest of it is still coming
                continue
            t0 = time.monotonic()
            if noter:
                noter.how = how_of(request, op)
            try:
                result = getattr(scoped, op)(**args)
                answer = {"result": result}
            except NotFound as e:
                answer = {"error": str(e), "kind": "not-found"}
            except NotKept as e:
                answer = {"error": str(e), "kind": "not-kept"}
            except self.store_errors as e:
                answer = {"error": str(e), "kind": "store"}
            except Exception as e:     # a fault of the service: say so, keep serving
                log(f"{who}: {op} failed: {type(e).__name__}: {e}")
                answer = {"error": "the service failed to answer (see its log)",
                          "kind": "internal"}
            if noter:
                noter.flush()         # queued, not written: the answer never waits for it
            if "result" in answer:
                protocol.send_result(f, result)
            else:
                protocol.send(f, answer)
            n = answer["kind"] if "result" not in answer else len(
                result["reads"] if isinstance(result, dict) and "reads" in result else result)
            answer = result = None    # what a big answer held goes before the next read
            log(f"{who}: {op} {_brief(args)} -> {n} in {time.monotonic() - t0:.3f} s")

    @staticmethod
    def _answer(f, obj):
        try:
            protocol.send(f, obj)
        except OSError:
            pass

    @staticmethod
    def _peer(conn, remote):
        try:
            return str(conn.getpeername()) if remote else "local caller"
        except OSError:
            return "a caller"


def _drain(conn):
    """After an over-long line: the answer is sent; what the caller still sends is read
    (1 MiB and 2 s at most) and dropped, so that closing resets nothing before the caller
    read the answer."""
    try:
        conn.shutdown(socket.SHUT_WR)
        conn.settimeout(2.0)
        left = 1 << 20
        while left > 0:
            data = conn.recv(min(left, 65536))
            if not data:
                break
            left -= len(data)
    except OSError:
        pass


def _brief(args):
    return " ".join(f"{k}={v!r}"[:80] for k, v in args.items() if v is not None)


def json_line(obj):
    import json
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def _give_back_memory():
    """Hand the heap's free pages back to the system (glibc): a connection that read
    100,000 records leaves the process as large as it made it otherwise."""
    global _trim
    if _trim is None:
        try:
            import ctypes
            _trim = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):
            _trim = False
    if _trim:
        _trim(0)


_trim = None


def listen_unix(path):
    """The listening Unix socket `path`, which every local user may connect to."""
    if os.path.exists(path):
        probe = socket.socket(socket.AF_UNIX)
        try:
            probe.connect(path)
            raise OSError(f"{path}: another service answers there")
        except (ConnectionRefusedError, FileNotFoundError):
            os.unlink(path)          # left behind by a service that is gone
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(path)
        os.chmod(path, 0o666)        # who connects is known by the kernel, not the mode
        sock.listen(socket.SOMAXCONN)
    except OSError:
        sock.close()
        raise
    return sock, False


def listen_tcp(address):
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, int(port)))
        sock.listen(socket.SOMAXCONN)
    except OSError:
        sock.close()
        raise
    return sock, True


def run(service, listeners, ready=None):
    """Serve until SIGTERM or SIGINT."""
    import signal
    stop = threading.Event()
    room = gate.descriptor_room() - 2 * service.most - 64
    door = gate.Gate(listeners, service.admit, service.hello, log,
                     pending=max(64, min(gate.MAX_PENDING, room)))

    def stopping(*_):
        stop.set()
        door.stop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stopping)
    if ready:
        ready()
    door.run(stop.is_set)
    door.close()
    for sock, _remote in listeners:
        sock.close()
