"""The service's door: one thread accepts every connection and holds it, without a thread
of its own, until the caller has said who it is -- or IDENTIFY_SECONDS have passed, or
more of the same peer came after it (docs/security.md, "The read service under load").

A connection not yet identified costs a descriptor and a few bytes. Each peer -- a uid on
the Unix socket (the kernel says it at once), an address over TCP -- holds at most
PENDING_PER_PEER of them: its next one closes its oldest, so a flood from one peer only
ever closes its own. Where all peers together hold `pending` (sized to the descriptors
the process may open), the oldest of the peer holding most is closed. When the process
runs out of descriptors, accepting pauses for PAUSE_SECONDS (never a loop that spins on
the error) and an unidentified connection is closed to make room.

A connection whose first line has come is handed to `admit(conn, remote, peer, line,
nonce)` in the accepting thread; admit() decides whether it gets a thread."""
import collections
import errno
import os
import selectors
import socket
import struct
import time

IDENTIFY_SECONDS = 5.0       # from connecting to the end of the caller's first line
PENDING_PER_PEER = 256
MAX_PENDING = 4096
MAX_HELLO_BYTES = 16 << 10   # {"munge": CREDENTIAL}: a credential is well under 1 KiB
PAUSE_SECONDS = 0.25
OUT_OF_DESCRIPTORS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


class Pending:
    __slots__ = ("conn", "fd", "remote", "peer", "nonce", "deadline", "buf", "done")

    def __init__(self, conn, remote, peer, nonce, deadline):
        self.conn, self.remote, self.peer, self.nonce = conn, remote, peer, nonce
        self.fd, self.deadline, self.buf, self.done = conn.fileno(), deadline, b"", False


def peer_of(conn, remote, address):
    """Who a connection's limits are counted against: ("uid", N) on the Unix socket, by
    the kernel's peer credentials; ("ip", ADDRESS) over TCP."""
    if remote:
        return ("ip", address[0] if isinstance(address, tuple) else str(address))
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return ("uid", struct.unpack("3i", creds)[1])


