"""The shipper's side of the spool directory (the writer's side: jobmon.sinks.spool).

Finding the files, telling finished ones from those still written, deleting what the
server acknowledged, quarantining what it must not send, setting aside what is not a file,
and keeping the spool under its size limit with every loss counted and attributed.

Every job user can create entries here, so each one is treated as hostile: opened without
following links or blocking, read no further than it really holds, and whatever cannot be
used is moved out of the way once (the shipper owns the directory, so it can rename and
delete any entry in it) and reported once, never in a loop.
"""
import collections
import errno
import fcntl
import itertools
import logging
import os
import resource
import stat
import time

from ..sinks.spool import LOST_MARK, SUFFIX
from . import holders, quota, trees
from .entries import (QUARANTINE, count_lines, kind, listing, open_regular, owner_name,
                      real_bytes)

log = logging.getLogger("jobmon.ship")

YOUNG_EMPTY_SECONDS = 10  # an unlocked empty file younger than this may be just created
REJECTED = ".rejected-"    # another user's directory the shipper could only rename
UNSEEN = "(unseen)"        # whose data fills the disk, when the shipper cannot see it
MAX_OPEN = 50_000         # spool files open at once, at most


def prepare_spool(directory):
    """Make (or check) the spool dir: ours, mode 3733 (see jobmon.sinks.spool), with a
    private quarantine."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(errno.ENOTDIR, f"spool {directory} is not a directory")
    if st.st_uid != os.geteuid():
        raise OSError(errno.EPERM, f"spool {directory} belongs to uid {st.st_uid}, not to "
                      f"the shipper (uid {os.geteuid()}): not trusted")
    if stat.S_IMODE(st.st_mode) != 0o3733:
        os.chmod(directory, 0o3733)
    q = os.path.join(directory, QUARANTINE)
    try:
        qst = os.lstat(q)
        if not stat.S_ISDIR(qst.st_mode) or qst.st_uid != os.geteuid():
            # a job user made it first: move theirs aside, make ours
            os.rename(q, os.path.join(directory, f"{REJECTED}{qst.st_ino}-{time.time_ns()}"))
            raise FileNotFoundError
    except FileNotFoundError:
        os.mkdir(q, 0o700)
    os.chmod(q, 0o700)


def lost_in_name(name):
    """N of a `<name>.lost<N>.lp` file (jobmon.sinks.spool), else 0."""
    stem = name[:-len(SUFFIX)]
    head, mark, n = stem.rpartition(LOST_MARK)
    return int(n) if mark and head and n.isascii() and n.isdigit() and len(n) <= 12 else 0


def open_budget():
    """How many spool files a pass may hold open: the descriptor limit, raised to its
    hard limit, less room for everything else."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return max(min(soft - 64, MAX_OPEN), 16)


class SpoolFile:
    """One job's spool file as this pass sees it."""

    def __init__(self, path, fd, st, offset, ended=False, names=None):
        self.path, self.fd, self.st, self.offset = path, fd, st, offset
        self.owner = owner_name(st.st_uid, names)
        self.finished = False     # writer gone: no more lines will come
        self.bad = None           # why it must be quarantined
        self.deleted = False
        self.ended = ended        # its job's end point was acknowledged

    @property
    def name(self):
        return os.path.basename(self.path)


