"""What is in the spool directory, as the kernel reports it: never following a link,
never opening a FIFO or a device, never reading more than a file really holds.

Every user can create entries in the spool, so nothing here trusts a name, a size or a
type: sizes are the blocks a file really occupies (a sparse file's holes cost nothing and
count nothing), every entry costs at least one block (so a user cannot hold the spool
with empty files), and the owner is the uid the kernel gives.
"""
import errno
import os
import pwd
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


def owner_name(uid, names=None):
    """The user name of a uid (names: a cache for one pass; a lookup can cost 0.1 ms)."""
    if names is not None and uid in names:
        return names[uid]
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = str(uid)
    if names is not None:
        names[uid] = name
    return name


class Entry:
    """One spool entry: anything in the spool or in its quarantine. `stray`: not a spool
    file's name (a job user's leftover, or a directory set aside). `size`: what a
    directory holds, itself and all in it."""

    __slots__ = ("name", "path", "st", "quarantined", "stray", "size")

    def __init__(self, name, path, st, quarantined, stray, size=None):
        self.name, self.path, self.st = name, path, st
        self.quarantined, self.stray, self.size = quarantined, stray, size

    @property
    def uid(self):
        return self.st.st_uid

    @property
    def charged(self):
        return charged(self.st) if self.size is None else self.size


def listing(spool, suffix, walker):
    """Every entry of the spool and of its quarantine, lstat'ed, directories with all they
    hold (jobmon.ship.trees.Walker): whatever a user leaves in the spool counts against
    them."""
    out = []
    for where, quarantined in ((spool, False), (os.path.join(spool, QUARANTINE), True)):
        try:
            fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            with os.scandir(fd) as it:
                found = [e for e in it if quarantined or e.name != QUARANTINE]
            for e in found:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue   # gone meanwhile
                size = walker.size(fd, e.name, st) if stat.S_ISDIR(st.st_mode) else None
                out.append(Entry(e.name, os.path.join(where, e.name), st, quarantined,
                                 not quarantined and not e.name.endswith(suffix), size))
        finally:
            os.close(fd)
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
