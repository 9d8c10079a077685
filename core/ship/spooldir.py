"""The shipper's side of the spool directory (the writer's side: jobmon.sinks.spool).

Finding the files, telling finished ones from those still written, deleting what the
server acknowledged, quarantining what it must not send, and keeping the spool under
its size limit with every loss counted.
"""
import errno
import fcntl
import logging
import os
import pwd
import stat
import time

from ..sinks.spool import SUFFIX

log = logging.getLogger("jobmon.ship")

QUARANTINE = ".quarantine"
YOUNG_EMPTY_SECONDS = 10  # an unlocked empty file younger than this may be just created


def prepare_spool(directory):
    """Make (or check) the spool dir: ours, mode 3733 (see jobmon.sinks.spool)."""
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
    try:
        os.mkdir(os.path.join(directory, QUARANTINE), 0o700)
    except FileExistsError:
        pass


def owner_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def age_key(name, st):
    """Files' data age: the start time in the name the sampler gave it, else mtime."""
    try:
        return int(name.split(".", 1)[0])
    except ValueError:
        return int(st.st_mtime * 1e9)


class SpoolFile:
    """One job's spool file as this pass sees it."""

    def __init__(self, path, fd, st, offset):
        self.path, self.fd, self.st, self.offset = path, fd, st, offset
        self.owner = owner_name(st.st_uid)
        self.finished = False     # writer gone: no more lines will come
        self.bad = None           # why it must be quarantined
        self.deleted = False

    @property
    def name(self):
        return os.path.basename(self.path)


class SpoolDir:
    def __init__(self, path, max_bytes, state):
        self.path, self.max_bytes, self.state = path, max_bytes, state

    def scan(self):
        """The spool files, oldest first, opened (no symlinks, regular files only)."""
        out = []
        seen = set()
        for name in os.listdir(self.path):
            if not name.endswith(SUFFIX):
                continue
            path = os.path.join(self.path, name)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError as e:
                if e.errno != errno.ENOENT:
                    log.warning("cannot open spool file %s: %s", path, e.strerror)
                continue
            st = os.fstat(fd)
            sf = SpoolFile(path, fd, st, self.state.offset(name, st))
            seen.add(name)
            out.append(sf)
            if not stat.S_ISREG(st.st_mode):
                sf.bad = "not a regular file"
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)   # never make a starting sampler wait
                sf.finished = st.st_size > 0 or time.time() - st.st_mtime > YOUNG_EMPTY_SECONDS
            except BlockingIOError:
                pass   # its sampler is still writing
        for name in list(self.state.files):
            if name not in seen:
                self.state.forget(name)
        out.sort(key=lambda sf: age_key(sf.name, sf.st))
        return out

    def quarantine(self, sf):
        dest = os.path.join(self.path, QUARANTINE, sf.name)
        try:
            os.rename(sf.path, dest)
        except OSError as e:
            log.error("cannot quarantine spool file %s: %s", sf.path, e.strerror)
            return
        log.error("quarantined spool file %s (owner %s): %s; moved to %s",
                  sf.path, sf.owner, sf.bad, dest)
        self.state.forget(sf.name)
        self.state.counters["quarantined_files"] += 1
        self.state.save()
        sf.finished = False

    def finish(self, sf):
        """Delete a finished file once all its complete lines are acknowledged (the
        caller saves the state). True when it was deleted."""
        if sf.deleted:
            return False
        size = os.fstat(sf.fd).st_size
        shipped = self.state.offset(sf.name, sf.st)
        rest = os.pread(sf.fd, size - shipped, shipped) if size > shipped else b""
        if b"\n" in rest:
            return False   # complete lines not sent yet (batch held back or failed)
        if rest:
            self.state.counters["torn_lines"] += 1
            log.warning("spool file %s ends in a torn line (%d bytes, writer died mid-write): "
                        "skipped", sf.path, len(rest))
        try:
            os.unlink(sf.path)
        except FileNotFoundError:
            pass
        self.state.forget(sf.name)
        sf.deleted = True
        return True

    def enforce_limit(self):
        """Keep the spool under max_bytes: drop whole files, oldest data first, and
        count what was lost."""
        files = []
        total = 0
        for name in os.listdir(self.path):
            if not name.endswith(SUFFIX):
                continue
            try:
                st = os.lstat(os.path.join(self.path, name))
            except FileNotFoundError:
                continue
            total += st.st_size
            files.append((age_key(name, st), name, st))
        if total <= self.max_bytes:
            return
        files.sort()
        c = self.state.counters
        for _age, name, st in files:
            if total <= self.max_bytes:
                break
            path = os.path.join(self.path, name)
            offset = self.state.offset(name, st)
            points = 0
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as f:
                    f.seek(offset)
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        points += chunk.count(b"\n")
            except OSError:
                pass
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            total -= st.st_size
            c["dropped_points"] += points
            c["dropped_bytes"] += st.st_size - offset
            c["dropped_files"] += 1
            self.state.forget(name)
            log.warning("spool over its limit (%d bytes): dropped %s, %d unsent point(s)",
                        self.max_bytes, path, points)
        self.state.save()


def status(cfg, state):
    """What `jobmon ship --status` shows: counters, last error, what waits in the spool."""
    spool = cfg["spool"]["dir"]
    st = {"spool": spool, "max_bytes": cfg["spool"]["max_bytes"]}
    st.update(state.counters)
    st["last_error"] = state.last_error
    st["last_success"] = state.last_success
    files = spooled = pending = 0
    quarantined = []
    try:
        names = os.listdir(spool)
    except OSError as e:
        names = []
        st["error"] = f"cannot list the spool: {e.strerror}"
    for name in names:
        if not name.endswith(SUFFIX):
            continue
        path = os.path.join(spool, name)
        try:
            with open(path, "rb") as f:
                s = os.fstat(f.fileno())
                f.seek(state.offset(name, s))
                pending += f.read().count(b"\n")
        except OSError:
            continue
        files += 1
        spooled += s.st_size
    try:
        quarantined = sorted(os.listdir(os.path.join(spool, QUARANTINE)))
    except OSError:
        pass
    st.update({"spool_files": files, "spool_bytes": spooled, "pending_points": pending,
               "quarantine": quarantined})
    return st
