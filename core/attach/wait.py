"""Waiting in the attach mode: for a job's cgroup to appear, for the word to stop (a
signal through a self-pipe), for a job's processes to exit (pidfds); and the environment
of a job's process. Standard library only."""
import os
import select
import time

# waiting for the cgroup: every 5 ms for the first 2 s (a job's cgroup appears within
# milliseconds of the Prolog's end, and a short job's is gone soon after), then slower
POLL_FAST, POLL_FAST_SECONDS, POLL_MAX = 0.005, 2.0, 0.25


class Stop:
    """How the sampler is told to end: a readable fd (a self-pipe its signal handler
    writes to) and the job's wait status, when the teller knows it."""

    def __init__(self, fd=None, status=lambda: None):
        self.fd, self.status = fd, status
        self.asked = False

    def poll_item(self):
        return self.fd

    def drain(self):
        if self.fd is None:
            return
        try:
            if os.read(self.fd, 64):
                self.asked = True
        except BlockingIOError:
            pass


def wait(fds, timeout, events=None):
    """poll() on fds (POLLIN) and events ({fd: mask}) for up to `timeout` seconds;
    returns the fds that fired."""
    p = select.poll()
    for fd in fds:
        if fd is not None:
            p.register(fd, select.POLLIN)
    for fd, mask in (events or {}).items():
        p.register(fd, mask)
    return [fd for fd, _ in p.poll(max(timeout, 0) * 1000)]


def wait_for_cgroup(find, limit, stop):
    """The job's cgroups once they exist, or None (limit passed, or told to stop)."""
    t0 = time.monotonic()
    deadline = t0 + limit
    delay = POLL_FAST
    while True:
        try:
            cg = find()
        except OSError:
            cg = None
        if cg is not None:
            return cg
        left = deadline - time.monotonic()
        if left <= 0 or stop.asked:
            return None
        if wait([stop.fd], min(delay, left)):
            stop.drain()
        if time.monotonic() - t0 > POLL_FAST_SECONDS:
            delay = min(delay * 2, POLL_MAX)


def proc_environ(pid):
    """{name: value} of a process's environment as it was exec'd, or {} if unreadable."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        return {}
    out = {}
    for item in data.split(b"\0"):
        k, sep, v = item.partition(b"=")
        if sep:
            out[k.decode(errors="replace")] = v.decode(errors="replace")
    return out