class SpoolDir:
    def __init__(self, path, max_bytes, share, max_line, state):
        self.path, self.max_bytes, self.share, self.state = path, max_bytes, share, state
        self.max_line = max_line          # longer than this without a newline: not ours
        self.stuck = set()                # (dev, ino) of entries that could not be moved
        self.unremovable = set()          # ... of those the limit could not remove
        self.usage = {}                   # from the last enforce_limit, for self-metrics
        self.max_open = open_budget()     # spool files open at once in a pass
        self.walker = trees.Walker(take=True)    # directories' real sizes
        self.held = holders.HeldFiles(os.stat(path).st_dev)   # open files with no name

    def scan(self):
        """The spool files, opened (regular files only, no link followed; anything else
        is set aside), oldest first. At most max_open of them, taken in turn from each
        user (oldest first within a user): however many files one user keeps open, the
        others' are read too."""
        aside = collections.Counter()
        users = collections.defaultdict(list)
        with os.scandir(self.path) as it:
            for e in it:
                if e.name == QUARANTINE or e.name.startswith(REJECTED):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not e.name.endswith(SUFFIX):
                    if time.time() - st.st_ctime > YOUNG_EMPTY_SECONDS:   # not being made
                        self.set_aside(e.path, aside)
                elif stat.S_ISREG(st.st_mode):
                    users[st.st_uid].append((quota.age_key(e.name, st), e.name))
                else:
                    self.set_aside(e.path, aside)
        seen = {name for files in users.values() for _age, name in files}
        turns = itertools.zip_longest(*(sorted(files) for files in users.values()))
        out, names = [], {}
        for _age, name in (f for turn in turns for f in turn if f):
            if len(out) >= self.max_open:
                break
            sf = self._open(name, names, aside)
            if sf is False:
                break
            if sf is not None:
                out.append(sf)
        for name in list(self.state.files):
            if name not in seen:
                self.state.forget(name)
        for (user, what), n in sorted(aside.items()):
            log.warning("set aside %d spool entr%s of user %s: %s (not a spool file the "
                        "shipper can read)", n, "y" if n == 1 else "ies", user, what)
        if aside:
            self.state.save()
        out.sort(key=lambda sf: quota.age_key(sf.name, sf.st))
        return out

    def _open(self, name, names, aside):
        """A SpoolFile, or None (gone, or set aside), or False (out of descriptors)."""
        path = os.path.join(self.path, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE):   # the rest waits for the next pass
                log.warning("out of file descriptors with %d spool files open", self.max_open)
                return False
            self.set_aside(path, aside)   # a link (ELOOP), unreadable (EACCES) ...
            return None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            self.set_aside(path, aside)
            return None
        sf = SpoolFile(path, fd, st, self.state.offset(name, st), self.state.ended(name, st),
                       names)
        if st.st_nlink != 1:
            sf.bad = f"{st.st_nlink} names (a sampler's file has one)"
            return sf
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)   # never make a starting sampler wait
            sf.finished = (st.st_size > 0 or lost_in_name(name)   # named at the end
                           or time.time() - st.st_mtime > YOUNG_EMPTY_SECONDS)
        except BlockingIOError:
            pass   # its sampler is still writing
        return sf

    def set_aside(self, path, aside):
        """An entry the shipper cannot use as a spool file: into the quarantine (a
        directory of another user, which a non-root shipper cannot move there: renamed
        out of the spool's *.lp names), counted once, reported once."""
        try:
            st = os.lstat(path)
        except OSError:
            return
        if (st.st_dev, st.st_ino) in self.stuck:
            return
        what = kind(st)
        if what == "file":
            what = "unreadable file" if path.endswith(SUFFIX) else "file not named *.lp"
        user = owner_name(st.st_uid)
        dest = os.path.join(self.path, QUARANTINE, os.path.basename(path))
        try:
            try:
                if what == "directory":    # another user's may move only once taken over
                    os.close(trees.take_over(None, path))
                os.rename(path, dest)
            except OSError:
                if what != "directory":
                    raise
                try:
                    os.rmdir(path)
                except OSError:
                    os.rename(path, os.path.join(
                        self.path, f"{REJECTED}{st.st_ino}-{time.time_ns()}"))
        except OSError as e:
            self.stuck.add((st.st_dev, st.st_ino))
            log.error("cannot move spool entry %s (%s of user %s) aside: %s", path, what, user,
                      e.strerror)
            return
        c = self.state.counters
        if what == "unreadable file":
            c["quarantined_files"] += 1
            self.state.lose(user, "quarantined", 0, real_bytes(st), 1)
        else:
            c["rejected_entries"] += 1
            self.state.lose(user, "rejected_entry", files=1)
        aside[(user, what)] += 1

    def quarantine(self, sf):
        dest = os.path.join(self.path, QUARANTINE, sf.name)
        if (sf.st.st_dev, sf.st.st_ino) in self.stuck:
            return
        size = os.fstat(sf.fd).st_size
        try:
            os.rename(sf.path, dest)
        except OSError as e:
            self.stuck.add((sf.st.st_dev, sf.st.st_ino))
            log.error("cannot quarantine spool file %s: %s", sf.path, e.strerror)
            return
        log.error("quarantined spool file %s (owner %s): %s; moved to %s",
                  sf.path, sf.owner, sf.bad, dest)
        start = self.state.offset(sf.name, sf.st)    # what the server has not got
        points, _exact = count_lines(sf.fd, start, size)
        self.named_loss(sf.name, sf.owner, sf.st)
        self.state.forget(sf.name)
        self.state.counters["quarantined_files"] += 1
        self.state.lose(sf.owner, "quarantined", points,
                        max(real_bytes(os.fstat(sf.fd)) - start, 0), 1)
        self.state.save()
        sf.finished = False

    def complete(self, sf):
        """Is every complete line of a finished file acknowledged? Marks the file bad when
        it ends in more than a line's worth of bytes without a newline."""
        size = os.fstat(sf.fd).st_size
        shipped = self.state.offset(sf.name, sf.st)
        if size - shipped > self.max_line:
            sf.bad = f"ends in {size - shipped} bytes without a newline"
            return False
        sf.rest = os.pread(sf.fd, size - shipped, shipped) if size > shipped else b""
        return b"\n" not in sf.rest

    def finish(self, sf):
        """Delete a finished file once all its complete lines are acknowledged and its
        job's end is recorded (the caller saves the state). True when it was deleted."""
        if sf.deleted or not sf.ended or not self.complete(sf):
            return False
        if sf.rest.strip(b"\0"):      # zeros only: room kept for an end point, unused
            self.state.counters["torn_lines"] += 1
            self.state.lose(sf.owner, "torn_line", 1, len(sf.rest))
            log.warning("spool file %s ends in a torn line (%d bytes, writer died mid-write): "
                        "skipped", sf.path, len(sf.rest))
        try:
            os.unlink(sf.path)
        except FileNotFoundError:
            pass
        self.named_loss(sf.name, sf.owner, sf.st)
        self.state.forget(sf.name)
        sf.deleted = True
        return True

    def named_loss(self, name, owner, st):
        """A `<name>.lost<N>.lp` file gone: its sampler could not spool N points."""
        n = lost_in_name(name)
        if n:
            self.state.sampler_lost(owner, n, quota.age_key(name, st) / 1e9)

    # --- the limit ---
    def enforce_limit(self):
        """Keep the spool under max_bytes (and its disk from filling): drop whole files,
        by the quota's order, and count every loss against the user it belonged to."""
        disk_size, disk_used, need_free = quota.disk(self.path)
        self.walker.start(fresh=need_free > 0)
        entries = listing(self.path, SUFFIX, self.walker)
        if need_free:   # samplers may be losing points: whose data fills the disk?
            held, unseen = self.held.look(disk_size, disk_used, sum(e.charged for e in entries))
            entries += held
        self.usage = quota.usage(entries)
        if need_free:
            over = {uid: n - self.share for uid, n in self.usage.items() if n > self.share}
            self.state.disk_full(owner_name(max(over, key=over.get)) if over else
                                 UNSEEN if unseen > self.share else None, time.time())
        drops = quota.plan(entries, self.max_bytes, self.share, need_free)
        for entry, reason in drops:
            if self._drop(entry, reason):
                self.usage[entry.uid] -= entry.charged
        if drops or need_free:
            self.state.save()

    def _drop(self, entry, reason):
        user = owner_name(entry.uid)
        if isinstance(entry, holders.Held) or stat.S_ISDIR(entry.st.st_mode):
            return self._remove(entry, reason, user)
        regular = stat.S_ISREG(entry.st.st_mode) and not entry.stray and not entry.quarantined
        opened = open_regular(entry.path) if regular else None
        points, unsent = 0, real_bytes(entry.st) if entry.stray else 0
        if opened:
            fd, st = opened
            if (st.st_dev, st.st_ino) != (entry.st.st_dev, entry.st.st_ino):
                os.close(fd)
                return False  # replaced meanwhile: looked at again next time
            offset = self.state.offset(entry.name, st)
            points, _exact = count_lines(fd, offset, st.st_size)
            unsent = max(real_bytes(st) - offset, 0)
            os.close(fd)
        try:
            os.unlink(entry.path)
        except OSError:
            return False
        if entry.quarantined:   # its loss was counted when it was quarantined
            log.info("spool over its limit: removed %s (user %s) from the quarantine",
                     entry.path, user)
            return True
        if regular:
            self.named_loss(entry.name, user, entry.st)
        self.state.forget(entry.name)
        c = self.state.counters
        c["dropped_points"] += points
        c["dropped_bytes"] += unsent
        c["dropped_files"] += 1
        self.state.lose(user, reason, points, unsent, 1)
        log.warning("spool over its limit (%d bytes, %d per user): dropped %s of user %s "
                    "(%s), %d unsent point(s)", self.max_bytes, self.share, entry.path, user,
                    reason.replace("_", " "), points)
        return True

    def _remove(self, entry, reason, user):
        """A directory (and all in it) or an open file with no name, over the limit:
        removed, or emptied through its holder's descriptor (root, or CAP_FOWNER)."""
        key = (entry.st.st_dev, entry.st.st_ino)
        if key in self.unremovable:
            return False
        try:
            done = holders.empty(entry) if isinstance(entry, holders.Held) else \
                trees.remove(entry.path, os.path.join(self.path, QUARANTINE))
        except PermissionError:
            self.unremovable.add(key)     # said once; still set aside, still charged
            log.error("cannot remove %s of user %s (%d bytes, over the limit): the shipper "
                      "needs root or CAP_FOWNER (deploy/jobmon-ship.service)", entry.name,
                      user, entry.charged)
            return False
        if not done:
            return False     # more of it next time
        self.state.counters["dropped_bytes"] += entry.charged   # not a spool file: no
        self.state.lose(user, reason, 0, entry.charged)          # files, no points
        log.warning("spool over its limit (%d bytes, %d per user, or its disk nearly full): "
                    "%s %s of user %s (%d bytes, %s)", self.max_bytes, self.share,
                    "emptied" if isinstance(entry, holders.Held) else "removed", entry.name,
                    user, entry.charged, reason.replace("_", " "))
        return True
