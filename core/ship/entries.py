"""What is in the spool directory, as the kernel reports it: never following a link,
never opening a FIFO or a device, never reading more than a file really holds.

Every user can create entries in the spool, so nothing here trusts a name, a size or a
type: sizes are the blocks a file really occupies (a sparse file's holes cost nothing and
count nothing), every entry costs at least one block (so a user cannot hold the spool
with empty files), and the owner is the uid the kernel gives.
"""
import errno
import os
import stat

ENTRY_BYTES = 4096          # what an entry costs at least: a block and an inode
COUNT_BUDGET = 64 << 20     # bytes of one file read to count its lines; beyond, estimated
QUARANTINE = ".quarantine"


def real_bytes(st):
    """Bytes a file really holds: its size, or less where it has holes (sparse)."""
    return min(st.st_size, st.st_blocks * 512)


def charged(st):
    """What an entry counts against its owner's share and the spool's limit."""
    return max(real_bytes(st) if stat.S_ISREG(st.st_mode) else 0, ENTRY_BYTES)


def kind(st):
    m = st.st_mode
    return ("file" if stat.S_ISREG(m) else "directory" if stat.S_ISDIR(m) else
            "symlink" if stat.S_ISLNK(m) else "FIFO" if stat.S_ISFIFO(m) else
            "socket" if stat.S_ISSOCK(m) else "device")


class Entry:
    """One spool entry: anything in the spool or in its quarantine. `stray`: not a spool
    file's name (a job user's leftover, or a directory set aside)."""

    __slots__ = ("name", "path", "st", "quarantined", "stray")

    def __init__(self, name, path, st, quarantined, stray):
        self.name, self.path, self.st = name, path, st
        self.quarantined, self.stray = quarantined, stray

    @property
    def uid(self):
        return self.st.st_uid

    @property
    def charged(self):
        return charged(self.st)

    @property
    def droppable(self):
        """Can the shipper remove it? Not a directory (it cannot empty another user's)."""
        return not stat.S_ISDIR(self.st.st_mode)


def listing(spool, suffix):
    """Every entry of the spool and of its quarantine, lstat'ed: whatever a user leaves in
    the spool counts against them."""
    out = []
    for where, quarantined in ((spool, False), (os.path.join(spool, QUARANTINE), True)):
        try:
            with os.scandir(where) as it:
                names = [e.name for e in it if quarantined or e.name != QUARANTINE]
        except OSError:
            continue
        for name in names:
            path = os.path.join(where, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue   # gone meanwhile
            out.append(Entry(name, path, st, quarantined,
                             not quarantined and not name.endswith(suffix)))
    return out


def open_regular(path):
    """(fd, fstat) of a regular file, opened without following a link or blocking on a
    FIFO; None for anything else or anything gone."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return fd, st


def count_lines(fd, start, end, budget=COUNT_BUDGET):
    """(newlines in [start, end) of a regular file, exact?). Reads only the file's data,
    never the holes of a sparse file, and at most `budget` bytes; the rest is estimated
    from what was read."""
    count = done = 0
    pos = start
    while pos < end and done < budget:
        try:
            pos = os.lseek(fd, pos, os.SEEK_DATA)
            hole = os.lseek(fd, pos, os.SEEK_HOLE)
        except OSError as e:
            if e.errno == errno.ENXIO:
                break               # no data after pos
            hole = end              # no SEEK_DATA here: all of it is data
        stop = min(hole, end, pos + budget - done)
        while pos < stop:
            chunk = os.pread(fd, min(1 << 20, stop - pos), pos)
            if not chunk:
                return count, True  # shorter than it was: what is left is counted
            count += chunk.count(b"\n")
            done += len(chunk)
            pos += len(chunk)
    if pos >= end or done < budget:
        return count, True
    data = min(end - start, real_bytes(os.fstat(fd)))
    return count + int(count / done * max(data - done, 0)), False
