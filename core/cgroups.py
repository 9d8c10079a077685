"""Find a process's cgroups, and make a transient one for a job that has none.

Paths always come from /proc/<pid>/cgroup and /proc/self/mountinfo, never from a
hard-coded layout: HTCondor, Slurm and systemd all nest job cgroups differently.
"""
import os

V1_CONTROLLERS = ("cpuacct", "memory", "pids", "blkio")


def parse_proc_cgroup(text):
    """/proc/<pid>/cgroup -> {"v2": path} plus {controller: path} for v1 hierarchies."""
    out = {}
    for line in text.split("\n"):  # not splitlines(): a cgroup name may hold \r, \x85 ...
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, ctrls, path = parts
        if ctrls == "":
            out["v2"] = path
        else:
            for c in ctrls.split(","):
                out[c] = path
    return out


def parse_mountinfo(text):
    """mountinfo -> {"v2": (mountpoint, root)} and {controller: (mountpoint, root)} for v1."""
    out = {}
    for line in text.split("\n"):  # the kernel escapes only space, tab, newline, backslash
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        f = left.split(" ")
        r = right.split(" ")
        if len(f) < 5 or len(r) < 3:
            continue
        root, mnt = _unescape(f[3]), _unescape(f[4])
        fstype, opts = r[0], r[2].split(",")
        if fstype == "cgroup2":
            out.setdefault("v2", (mnt, root))
        elif fstype == "cgroup":
            for o in opts:
                if o in V1_CONTROLLERS or o.startswith("name=") or o in ("cpu", "cpuset"):
                    out.setdefault(o, (mnt, root))
    return out


def _unescape(s):
    # mountinfo escapes space, tab, newline and backslash as octal
    return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def resolve(mounts, paths, key):
    """Directory of `key`'s cgroup (a v1 controller or "v2"), or None."""
    if key not in mounts or key not in paths:
        return None
    mnt, root = mounts[key]
    path = paths[key]
    if root != "/" and (path == root or path.startswith(root.rstrip("/") + "/")):
        path = path[len(root):]  # cgroup namespaces / bind mounts
    d = os.path.normpath(mnt + "/" + path.lstrip("/"))
    if os.path.commonpath([d, mnt]) != os.path.normpath(mnt):
        return None  # "/../x": a cgroup outside what this mount (namespace) shows
    return d if os.path.isdir(d) else None


class JobCgroups:
    """The cgroup directories of one job: version 2 or a set of v1 controllers."""

    def __init__(self, version, dirs, created=False):
        self.version = version   # 1 or 2
        self.dirs = dirs         # v2: {"v2": dir}; v1: {controller: dir}
        self.created = created   # made by jobmon, so jobmon removes it

    def procs_files(self):
        return [os.path.join(d, "cgroup.procs") for d in self.dirs.values()]

    def join(self, pid=0):
        """Move `pid` (0: the calling process) into every directory of this job."""
        for f in self.procs_files():
            with open(f, "w") as fh:
                fh.write(str(pid or os.getpid()))

    def remove(self):
        """Remove a transient cgroup; leftover tasks are moved to the parent first."""
        if not self.created:
            return
        import time
        for d in self.dirs.values():
            parent = os.path.dirname(d)
            for _ in range(100):  # tasks still exiting keep the cgroup busy for a moment
                try:
                    with open(os.path.join(d, "cgroup.procs")) as f:
                        pids = f.read().split()
                    for p in pids:
                        with open(os.path.join(parent, "cgroup.procs"), "w") as f:
                            f.write(p)
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def own(pid="self"):
    """(mounts, paths) for a process."""
    with open(f"/proc/{pid}/cgroup") as f:
        paths = parse_proc_cgroup(f.read())
    with open("/proc/self/mountinfo") as f:
        mounts = parse_mountinfo(f.read())
    return mounts, paths


def existing(pid="self", prefer=None):
    """The cgroups `pid` is in now, if they are worth measuring (not the root)."""
    mounts, paths = own(pid)
    v2 = resolve(mounts, paths, "v2")
    if prefer in (None, 2) and v2 and paths.get("v2", "/") != "/" and os.path.exists(os.path.join(v2, "memory.stat")):
        return JobCgroups(2, {"v2": v2})
    if prefer in (None, 1):
        dirs = {c: resolve(mounts, paths, c) for c in V1_CONTROLLERS}
        if dirs.get("cpuacct") and dirs.get("memory") and paths.get("memory", "/") != "/":
            return JobCgroups(1, {c: d for c, d in dirs.items() if d})
    if prefer == 2 and v2 and paths.get("v2", "/") != "/":
        return JobCgroups(2, {"v2": v2})
    return None


def for_job(mode, version, name):
    """The cgroups to measure a new job in, or None for procfs.

    mode: auto (a transient cgroup when root, else procfs), create, existing, none;
    version: 1, 2 or None (v2 where it has memory accounting).
    """
    if mode == "none" or (mode == "auto" and os.geteuid() != 0):
        return None
    try:
        if mode == "existing":
            return existing(prefer=version)
        return create(name, prefer=version)
    except OSError:
        return None


def create(name, prefer=None):
    """A transient cgroup below the caller's own, or None if the kernel/permissions refuse.

    v2 is used where the controllers are delegated to us (memory enabled for children);
    otherwise v1 with cpuacct, memory, pids and blkio, as ARC's job cgroups do.
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
    base = resolve(mounts, paths, "v2")
    if not base:
        return None
    with open(os.path.join(base, "cgroup.subtree_control")) as f:
        delegated = f.read().split()
    if "memory" not in delegated and not forced:
        return None  # only cpu.stat would work: v1 or procfs measure more
    d = os.path.join(base, name)
    os.mkdir(d)
    return JobCgroups(2, {"v2": d}, created=True)


def _create_v1(mounts, paths, name):
    if not all(resolve(mounts, paths, c) for c in ("cpuacct", "memory")):
        return None
    dirs = {}
    try:
        for c in V1_CONTROLLERS:
            base = resolve(mounts, paths, c)
            if base:
                d = os.path.join(base, name)
                os.mkdir(d)
                dirs[c] = d
    except OSError:
        JobCgroups(1, dirs, created=True).remove()
        raise
    if "blkio" in dirs:
        _enable_blkio_stats(dirs["blkio"])
    return JobCgroups(1, dirs, created=True)


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


def walk(d):
    """d and all cgroups below it (jobs nest steps and tasks below the job cgroup)."""
    yield d
    try:
        entries = os.scandir(d)
    except OSError:
        return
    with entries:
        subs = [e.path for e in entries if e.is_dir(follow_symlinks=False)]
    for s in subs:
        yield from walk(s)
