"""The durable spool: the per-job sampler appends line protocol to its own file in the
node's spool directory; `jobmon ship` sends it on. Standard library only, no network.

Spool directory (made by the shipper, see jobmon.ship.spooldir.prepare_spool): owned by the
shipper's user and group, mode 3733 -- any job user may create a file but not list the
directory; the sticky bit stops users deleting or renaming each other's files; setgid
gives every file the shipper's group, so the shipper reads files a job makes mode 0640.

One file per job run, created O_EXCL|O_NOFOLLOW under a hidden name, made readable by the
shipper's group and locked, and only then renamed to its *.lp name (so the shipper never
sees it half set up); it stays under an exclusive flock for as long as the sampler lives:
the shipper knows a file is finished when it can take the lock.
Every file starts with the job's own point. Every point is one os.write() of whole lines
on an O_APPEND descriptor; a write that fails half-way is cut back off (ftruncate), and a
line torn by a crash has no final newline, which the shipper detects and skips.

A full disk loses nothing silently. Points the spool cannot take wait in memory (up to
PENDING_MAX_BYTES) and go out with the next write that fits; beyond that they are counted,
and the count goes into the job's end point (`lost_points`). The end point itself has room
kept for it from the start: a second file, `<name>.end.lp`, allocated MAX_LINE_BYTES of
zeros and locked like the first. At the end the sampler appends its end point to the main
file and deletes the reserve; if the disk is full, it writes the end point over the
reserve's zeros (no new blocks needed), after as many of the waiting points as fit, and
the shipper sends those lines like any other (zeros after the last line are never sent: a
reserve not used up). A job that had no room even for that (the disk was full when it
started) renames its file `<name>.lost<N>.lp`, and the shipper counts the N points.
"""
import errno
import fcntl
import os
import time

from .interface import Sink
from ..influx import schema

SUFFIX = ".lp"
RESERVE_SUFFIX = ".end" + SUFFIX
LOST_MARK = ".lost"      # <name>.lost<N>.lp: a finished file whose job lost N points
PENDING_MAX_BYTES = 256 << 10   # ~600 samples kept in memory while the disk is full
NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class SpoolError(Exception):
    pass


def file_name(start_ns, uid, pid, nonce):
    return f"{start_ns}.{uid}.{pid}.{nonce}{SUFFIX}"


