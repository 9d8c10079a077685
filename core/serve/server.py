"""`jobmon serve`: answers the read operations of jobmon.serve.protocol for whoever
connects, each inside their scope, with the read credential only the service holds.

Local callers connect to a Unix socket and are known by the kernel's peer credentials;
remote ones connect over TCP and prove who they are with a MUNGE credential made for the
connection. A connection is one caller: its own store handle and record handles."""
import os
import socket
import socketserver
import sys
import threading
import time

from . import identity, protocol
from .scoped import NotFound, ScopedStore

IDLE_SECONDS = 300         # a connection silent this long is closed


def log(text):
    print(f"jobmon serve: {text}", file=sys.stderr, flush=True)


class Service:
    """open_store(): a store for one connection; policy: jobmon.serve.policy.Policy;
    munge: jobmon.serve.munge.Munge, for TCP callers; store_errors: what a store raises
    when its server fails (answered as such, the connection kept)."""

    def __init__(self, open_store, policy, munge=None, store_errors=()):
        self.open_store, self.policy, self.munge = open_store, policy, munge
        self.store_errors = tuple(store_errors)

    def handle(self, conn, remote):
        conn.settimeout(IDLE_SECONDS)
        f = conn.makefile("rwb")
        nonce = identity.new_nonce() if remote else None
        try:
            protocol.send(f, {"service": "jobmon", "version": protocol.VERSION,
                              **({"nonce": nonce} if remote else {})})
            who = self.authenticate(conn, f, nonce)
        except identity.Refused as e:
            log(f"refused {self._peer(conn, remote)}: {e}")
            self._answer(f, {"error": str(e), "kind": "refused"})
            return
        except (OSError, protocol.BadRequest):
            return
        scope = self.policy.scope(who)
        protocol.send(f, {"user": who.user, "reads": scope.describe()})
        scoped = ScopedStore(self.open_store(), scope)
        try:
            self.serve(f, who, scoped)
        except OSError:
            pass     # the caller went away

    def authenticate(self, conn, f, nonce):
        hello = protocol.receive(f, protocol.MAX_REQUEST_BYTES) or {}
        if nonce is None:
            return identity.peer(conn)
        if self.munge is None:
            raise identity.Refused("this service takes no remote callers")
        cred = hello.get("munge")
        if not isinstance(cred, str):
            raise identity.Refused("no MUNGE credential")
        return identity.from_munge(self.munge, cred, nonce)

    def serve(self, f, who, scoped):
        while True:
            try:
                request = protocol.receive(f, protocol.MAX_REQUEST_BYTES)
                if request is None:
                    return
                op, args = protocol.arguments(request)
            except protocol.BadRequest as e:
                self._answer(f, {"error": str(e), "kind": "bad-request"})
                continue
            t0 = time.monotonic()
            try:
                result = getattr(scoped, op)(**args)
                answer = {"result": result}
            except NotFound as e:
                answer = {"error": str(e), "kind": "not-found"}
            except self.store_errors as e:
                answer = {"error": str(e), "kind": "store"}
            except Exception as e:     # a fault of the service: say so, keep serving
                log(f"{who}: {op} failed: {type(e).__name__}: {e}")
                answer = {"error": "the service failed to answer (see its log)",
                          "kind": "internal"}
            protocol.send(f, answer)
            n = len(result) if "result" in answer else answer["kind"]
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


def _brief(args):
    return " ".join(f"{k}={v!r}"[:80] for k, v in args.items() if v is not None)


def _handler(service, remote):
    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            service.handle(self.request, remote)
    return Handler


class _Unix(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class _TCP(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def listen_unix(service, path):
    """A server on the Unix socket `path` that every local user may connect to."""
    if os.path.exists(path):
        probe = socket.socket(socket.AF_UNIX)
        try:
            probe.connect(path)
            raise OSError(f"{path}: another service answers there")
        except (ConnectionRefusedError, FileNotFoundError):
            os.unlink(path)          # left behind by a service that is gone
        finally:
            probe.close()
    server = _Unix(path, _handler(service, remote=False))
    os.chmod(path, 0o666)            # who connects is known by the kernel, not the mode
    return server


def listen_tcp(service, address):
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server_class = type("TCPServer", (_TCP,), {"address_family": family})
    return server_class((host, int(port)), _handler(service, remote=True))


def run(servers, ready=None):
    """Serve until SIGTERM or SIGINT."""
    import signal
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for t in threads:
        t.start()
    if ready:
        ready()
    stop.wait()
    for s in servers:
        s.shutdown()
        s.server_close()
