"""The read interface of jobmon.stores, answered by `jobmon serve`: what `jobmon query`,
`list`, `report` and `pilot` read when [service] address is set. The caller needs no
credential of the database, only to be who they are."""
import socket

from ..stores import Store
from . import protocol


class ServiceError(Exception):
    pass


class ServiceDown(ServiceError):
    pass


class _ClosedEarly(Exception):
    pass


def parse_address(address):
    """("unix", path) for a path, ("tcp", (host, port)) for HOST:PORT."""
    from ..config.validate import address_problem
    problem = address_problem(address)
    if problem:
        raise ServiceError(f"[service] address {problem}")
    if address.startswith("/"):
        return "unix", address
    host, _, port = address.rpartition(":")
    return "tcp", (host.strip("[]"), int(port))


class RemoteStore(Store):
    def __init__(self, address, munge_socket="", timeout=30.0, command=None):
        """command: what the caller runs ("query"), which the service's read log keeps."""
        self.address, self.munge_socket, self.timeout = address, munge_socket, timeout
        self.command = command
        self.kind, self.where = parse_address(address)
        self.f = None
        self.user = self.reads = None

    def _connect(self, attempts=3):
        """Connect and identify. A connection the service closes before the caller could
        identify (it closes the oldest of a peer's unidentified connections when more
        come: on a shared host, other users' floods) is tried again, twice."""
        for attempt in range(attempts):
            try:
                return self._connect_once()
            except _ClosedEarly as e:
                if attempt == attempts - 1:
                    raise ServiceDown(str(e))
                import time
                time.sleep(0.05 * (attempt + 1))

    def _connect_once(self):
        try:
            if self.kind == "unix":
                sock = _connect_unix(self.where, self.timeout)
            else:
                sock = socket.create_connection(self.where, timeout=self.timeout)
            f = sock.makefile("rwb")
            hello = protocol.receive(f)
        except (OSError, protocol.BadRequest) as e:
            raise ServiceDown(f"the read service at {self.address} is down ({_why(e)})")
        if not hello or hello.get("service") != "jobmon":
            raise ServiceDown(f"{self.address} is not a jobmon read service")
        auth = {}
        if "nonce" in hello:
            from .munge import Munge, MungeError
            try:
                auth["munge"] = Munge(self.munge_socket).encode(hello["nonce"].encode())
            except MungeError as e:
                raise ServiceError(f"cannot make a MUNGE credential for the read service: {e}")
        try:
            who = self._exchange(f, auth)
        except ServiceDown as e:
            f.close()
            raise _ClosedEarly(str(e))
        if "error" in who:
            raise ServiceError(f"the read service at {self.address} refused: {who['error']}")
        self.f, self.user, self.reads = f, who.get("user"), who.get("reads")

    def _exchange(self, f, obj):
        try:
            protocol.send(f, obj)
            answer = protocol.receive(f)
        except (OSError, protocol.BadRequest) as e:
            raise ServiceDown(f"the read service at {self.address} stopped answering "
                              f"({_why(e)})")
        if answer is None:
            raise ServiceDown(f"the read service at {self.address} closed the connection")
        return answer

    def call(self, op, **args):
        if self.f is None:
            self._connect()
        request = {"op": op, "args": args}
        if self.command:
            request["command"] = self.command
        answer = self._exchange(self.f, request)
        if "error" in answer:
            raise ServiceError(f"the read service: {answer['error']}")
        return answer["result"]

    def close(self):
        if self.f is not None:
            self.f.close()
            self.f = None

    # --- the read interface (jobmon.stores.Store) ---
    def jobs(self, limit=20, user=None):
        return self.call("jobs", limit=int(limit), user=user)

    def records(self, ref, user=None):
        return self.call("records", user=user, ref={
            "text": ref.text, "exact": list(ref.exact), "prefixes": list(ref.prefixes),
            "global_id": ref.global_id})

    def summaries(self, since=None, until=None, user=None, fields=None):
        return self.call("summaries", since=since, until=until, user=user,
                         fields=None if fields is None else sorted(fields))

    def samples(self, record):
        return self.call("samples", handle=record["_handle"])

    def breakdowns(self, record, last=None):
        return self.call("breakdowns", handle=record["_handle"], last=last)

    def actions(self, since=None, jobs=None):
        return self.call("actions", since=since, jobs=None if jobs is None else sorted(jobs))

    def readers(self, ref, user=None):
        """Who read the job (the service's read log): {"days", "reads": [...]}."""
        return self.call("readers", user=user, ref={
            "text": ref.text, "exact": list(ref.exact), "prefixes": list(ref.prefixes),
            "global_id": ref.global_id})


def _connect_unix(path, timeout):
    """A connected Unix socket. A full backlog answers a connect with a timeout EAGAIN at
    once (others may be connecting faster than the service takes them): tried again
    until the timeout, as a TCP connect would wait."""
    import time
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        sock = socket.socket(socket.AF_UNIX)
        sock.settimeout(timeout)
        try:
            sock.connect(path)
            return sock
        except BlockingIOError:
            sock.close()
            if time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
        except OSError:
            sock.close()
            raise


def _why(e):
    return e.strerror or str(e) if isinstance(e, OSError) else str(e)
