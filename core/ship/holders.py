"""Files of the spool's disk that are open but have no name any more.

A user can hold a spool file open after the shipper (or the user) removed it, and write
into it until the disk is full: nothing in the spool shows it, and the space comes back
only when the last holder closes it. The kernel shows it in /proc/PID/fd -- to the
processes' own user, and to root or a shipper with CAP_SYS_PTRACE
(deploy/jobmon-ship.service) for all. The shipper looks there when the disk is nearly full
and what the spool holds does not explain it: each such file is charged to its owner like
a spool entry (so the limit takes from that user first, and other users' losses meanwhile
are theirs), its holder is named once, and over its owner's share it is emptied through
the holder's descriptor (root, or CAP_FOWNER to open it for writing). What the shipper
cannot see is said, once, with what would show it; only a filesystem quota keeps a user
from filling the disk in the first place (docs/security.md).
"""
import logging
import os
import stat
import time

from .entries import charged, owner_name

log = logging.getLogger("jobmon.ship")

SCAN_EVERY = 5.0          # seconds between looks through /proc
SCAN_SECONDS = 0.5        # the longest one look may take
UNEXPLAINED_SHARE = 16    # look when more than 1/16 of the disk is in no spool entry
DELETED = " (deleted)"


class Held:
    """An open file of the spool's disk with no name: an entry the limit counts (stray:
    its data is never sent)."""

    quarantined, stray, size = False, True, None

    def __init__(self, pid, fd, st):
        self.path, self.st = f"/proc/{pid}/fd/{fd}", st
        self.name = f"deleted file (inode {st.st_ino}) held by {process(pid)}"

    @property
    def uid(self):
        return self.st.st_uid

    @property
    def charged(self):
        return charged(self.st)

    def still(self):
        """Re-read its size; False once its holder closed it (or the number is reused)."""
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        if (st.st_dev, st.st_ino) != (self.st.st_dev, self.st.st_ino) or st.st_nlink:
            return False
        self.st = st
        return True


def process(pid):
    """"pid P (command C, uid U)", from what /proc shows every user."""
    try:
        with open(f"/proc/{pid}/comm", "rb") as f:
            comm = f.read(64).decode("utf-8", "replace").strip()
        with open(f"/proc/{pid}/status", "rb") as f:
            uid = next(line.split()[1].decode() for line in f if line.startswith(b"Uid:"))
    except (OSError, StopIteration, IndexError):
        return f"pid {pid}"
    return f"pid {pid} (command {comm!r}, user {owner_name(int(uid))})"


def find(dev, deadline):
    """([Held] on device `dev`, processes the shipper's user may not look into)."""
    held, hidden = {}, 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or time.monotonic() > deadline:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            hidden += 1
            continue
        for fd in fds:
            link = f"/proc/{pid}/fd/{fd}"
            try:
                if not os.readlink(link).endswith(DELETED):
                    continue
                st = os.stat(link)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if st.st_dev == dev and stat.S_ISREG(st.st_mode) and not st.st_nlink \
                    and key not in held:
                held[key] = Held(pid, fd, st)
    return list(held.values()), hidden


def empty(h):
    """Empty a held file through its holder's descriptor. Raises PermissionError where the
    shipper may not (neither root nor CAP_FOWNER). False when it is no longer held."""
    try:   # the file itself, checked, before anything is changed through it
        anchor = os.open(h.path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        st = os.fstat(anchor)
        if (st.st_dev, st.st_ino) != (h.st.st_dev, h.st.st_ino) or st.st_nlink:
            return False
        mine = f"/proc/self/fd/{anchor}"
        try:
            fd = os.open(mine, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except PermissionError:
            os.chmod(mine, 0o066)     # its owner has it open already; nobody else can
            fd = os.open(mine, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            os.ftruncate(fd, 0)
        finally:
            os.close(fd)
        return True
    finally:
        os.close(anchor)


class HeldFiles:
    """The open deleted files of the spool's disk, looked for at most every SCAN_EVERY s."""

    def __init__(self, dev):
        self.dev, self.found, self.last, self.told = dev, [], -SCAN_EVERY, set()
        self.hidden = 0

    def look(self, disk_size, disk_used, shown):
        """(held files to charge, bytes of the disk nobody can be charged for), given
        what the spool's entries hold (`shown`)."""
        unexplained = disk_used - shown
        now = time.monotonic()
        if unexplained > disk_size // UNEXPLAINED_SHARE and now - self.last >= SCAN_EVERY:
            self.last = now
            self.found, self.hidden = find(self.dev, now + SCAN_SECONDS)
        else:
            self.found = [h for h in self.found if h.still()]
        for h in self.found:
            if (h.st.st_ino, h.path) not in self.told:
                self.told.add((h.st.st_ino, h.path))
                log.warning("the spool's disk holds a %s of user %s (%d bytes): charged to "
                            "%s until it is closed", h.name, owner_name(h.uid), h.charged,
                            owner_name(h.uid))
        rest = max(unexplained - sum(h.charged for h in self.found), 0)
        if rest > disk_size // UNEXPLAINED_SHARE and ("unseen", self.hidden) not in self.told:
            self.told.add(("unseen", self.hidden))
            log.warning("%d bytes of the spool's disk are in no spool entry: files removed "
                        "but still open, in %d process(es) the shipper's user may not look "
                        "into (root or CAP_SYS_PTRACE can name them); only a filesystem quota "
                        "keeps a user from filling the disk", rest, self.hidden)
        if len(self.told) > 10_000:
            self.told.clear()
        return self.found, rest
