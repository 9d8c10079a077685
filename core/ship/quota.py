"""Which spool data goes when the spool is over its limit: one user can only lose their
own data.

Each user (the kernel's owner of the files) has a share, `spool.max_bytes_per_user`. A
user may hold more while the spool has room; once it is over `spool.max_bytes` (or its
filesystem is nearly full), files go from the users over their share first -- the one
most over it first, their own oldest data first -- and never from a user within their
share while some user is over theirs. Only when nobody is over their share and the spool
is still over its limit does the largest holder lose their oldest data.

Within one user: quarantined files and stray entries first (they would never be sent),
then the oldest data
(by the start time the sampler wrote in the name; a user who lies there only reorders
their own files), and the room kept for end-of-job records last.
"""
import collections
import os

from ..sinks.spool import RESERVE_SUFFIX

LOW_SPACE_BYTES = 64 << 20   # free space below which the filesystem counts as full
LOW_SPACE_FRACTION = 20      # ... or below 1/20 of it, on a small filesystem


def age_key(name, st):
    """Files' data age: the start time in the name the sampler gave it, else mtime."""
    try:
        return int(name.split(".", 1)[0])
    except ValueError:
        return int(st.st_mtime * 1e9)


def drop_order(entry):
    rank = 0 if entry.quarantined or entry.stray else \
        2 if entry.name.endswith(RESERVE_SUFFIX) else 1
    return rank, age_key(entry.name, entry.st), entry.name


def disk(path):
    """(size, bytes used, how far it is below its low-space mark) of the spool's
    filesystem; zeros when unknown."""
    try:
        fs = os.statvfs(path)
    except OSError:
        return 0, 0, 0
    size, free = fs.f_blocks * fs.f_frsize, fs.f_bavail * fs.f_frsize
    low = min(LOW_SPACE_BYTES, size // LOW_SPACE_FRACTION)
    return size, (fs.f_blocks - fs.f_bfree) * fs.f_frsize, max(low - free, 0)


def usage(entries):
    """{uid: bytes charged}."""
    used = collections.Counter()
    for e in entries:
        used[e.uid] += e.charged
    return used


def plan(entries, max_bytes, share, need_free=0):
    """[(entry, reason)] to drop, in order: reason "over_share" or "spool_full"."""
    used = usage(entries)
    queue = collections.defaultdict(collections.deque)
    for e in sorted(entries, key=drop_order):
        queue[e.uid].append(e)
    over = sum(used.values()) - max_bytes
    drops = []

    def take(uid, reason):
        e = queue[uid].popleft()
        used[uid] -= e.charged
        drops.append((e, reason))
        return e.charged

    while over > 0 or need_free > 0:
        over_share = [u for u in queue if queue[u] and used[u] > share]
        if not over_share:
            break
        n = take(max(over_share, key=lambda u: used[u] - share), "over_share")
        over -= n
        need_free -= n
    while over > 0:
        holders = [u for u in queue if queue[u]]
        if not holders:
            break
        over -= take(max(holders, key=lambda u: used[u]), "spool_full")
    return drops
