"""The durable spool: the per-job sampler appends line protocol to its own file in the
node's spool directory; `jobmon ship` sends it on. Standard library only, no network.

Spool directory (made by the shipper, see jobmon.ship.spooldir.prepare_spool): owned by the
shipper's user and group, mode 3733 -- any job user may create a file but not list the
directory; the sticky bit stops users deleting or renaming each other's files; setgid
gives every file the shipper's group, so the shipper reads files a job makes mode 0640.

One file per job run, created O_EXCL|O_NOFOLLOW and held under an exclusive flock for as
long as the sampler lives: the shipper knows a file is finished when it can take the lock.
Every point is one os.write() of one whole line on an O_APPEND descriptor; a write that
fails half-way is cut back off (ftruncate), and a line torn by a crash has no final
newline, which the shipper detects and skips.
"""
import fcntl
import os
import time

from . import Sink
from ..influx import schema

SUFFIX = ".lp"


class SpoolError(Exception):
    pass


def file_name(start_ns, uid, pid, nonce):
    return f"{start_ns}.{uid}.{pid}.{nonce}{SUFFIX}"


class SpoolSink(Sink):
    def __init__(self, directory):
        st = os.stat(directory)   # never create it: one made by a job user is not trusted
        if not st.st_mode & 0o1000:
            raise SpoolError(f"spool dir {directory} is not set up (no sticky bit; run "
                             f"`jobmon ship` once as the shipper's user to prepare it)")
        self.dir = directory
        self.fd = None
        self.size = 0
        self.tags = None
        self.job = None

    def open(self, job):
        self.job = job
        self.tags = schema.job_tags(job)
        self._create()
        self._append(schema.job_line(job))

    def write(self, sample):
        self._append(schema.sample_line(self.tags, sample))

    def close(self, summary):
        try:
            self._append(schema.job_line(self.job, summary))
            os.fsync(self.fd)
        finally:
            os.close(self.fd)   # releases the lock: the file is finished
            self.fd = None

    def _create(self):
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        for _ in range(5):
            name = file_name(time.time_ns(), os.getuid(), os.getpid(), os.urandom(4).hex())
            try:
                self.fd = os.open(os.path.join(self.dir, name), flags, 0o640)
                break
            except FileExistsError:
                continue   # somebody planted that name: take another
        else:
            raise SpoolError(f"cannot create a spool file in {self.dir}")
        self.path = os.path.join(self.dir, name)
        self.size = 0
        os.fchmod(self.fd, 0o640)   # whatever the job's umask: the shipper's group reads it
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def _append(self, text):
        data = text.encode()
        self._write(data)
        if os.fstat(self.fd).st_nlink == 0:
            # The shipper dropped this file (spool over its limit) and counted the points it
            # held; this line may have come after the count. Go on in a new file, which
            # starts with the job's own point again.
            os.close(self.fd)
            self._create()
            self._write(schema.job_line(self.job).encode())
            self._write(data)

    def _write(self, data):
        try:
            n = os.write(self.fd, data)
        except OSError:
            n = -1
        if n != len(data):   # nothing or part of the line went out (disk full ...)
            try:
                os.ftruncate(self.fd, self.size)
            except OSError:
                pass
            raise SpoolError(f"spool write to {self.path} failed ({n} of {len(data)} bytes)")
        self.size += n
