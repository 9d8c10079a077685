"""Directories a user leaves in the spool: what they really hold, and removing them.

Any job user can make a directory in the spool and fill it -- at any depth, with links,
FIFOs, more directories, modes that keep others out -- until the spool's disk is full.
All of it is charged to the user who made the directory, by what it really holds (each
entry as the spool charges a file, by lstat, never following a link, walked in a bounded
time), and the limit removes it like anything else over that user's share.

Root may read and empty any directory. A service user may not empty another user's, so it
first takes the directory over: mode 0077 -- its owner locked out, the shipper let in as
group or other -- which needs CAP_FOWNER (deploy/jobmon-ship.service grants it; every
chmod goes through a descriptor opened without following a link, so it can only ever
change the directory found). Without it the directory stays, renamed out of the spool's
names, and is charged for what the shipper can see of it.
"""
import os
import stat
import time

from .entries import charged

MAX_DEPTH = 64          # deeper directories are moved up, into the quarantine's top
WALK_SECONDS = 0.5      # the longest one look at the spool spends walking directories
CACHE_SECONDS = 10      # a directory's size is walked again after this, or when the
                        # spool's disk is nearly full
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC


def take_over(parent_fd, name):
    """An fd of directory `name` (in parent_fd, or a path when parent_fd is None) that the
    shipper may read and empty. Raises OSError (PermissionError: neither root nor
    CAP_FOWNER)."""
    anchor = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=parent_fd)
    try:
        if os.geteuid() not in (0, os.fstat(anchor).st_uid):
            os.chmod(f"/proc/self/fd/{anchor}", 0o077)
        return os.open(f"/proc/self/fd/{anchor}", _DIR)
    finally:
        os.close(anchor)


def _open(parent_fd, name, take):
    try:
        return os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=parent_fd)
    except PermissionError:
        if not take:
            raise
    return take_over(parent_fd, name)


def tree_bytes(parent_fd, name, dev, deadline, take=False):
    """(bytes, whole): what directory `name` holds below it, each entry charged as a spool
    entry is; `whole` is False when the walk ran out of time, met a directory it may not
    read, one deeper than MAX_DEPTH, or another filesystem (not entered)."""
    total, whole = 0, True
    try:
        fd = _open(parent_fd, name, take)
    except OSError:
        return 0, False
    stack = [(fd, os.scandir(fd))]
    try:
        while stack:
            e = next(stack[-1][1], None)
            if e is None:
                fd, it = stack.pop()
                it.close()
                os.close(fd)
                continue
            if time.monotonic() > deadline:
                return total, False
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            total += charged(st)
            if stat.S_ISDIR(st.st_mode):
                try:
                    if len(stack) >= MAX_DEPTH or st.st_dev != dev:
                        raise OSError
                    sub = _open(stack[-1][0], e.name, take)
                except OSError:
                    whole = False
                    continue
                stack.append((sub, os.scandir(sub)))
        return total, whole
    finally:
        for fd, it in stack:
            it.close()
            os.close(fd)


def remove_tree(parent_fd, name, deadline, attic_fd):
    """Remove directory `name` and all in it, no link followed, as far as time allows;
    directories deeper than MAX_DEPTH are moved up into attic_fd (the quarantine), to be
    removed from there in turn. True when it is gone; PermissionError when the shipper
    may not take it over."""
    try:
        fd = take_over(parent_fd, name)
    except PermissionError:
        raise
    except OSError:
        return False
    stack = [(parent_fd, name, fd, os.scandir(fd))]
    try:
        while stack:
            at_fd, at_name, fd, it = stack[-1]
            e = next(it, None)
            if e is None:
                stack.pop()
                it.close()
                os.close(fd)
                try:
                    os.rmdir(at_name, dir_fd=at_fd)
                except OSError:
                    return False     # not empty: something failed, or came meanwhile
                continue
            if time.monotonic() > deadline:
                return False
            try:
                if not e.is_dir(follow_symlinks=False):
                    os.unlink(e.name, dir_fd=fd)
                elif len(stack) >= MAX_DEPTH:
                    os.rename(e.name, f".deep-{time.time_ns()}", src_dir_fd=fd,
                              dst_dir_fd=attic_fd)
                else:
                    sub = take_over(fd, e.name)
                    stack.append((fd, e.name, sub, os.scandir(sub)))
            except OSError:
                pass      # its directory will not be empty: the caller hears so
        return True
    finally:
        for _at_fd, _at_name, fd, it in stack:
            it.close()
            os.close(fd)


def remove(path, attic):
    """remove_tree() of a path, with WALK_SECONDS to do it."""
    parent = os.open(os.path.dirname(path), _DIR | os.O_NOFOLLOW)
    try:
        attic_fd = os.open(attic, _DIR | os.O_NOFOLLOW)
        try:
            return remove_tree(parent, os.path.basename(path),
                               time.monotonic() + WALK_SECONDS, attic_fd)
        finally:
            os.close(attic_fd)
    finally:
        os.close(parent)


class Walker:
    """Directories' sizes for the looks at the spool: at most WALK_SECONDS per look, each
    size kept CACHE_SECONDS (a walk cut short says "at least")."""

    def __init__(self, take):
        self.take = take
        self.cache = {}           # (dev, ino) -> (bytes, when)
        self.deadline = self.fresh = None

    def start(self, fresh=False):
        self.deadline, self.fresh = time.monotonic() + WALK_SECONDS, fresh
        now = time.monotonic()
        self.cache = {k: v for k, v in self.cache.items() if now - v[1] < CACHE_SECONDS}

    def size(self, parent_fd, name, st):
        """What directory `name` (lstat st) charges its owner: itself and all in it."""
        key, now = (st.st_dev, st.st_ino), time.monotonic()
        hit = self.cache.get(key)
        if hit and not self.fresh and now - hit[1] < CACHE_SECONDS:
            return hit[0]
        n, whole = tree_bytes(parent_fd, name, st.st_dev, self.deadline or now, self.take)
        n += charged(st)
        if hit and not whole:
            n = max(n, hit[0])
        self.cache[key] = (n, now)
        return n