def descriptor_room():
    """The pending connections this process can hold beside its served ones: its soft limit
    of descriptors, raised to the hard one, less room for the callers it serves."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 1 << 16
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    return soft


class Gate:
    def __init__(self, listeners, admit, hello, log, pending=MAX_PENDING,
                 clock=time.monotonic):
        """listeners: [(listening socket, remote)]; hello(remote) -> (first line, nonce)."""
        self.listeners, self.admit, self.hello, self.log = listeners, admit, hello, log
        self.most, self.clock = pending, clock
        self.sel = selectors.DefaultSelector()
        self.waiting = {}                        # fd -> Pending
        self.by_peer = collections.defaultdict(collections.OrderedDict)   # peer -> {fd: 1}
        self.paused_until = None
        self.said = {}                           # what was logged, when (once a minute)
        self.closed = collections.Counter()      # why unidentified connections were closed
        r, self.wake_w = os.pipe()
        self.wake_r = r
        os.set_blocking(r, False)
        self.sel.register(r, selectors.EVENT_READ, "wake")
        for sock, remote in listeners:
            sock.setblocking(False)
            self.sel.register(sock, selectors.EVENT_READ, ("listen", remote))

    def run(self, stopped):
        while not stopped():
            timeout = IDENTIFY_SECONDS
            if self.waiting:
                timeout = min(timeout, max(0.0, min(p.deadline for p in
                                                    self.waiting.values()) - self.clock()))
            if self.paused_until is not None:
                timeout = min(timeout, max(0.0, self.paused_until - self.clock()))
            for key, _mask in self.sel.select(max(timeout, 0.01)):
                try:
                    self._event(key)
                except Exception as e:     # a fault here must not end the door
                    self._say("fault", f"the door: {type(e).__name__}: {e}")
                    if isinstance(key.data, Pending) and not key.data.done:
                        self._drop(key.data, "a fault of the service")
            self._expire()
            if self.paused_until is not None and self.clock() >= self.paused_until:
                self._resume()

    def _event(self, key):
        if key.data == "wake":
            try:
                os.read(self.wake_r, 512)
            except OSError:
                pass
        elif isinstance(key.data, tuple):
            self._accept(key.fileobj, key.data[1])
        else:
            self._read(key.data)

    def stop(self):
        try:
            os.write(self.wake_w, b"x")
        except OSError:
            pass

    def _accept(self, sock, remote):
        for _ in range(256):          # what waits in the backlog, a bounded batch a turn
            try:
                conn, address = sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno in OUT_OF_DESCRIPTORS:
                    self._out_of_descriptors(e)
                elif e.errno not in (errno.ECONNABORTED, errno.EPROTO, errno.EPERM):
                    self._say("accept", f"accept failed: {e.strerror}")
                return
            try:
                self._take(conn, remote, address)
            except OSError:
                conn.close()

    def _take(self, conn, remote, address):
        peer = peer_of(conn, remote, address)
        conn.setblocking(False)
        line, nonce = self.hello(remote)
        conn.send(line)               # a few dozen bytes into an empty socket buffer
        p = Pending(conn, remote, peer, nonce, self.clock() + IDENTIFY_SECONDS)
        self.sel.register(p.fd, selectors.EVENT_READ, p)
        self.waiting[p.fd] = p
        mine = self.by_peer[peer]
        mine[p.fd] = 1
        if len(mine) > PENDING_PER_PEER:
            self._drop(self.waiting[next(iter(mine))], "more of the same peer came")
        if len(self.waiting) > self.most:
            busiest = max(self.by_peer.values(), key=len)
            self._drop(self.waiting[next(iter(busiest))], "too many callers waiting")

    def _read(self, p):
        if p.done:                    # closed by an earlier event of the same turn
            return
        try:
            data = p.conn.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            return self._drop(p, None)
        p.buf += data
        end = p.buf.find(b"\n")
        if end < 0:
            if len(p.buf) > MAX_HELLO_BYTES:
                self._drop(p, "a first line too long")
            return
        self._forget(p)
        line, rest = p.buf[:end + 1], p.buf[end + 1:]
        if rest:                      # the caller must wait for the answer to its first line
            p.conn.close()
            self.closed["spoke before its turn"] += 1
            return
        try:
            p.conn.setblocking(True)
            self.admit(p.conn, p.remote, p.peer, line, p.nonce)
        except Exception as e:        # never the door's end
            self._say("admit", f"cannot take a caller: {type(e).__name__}: {e}")
            p.conn.close()

    def _expire(self):
        now = self.clock()
        late = [p for p in self.waiting.values() if p.deadline <= now]
        for p in late:
            self._drop(p, f"not identified within {IDENTIFY_SECONDS:g} s")

    def _forget(self, p):
        fd, p.done = p.fd, True
        self.sel.unregister(fd)
        del self.waiting[fd]
        mine = self.by_peer[p.peer]
        del mine[fd]
        if not mine:
            del self.by_peer[p.peer]

    def _drop(self, p, why):
        self._forget(p)
        p.conn.close()
        if why:
            self.closed[why] += 1
            self._say("closed", f"closing unidentified connections: {dict(self.closed)} so "
                                f"far; {len(self.waiting)} waiting now")

    def _out_of_descriptors(self, e):
        self._say("fds", f"out of descriptors ({e.strerror}): accepting again in "
                         f"{PAUSE_SECONDS} s; {len(self.waiting)} callers not yet identified")
        if self.waiting:               # room for who comes next
            busiest = max(self.by_peer.values(), key=len)
            self._drop(self.waiting[next(iter(busiest))], "out of descriptors")
        for sock, _remote in self.listeners:
            self.sel.unregister(sock)
        self.paused_until = self.clock() + PAUSE_SECONDS

    def _resume(self):
        for sock, remote in self.listeners:
            self.sel.register(sock, selectors.EVENT_READ, ("listen", remote))
        self.paused_until = None

    def _say(self, what, text):
        now = self.clock()
        if now - self.said.get(what, -1e9) >= 60:
            self.said[what] = now
            self.log(text)

    def close(self):
        for p in list(self.waiting.values()):
            self._forget(p)
            p.conn.close()
        self.sel.close()
        for fd in (self.wake_r, self.wake_w):
            os.close(fd)
