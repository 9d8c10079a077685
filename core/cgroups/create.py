"""Make a transient cgroup for a job that has none (create), or pick the cgroups to
measure a new job in (for_job).

Where a v2 job cgroup goes (create): cgroup v2 lets a cgroup hand controllers to its children
only while it holds no processes itself (the root excepted), so a cgroup with processes can
never get a measured child. jobmon puts the job
  1. below its own cgroup when that is the root, or already hands out memory;
  2. below its own cgroup after moving itself into a leaf there, when jobmon is the only
     process in it (a scheduler's or a delegated job cgroup: the job stays inside it);
  3. else beside its own cgroup, in the nearest ancestor that hands out memory or can be made
     to (what systemd-run does for a scope, without asking systemd).
Only cgroups it may write to count: for root that is every one, for a user the subtree
delegated to them (systemd's user@.service), so a user gets an exact cgroup where one was
delegated and procfs elsewhere. Controllers jobmon enables in a shared ancestor stay on (a
concurrent job may use them, as systemd leaves them on too); those enabled in its own
cgroup for the leaf move are turned off again when the job's cgroup is removed.
"""
import os

from .job_cgroups import JobCgroups, _empty_and_remove, _procs, _write, existing
from .paths import V1_CONTROLLERS, own, resolve

# what a v2 job cgroup is given, most needed first (cpu.stat's usage exists without "cpu")
V2_CONTROLLERS = ("memory", "pids", "io", "cpu")


def for_job(mode, version, name):
    """The cgroups to measure a new job in, or None for procfs.

    mode: auto (a transient cgroup: as root anywhere, as a user in a subtree delegated to
    them; else procfs), create, existing, none; version: 1, 2 or None (v2 where it has
    memory accounting).
    """
    if mode == "none":
        return None
    try:
        if mode == "existing":
            return existing(prefer=version)
        if mode == "auto" and os.geteuid() != 0:
            # v1 is never delegated; v2 only with memory, else procfs measures more
            return None if version == 1 else _create_v2(*own(), name, forced=False)
        return create(name, prefer=version)
    except OSError:
        return None


def create(name, prefer=None):
    """A transient cgroup for a job, or None if the kernel/permissions refuse.

    v2 where memory can be had (see the module's notes for where it goes); otherwise v1
    with cpuacct, memory, pids and blkio, as ARC's job cgroups do.
    """
    mounts, paths = own()
    order = (2, 1) if prefer is None else (prefer,)
    for version in order:
        try:
            cg = _create_v2(mounts, paths, name, prefer == 2) if version == 2 \
                else _create_v1(mounts, paths, name)
        except OSError:
            cg = None
        if cg:
            return cg
    return None


def _create_v2(mounts, paths, name, forced):
    """forced: without memory anywhere, a cgroup below our own all the same (cpu.stat)."""
    home = resolve(mounts, paths, "v2")
    if not home:
        return None
    top = os.path.normpath(mounts["v2"][0])
    undo = None
    moved = None if home == top else _leaf_move(home, top, name)
    if moved:
        parent = home
        undo = lambda: _leave_leaf(home, *moved)  # noqa: E731
    else:
        parent = _nearest_host(home, top)
    if parent is None:
        if not forced:
            return None  # only cpu.stat would work: v1 or procfs measure more
        parent = home
    try:
        d = _mkdir_new(parent, name)
    except OSError:
        if undo:
            undo()
        raise
    return JobCgroups(2, {"v2": d}, created=True, undo=undo)


def _hands_out_memory(d, top):
    """Enable what a job needs for d's children, where the rules let us (d holds no
    processes, or is the root; memory offered by d's parent, first enabled there if need
    be). Returns the controllers this call enabled; raises OSError if memory stays off."""
    have = _words(d, "cgroup.subtree_control")
    offered = _words(d, "cgroup.controllers")
    if "memory" not in have and "memory" not in offered and d != top:
        _hands_out_memory(os.path.dirname(d), top)
        offered = _words(d, "cgroup.controllers")
    if "memory" not in have and "memory" not in offered:
        raise OSError(f"no memory controller to give below {d}")  # and nothing touched
    enabled = []
    for c in V2_CONTROLLERS:
        if c in offered and c not in have:
            try:
                _write(os.path.join(d, "cgroup.subtree_control"), "+" + c)
                enabled.append(c)
            except OSError:
                if c == "memory":
                    raise  # EBUSY: d holds processes; EACCES: not ours
    return enabled


