"""Find a job's cgroup that someone else made (a scheduler), by the names its directories
may have. Standard library only: the attach-mode sampler runs beside every job.

The hierarchies to search come from /proc/self/mountinfo, never from a fixed layout: the
v2 tree where it has controllers, else the v1 hierarchies jobmon measures with (cpuacct,
memory, pids, blkio). Below each root the search goes breadth-first, to a bounded depth,
and does not descend into what the caller says belongs to other jobs (a node running a
thousand jobs holds a thousand job directories).
"""
import os

from .job_cgroups import JobCgroups
from .paths import V1_CONTROLLERS, parse_mountinfo

MAX_DEPTH = 8   # scheduler job cgroups sit 2-4 levels down (slice / scope / job)


def roots(mountinfo=None, root_of=None):
    """{"v2": mountpoint} where the unified hierarchy hands out controllers (a pure v2
    host), else {controller: mountpoint} of the v1 hierarchies jobmon reads. mountinfo:
    the text of /proc/self/mountinfo (default: read it); root_of: maps a mount point to
    where it is looked at (tests use recorded trees)."""
    if mountinfo is None:
        with open("/proc/self/mountinfo") as f:
            mountinfo = f.read()
    mounts = parse_mountinfo(mountinfo)
    where = root_of or (lambda p: p)
    out = {}
    if "v2" in mounts:
        top = where(mounts["v2"][0])
        try:
            with open(os.path.join(top, "cgroup.controllers")) as f:
                controllers = f.read().split()
        except OSError:
            controllers = []
        # a hybrid host's cgroup2 mount holds no controllers: its schedulers use v1
        if controllers and not any(c in mounts for c in ("cpuacct", "memory")):
            return {"v2": top}
    for c in V1_CONTROLLERS:
        if c in mounts:
            out[c] = where(mounts[c][0])
    return out


def search(top, wanted, skip=None, max_depth=MAX_DEPTH):
    """Directories below `top` whose name is in `wanted`, breadth-first, shallowest first.
    skip(name) -> True: do not look inside (another job's directory, a step)."""
    found = []
    level = [top]
    for _ in range(max_depth):
        below = []
        for d in level:
            try:
                entries = os.scandir(d)
            except OSError:   # removed while we looked
                continue
            with entries:
                for e in entries:
                    if not e.is_dir(follow_symlinks=False):
                        continue
                    if e.name in wanted:
                        found.append(e.path)
                    elif not (skip and skip(e.name)):
                        below.append(e.path)
        if found or not below:
            return found
        level = below
    return found


def find(wanted, skip=None, choose=None, where=None):
    """The job's cgroups (a JobCgroups, not created by jobmon) or None if none is there yet.

    wanted: directory names of the job; skip(name): names not to descend into;
    choose(paths) -> path or None: picks one when several match (a node running several
    instances of a scheduler's node daemon), None when none of them is this job's;
    where: roots() output (default: this machine's)."""
    where = roots() if where is None else where
    pick = choose or (lambda paths: paths[0])
    if "v2" in where:
        paths = search(where["v2"], wanted, skip)
        path = pick(paths) if paths else None
        return JobCgroups(2, {"v2": path}) if path else None
    if "cpuacct" not in where or "memory" not in where:
        return None
    paths = search(where["cpuacct"], wanted, skip)
    path = pick(paths) if paths else None
    if not path:
        return None
    rel = os.path.relpath(path, where["cpuacct"])
    dirs = {"cpuacct": os.path.join(where["cpuacct"], rel)}
    for c in V1_CONTROLLERS:   # schedulers use one relative path in every hierarchy
        if c != "cpuacct" and c in where:
            d = os.path.join(where[c], rel)
            if os.path.isdir(d):
                dirs[c] = d
    return JobCgroups(1, dirs) if "memory" in dirs else None


def gone(cg):
    """True once the job's cgroup directory has been removed."""
    d = cg.dirs.get("v2") or cg.dirs.get("cpuacct")
    return not os.path.isdir(d)
