"""The node reader as a service: refresh every source every `period` seconds, publish each
one's file atomically.

One reader per node, run by the site as root (deploy/jobmon-node-reader.service), outside
every job: what needs privileges (RAPL's energy counters, loading a BPF program) or costs
memory (NVML's ~19 MiB) is done once per node and charged to no job. Each file is
replaced by rename, so jobs read either the old version or the new one, never a mix. A
source with nothing to publish this time leaves its file as it was: it ages, and after
two periods the jobs stop using it (they never get guesses).
"""
import fcntl
import logging
import os
import time

from ..probes.gpu_published import Untrusted, trusted_dir
from .gpus import SourceError

log = logging.getLogger("jobmon.node")


class ReaderError(Exception):
    pass


def prepare(directory):
    """The directory, made if missing, owned by this user and writable by it alone;
    a warning when jobs will not trust it (its ancestry is not root's alone). A relative
    path is refused: it would be made wherever the reader was started, and jobs name the
    directory absolutely ($JOBMON_NODE_DIR)."""
    if not os.path.isabs(directory):
        raise ReaderError(f"--dir {directory!r} must be an absolute path (jobs find it as "
                          "$JOBMON_NODE_DIR, from their own working directory)")
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


class NodeReader:
    """sources: objects with `file` (the name they publish), refresh(seq) -> the file's
    bytes or None, and close()."""

    def __init__(self, sources, directory, period=1.0, clock=time.monotonic):
        prepare(directory)
        self.sources = list(sources)
        self.dir = directory
        self.period = period
        self.clock = clock
        self.seq = 0
        self.failed = {}       # file -> refreshes in a row its source failed
        # one reader per directory: a second would publish over the first
        self.lock = os.open(os.path.join(directory, ".lock"),
                            os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self.lock)
            raise ReaderError(f"another node reader publishes in {directory}")

    def path(self, source):
        return os.path.join(self.dir, source.file)

    def refresh(self):
        """Refresh and publish every source; True when each published."""
        self.seq += 1
        published = 0
        for src in self.sources:
            try:
                data = src.refresh(self.seq)
            except SourceError as e:
                raise ReaderError(str(e))
            except Exception as e:     # one source failing leaves the others publishing
                data = None
                failed = self.failed[src.file] = self.failed.get(src.file, 0) + 1
                if failed == 1 or failed % 60 == 0:
                    log.error("%s: nothing published (%s: %s); jobs stop using it after two "
                              "periods", src.file, type(e).__name__, e)
            else:
                if self.failed.pop(src.file, None):
                    log.info("%s: published again", src.file)
            if data is not None:
                self.publish(src.file, data)
                published += 1
        return published == len(self.sources)

    def publish(self, name, data):
        tmp = os.path.join(self.dir, f".{name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644)
        try:
            os.fchmod(fd, 0o644)        # whatever the umask: readable by jobs, theirs to trust
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, os.path.join(self.dir, name))

    def run(self, stopping):
        """Refresh on a fixed grid of the monotonic clock until stopping() is true; a refresh
        that overruns skips grid points instead of running late ones back to back."""
        start = self.clock()
        n = 0
        while not stopping():
            self.refresh()
            n = max(n + 1, int((self.clock() - start) / self.period) + 1)
            delay = start + n * self.period - self.clock()
            while delay > 0 and not stopping():
                time.sleep(min(delay, 0.2))
                delay = start + n * self.period - self.clock()

    def close(self, keep=False):
        """Take the files away (unless keep): jobs see the reader gone at once, not two
        periods later."""
        for src in self.sources:
            if not keep:
                try:
                    os.unlink(self.path(src))
                except OSError:
                    pass
            src.close()
        os.close(self.lock)
