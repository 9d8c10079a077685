"""The node GPU reader as a service: refresh every `period` seconds, publish atomically.

One reader per node, run by the site as its own user (deploy/jobmon-gpu-reader.service),
outside every job: NVML's ~19 MiB and its CPU are charged to no job. The published file
is replaced by rename, so jobs read either the old snapshot or the new one, never a mix.
A refresh that fails as a whole (NVML lost the GPUs) publishes nothing: the file ages,
and after two periods the jobs stop using it (they never get guesses).
"""
import fcntl
import json
import logging
import os
import time

from ..probes.gpu_published import FILE, Untrusted, trusted_dir
from ..probes.nvml import NvmlError
from .collect import snapshot

log = logging.getLogger("jobmon.gpu")


GIVE_UP_AFTER = 30     # failed refreshes in a row: exit, to be restarted with NVML anew


class ReaderError(Exception):
    pass


def prepare(directory):
    """The directory, made if missing, owned by this user and writable by it alone;
    a warning when jobs will not trust it (its ancestry is not root's alone)."""
    try:
        os.makedirs(directory, mode=0o755, exist_ok=True)
        st = os.stat(directory)
    except OSError as e:
        raise ReaderError(f"{directory}: {e.strerror}")
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise ReaderError(f"{directory} must belong to this user (uid {os.geteuid()}) and be "
                          "writable by it alone, or jobs will not trust what it holds")
    try:
        os.close(trusted_dir(directory)[0])
    except (Untrusted, OSError) as e:
        log.warning("jobs will not trust %s: %s", directory, e)


class GpuReader:
    def __init__(self, source, directory, period=1.0, proc="/proc", clock=time.monotonic):
        prepare(directory)
        self.source = source
        self.dir = directory
        self.path = os.path.join(directory, FILE)
        self.period = period
        self.proc = proc
        self.clock = clock
        self.seq = 0
        self.last_energy = {}
        self.failures = 0
        # one reader per directory: a second would publish over the first
        self.lock = os.open(os.path.join(directory, ".lock"),
                            os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self.lock)
            raise ReaderError(f"another GPU reader publishes in {directory}")

    def refresh(self):
        """Read every GPU and publish. False when NVML failed as a whole (logged)."""
        self.seq += 1
        try:
            snap = snapshot(self.source, self.last_energy, self.period, self.seq,
                            self.proc, self.clock)
        except NvmlError as e:
            self.failures += 1
            if self.failures == 1 or self.failures % 60 == 0:
                log.error("NVML failed (%s); nothing published, jobs stop using the "
                          "last snapshot after two periods", e)
            return False
        if self.failures:
            log.info("NVML answers again after %d failed refreshes", self.failures)
            self.failures = 0
        self.publish(snap)
        return True

    def publish(self, snap):
        """JSON lines: the header, then one line per GPU (a job parses its own only)."""
        head = {k: v for k, v in snap.items() if k != "gpus"}
        lines = [head] + snap["gpus"]
        data = "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines).encode()
        tmp = os.path.join(self.dir, f".{FILE}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644)
        try:
            os.fchmod(fd, 0o644)        # whatever the umask: readable by jobs, theirs to trust
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, self.path)

    def run(self, stopping):
        """Refresh on a fixed grid of the monotonic clock until stopping() is true; a refresh
        that overruns skips grid points instead of running late ones back to back."""
        start = self.clock()
        n = 0
        while not stopping():
            self.refresh()
            if self.failures >= GIVE_UP_AFTER:
                raise ReaderError(f"NVML failed {self.failures} times in a row; exiting so "
                                  "that the service starts a reader with NVML anew")
            n = max(n + 1, int((self.clock() - start) / self.period) + 1)
            delay = start + n * self.period - self.clock()
            while delay > 0 and not stopping():
                time.sleep(min(delay, 0.2))
                delay = start + n * self.period - self.clock()

    def close(self, keep=False):
        """Take the snapshot away (unless keep): jobs see the reader gone at once, not two
        periods later."""
        if not keep:
            try:
                os.unlink(self.path)
            except OSError:
                pass
        os.close(self.lock)
        self.source.close()