def _words(d, f):
    with open(os.path.join(d, f)) as fh:
        return fh.read().split()


def _writable(d):
    return os.access(d, os.W_OK) and os.access(os.path.join(d, "cgroup.procs"), os.W_OK) \
        and os.access(os.path.join(d, "cgroup.subtree_control"), os.W_OK)


def _leaf_move(home, top, name):
    """Case 2: jobmon alone in `home` moves itself into a leaf there, so `home` may hand
    out controllers. Returns (leaf, controllers enabled) or None (nothing changed)."""
    if not _writable(home) or _procs(home) != [str(os.getpid())] \
            or "memory" not in _words(home, "cgroup.controllers"):
        return None
    leaf = _mkdir_new(home, name + "-monitor")
    try:
        _write(os.path.join(leaf, "cgroup.procs"), str(os.getpid()))
        return leaf, _hands_out_memory(home, top)
    except OSError:
        _leave_leaf(home, leaf, [])
        return None


def _leave_leaf(home, leaf, enabled):
    """Back from the leaf: the controllers enabled for it go off, so `home` may hold
    processes again (jobmon, and any leftovers of the job)."""
    for c in reversed(enabled):
        _write(os.path.join(home, "cgroup.subtree_control"), "-" + c)
    _empty_and_remove(leaf, home)


def _nearest_host(home, top):
    """Case 1 or 3: the nearest cgroup from `home` up that hands out memory, or None."""
    d = home
    while _writable(d):
        try:
            _hands_out_memory(d, top)
            return d
        except OSError:
            pass
        if d == top:
            break
        d = os.path.dirname(d)
    return None


def _create_v1(mounts, paths, name):
    if not all(resolve(mounts, paths, c) for c in ("cpuacct", "memory")):
        return None
    dirs = {}
    try:
        for c in V1_CONTROLLERS:
            base = resolve(mounts, paths, c)
            if base:
                dirs[c] = _mkdir_new(base, name)
    except OSError:
        JobCgroups(1, dirs, created=True).remove()
        raise
    if "blkio" in dirs:
        _enable_blkio_stats(dirs["blkio"])
    return JobCgroups(1, dirs, created=True, pressure_dir=_pressure_cgroup(mounts, paths, name))


def _pressure_cgroup(mounts, paths, name):
    """On a hybrid host (v1 controllers and a v2 hierarchy without them), a v2 cgroup for
    the job beside its v1 ones: the kernel keeps pressure (PSI) for every v2 cgroup, so the
    job's CPU, memory and I/O stalls are exact there too. None where there is no such
    hierarchy, or it refuses."""
    home = resolve(mounts, paths, "v2")
    if not home or not os.path.exists(os.path.join(home, "cgroup.procs")):
        return None
    try:
        return _mkdir_new(home, name)
    except OSError:
        return None


def _mkdir_new(parent, name):
    """A new cgroup parent/name. A leftover of that name (a jobmon killed before it could
    remove its cgroup, whose pid this one was given again) is left alone: the new one gets
    a suffix, so the job is still measured in a cgroup of its own."""
    for n in range(8):
        d = os.path.join(parent, f"{name}.{n}" if n else name)
        try:
            os.mkdir(d)
            return d
        except FileExistsError:
            continue
    raise FileExistsError(f"{parent}: {name} and its suffixed names are all taken")


# v1 blk-throttle counts bytes only for devices that have a rule; a limit no disk can reach
# turns the counting on without ever throttling.
_NO_LIMIT = str(1 << 60)


def _enable_blkio_stats(d):
    for dev in block_devices():
        for f in ("blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device"):
            try:
                with open(os.path.join(d, f), "w") as fh:
                    fh.write(f"{dev} {_NO_LIMIT}")
            except OSError:
                pass


def block_devices():
    """major:minor of every whole disk (partitions are counted within them)."""
    out = []
    try:
        names = os.listdir("/sys/block")
    except OSError:
        return out
    for n in names:
        if n.startswith(("loop", "ram", "zram")):
            continue
        try:
            with open(f"/sys/block/{n}/dev") as f:
                out.append(f.read().strip())
        except OSError:
            pass
    return out
