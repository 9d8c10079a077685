"""Where a process's cgroups are: /proc/<pid>/cgroup and /proc/self/mountinfo read and
resolved to directories, never a hard-coded layout (each scheduler and systemd nest job
cgroups differently). Standard library only: read inside every job."""
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


def own(pid="self"):
    """(mounts, paths) for a process."""
    with open(f"/proc/{pid}/cgroup") as f:
        paths = parse_proc_cgroup(f.read())
    with open("/proc/self/mountinfo") as f:
        mounts = parse_mountinfo(f.read())
    return mounts, paths


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