class SpoolSink(Sink):
    # its summary becomes the job's InfluxDB point, which dashboards read as it is: the
    # session writes the advice into it (readers of other stores compute their own)
    ships = True

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
        self.head = b""           # the job's own point, first line of every file
        self.pending = []         # lines the disk had no room for yet, oldest first
        self.pending_bytes = 0
        self.lost = 0             # points the spool never took
        self.complained = -1      # self.lost when the last warning was raised
        self.reserve_fd = None    # room kept for the end point
        self.can_reserve = True
        self.error = None         # why the last write failed

    def open(self, job):
        self.job = job
        self.tags = schema.job_tags(job)
        if os.geteuid() == 0 and job.get("user") not in (None, "", "root"):
            # root sampling another user's job (kept as root, out of that user's reach):
            # the shipper lets root's own files say whose job it is, nobody else's
            self.tags["user"] = job["user"]
        self.head = schema.job_line(job, tags=self.tags).encode()
        self._create()
        self._append(self.head)   # a full disk keeps it pending; the job starts anyway

    def write(self, sample):
        if not self._append(schema.sample_line(self.tags, sample).encode()):
            self._complain()

    def procs(self, record):
        if not self._append(schema.procs_line(self.tags, record).encode()):
            self._complain()

    def close(self, summary):
        saved = named = False
        try:
            if self.pending and self._put(b"".join(self.pending)):
                self.pending = []
            if not self.pending and self._put(self._end_line(summary)):
                os.fsync(self.fd)
                saved = "spool"
            elif self._fill_reserve(summary):
                saved = "reserve"
            else:   # not one byte more fits: the file's name carries the count
                self.lost += len(self.pending) + 1    # and the end-of-job record
                named = self._name_loss()
        finally:
            os.close(self.fd)   # releases the lock: the file is finished
            self.fd = None
            self._release_reserve(keep=saved == "reserve")
        if not saved:
            raise SpoolError(
                f"the spool is full ({self.error}): {self.lost} point(s) of this job, its "
                f"end-of-job record among them, could not be spooled; " + (
                    "the shipper counts them against the user whose data filled it (or "
                    "this job's), and marks the job ended if its first point was spooled"
                    if named else "nothing could record the loss"))
        if self.lost:
            raise SpoolError(f"{self.lost} point(s) could not be spooled ({self.error}); "
                             f"counted in the job's lost_points")

    def _end_line(self, summary, unsaved=0):
        return schema.job_line(self.job, summary, self.lost + unsaved, self.tags).encode()

    def _name_loss(self):
        """Rename the job's file to say how many points it lost (a rename needs no data
        block): the shipper counts them even when not one byte could be written."""
        try:
            os.rename(self.path, f"{self.path[:-len(SUFFIX)]}{LOST_MARK}{self.lost}{SUFFIX}")
            return True
        except OSError:
            return False

    # --- files ---
    def _create(self):
        self.fd, self.path = self._new_file(SUFFIX)
        self.size = 0

    def _new_file(self, suffix, append=True):
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        if append:
            flags |= os.O_APPEND
        for _ in range(5):
            name = file_name(time.time_ns(), os.getuid(), os.getpid(), os.urandom(4).hex())
            path = os.path.join(self.dir, name[:-len(SUFFIX)] + suffix)
            tmp = os.path.join(self.dir, f".{name}.new")
            try:
                fd = os.open(tmp, flags, 0o640)
            except FileExistsError:
                continue   # somebody planted that name: take another
            except OSError as e:
                self.error = e.strerror
                break
            try:
                os.fchmod(fd, 0o640)   # whatever the job's umask: the shipper's group reads it
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.rename(tmp, path)   # another user's file of that name: refused (sticky)
                return fd, path
            except OSError:
                os.close(fd)
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
        why = self.error or "every name taken"
        raise SpoolError(f"cannot create a spool file in {self.dir} ({why}): this job's "
                         f"points are not kept, and nothing counts them")

    def _reserve(self):
        """Keep room for the end point (retried while the disk is full)."""
        try:
            fd, path = self._new_file(RESERVE_SUFFIX, append=False)   # pwrite at 0
        except (OSError, SpoolError):
            return
        try:
            os.posix_fallocate(fd, 0, schema.MAX_LINE_BYTES)
        except OSError as e:
            os.unlink(path)
            os.close(fd)
            self.can_reserve = e.errno in NO_ROOM   # else the filesystem cannot do it
            return
        self.reserve_fd, self.reserve_path = fd, path

    def _fill_reserve(self, summary):
        """Write the end point over the reserve's zeros, after as many of the points still
        waiting as fit before it (the zeros after them stay: cutting them off would hand
        the room to whoever writes next, not to the other jobs' ends)."""
        fd = self.reserve_fd
        if fd is None or os.fstat(fd).st_nlink == 0:
            return False
        room = schema.MAX_LINE_BYTES - len(self._end_line(summary, len(self.pending)))
        kept = 0
        while kept < len(self.pending) and len(self.pending[kept]) <= room:
            room -= len(self.pending[kept])
            kept += 1
        line = self._end_line(summary, len(self.pending) - kept)
        try:
            os.pwrite(fd, b"".join(self.pending[:kept]) + line, 0)
            os.fsync(fd)
        except OSError as e:
            self.error = e.strerror
            return False
        self.lost += len(self.pending) - kept
        self.pending = []
        return True

    def _release_reserve(self, keep):
        if self.reserve_fd is None:
            return
        if not keep:
            try:
                os.unlink(self.reserve_path)
            except OSError:
                pass
        os.close(self.reserve_fd)
        self.reserve_fd = None

    # --- writing ---
    def _append(self, data):
        """Spool one line, after any still pending. False when it had to wait."""
        if self.reserve_fd is None and self.can_reserve:
            self._reserve()
        if self.pending:
            self.pending.append(data)
            self.pending_bytes += len(data)
            if not self._put(b"".join(self.pending)):
                if self.pending_bytes > PENDING_MAX_BYTES:   # the newest one goes
                    self.pending.pop()
                    self.pending_bytes -= len(data)
                    self.lost += 1
                return False
            self.pending, self.pending_bytes = [], 0
            return True
        if self._put(data):
            return True
        self.pending, self.pending_bytes = [data], len(data)
        return False

    def _put(self, data):
        """Append data to the job's file. False when the disk had no room."""
        if self.size == 0 and not data.startswith(self.head):
            data = self.head + data
        if not self._write(data):
            return False
        if os.fstat(self.fd).st_nlink == 0:
            # The shipper dropped this file (spool over its limit) and counted the points it
            # held; this write may have come after the count. Go on in a new file, which
            # starts with the job's own point again, and keep the room for the end point.
            try:
                fd, path = self._new_file(SUFFIX)
            except (OSError, SpoolError) as e:
                self.error = str(e)
                return False     # the data waits for a file
            os.close(self.fd)
            self.fd, self.path, self.size = fd, path, 0
            if self.reserve_fd is not None and os.fstat(self.reserve_fd).st_nlink == 0:
                self._release_reserve(keep=True)
            return self._write(self.head + data)
        return True

    def _write(self, data):
        try:
            n = os.write(self.fd, data)
        except OSError as e:   # no room, or the disk failed: the data waits either way
            self.error, n = e.strerror, -1
        if n != len(data):   # nothing or part of it went out: cut the part off
            if n >= 0:
                self.error = f"short write ({n} of {len(data)} bytes)"
            try:
                os.ftruncate(self.fd, self.size)
            except OSError:
                pass
            return False
        self.size += n
        return True

    def _complain(self):
        """One warning when points start waiting, one each time some are lost."""
        if self.lost == self.complained:
            return
        first = self.complained < 0
        self.complained = self.lost
        if first and not self.lost:
            raise SpoolError(f"cannot write to the spool ({self.error}); keeping points "
                             f"in memory until there is room")
        if self.lost:
            raise SpoolError(f"spool full ({self.error}): {self.lost} point(s) lost so far")
