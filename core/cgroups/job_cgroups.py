"""One job's cgroups: the directories it is measured in, joined by its processes and, when
jobmon made them, removed at its end; and the cgroups a process is in already (existing)."""
import os

from .paths import V1_CONTROLLERS, own, resolve


class JobCgroups:
    """The cgroup directories of one job: version 2 or a set of v1 controllers."""

    def __init__(self, version, dirs, created=False, undo=None, pressure_dir=None):
        self.version = version   # 1 or 2
        self.dirs = dirs         # v2: {"v2": dir}; v1: {controller: dir}
        self.created = created   # made by jobmon, so jobmon removes it
        self.undo = undo         # puts back what making it changed (jobmon's leaf move)
        # v1 on a hybrid host: a controller-less v2 cgroup of the job's, for its pressure
        self.pressure_dir = pressure_dir

    def procs_files(self):
        extra = [self.pressure_dir] if self.pressure_dir else []
        return [os.path.join(d, "cgroup.procs") for d in list(self.dirs.values()) + extra]

    def join(self, pid=0):
        """Move `pid` (0: the calling process) into every directory of this job."""
        for f in self.procs_files():
            with open(f, "w") as fh:
                fh.write(str(pid or os.getpid()))

    def remove(self):
        """Remove a transient cgroup; leftover tasks join jobmon's own cgroup first (on v2
        the parent may hand out controllers, and so may hold no processes)."""
        if not self.created:
            return
        try:
            mounts, paths = own()
        except OSError:
            mounts, paths = {}, {}   # then the parent, as v1 always allows
        extra = {"v2": self.pressure_dir} if self.pressure_dir else {}
        for key, d in list(self.dirs.items()) + list(extra.items()):
            _empty_and_remove(d, resolve(mounts, paths, key) or os.path.dirname(d))
        if self.undo:
            try:
                self.undo()
            except OSError:
                pass


def _empty_and_remove(d, to):
    import time
    for _ in range(100):  # tasks still exiting keep the cgroup busy for a moment
        try:
            for p in _procs(d):
                _write(os.path.join(to, "cgroup.procs"), p)
            os.rmdir(d)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(0.01)
    return False


def _procs(d):
    with open(os.path.join(d, "cgroup.procs")) as f:
        return f.read().split()


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def existing(pid="self", prefer=None):
    """The cgroups `pid` is in now, if they are worth measuring (not the root)."""
    mounts, paths = own(pid)
    v2 = resolve(mounts, paths, "v2")
    if prefer in (None, 2) and v2 and paths.get("v2", "/") != "/" and os.path.exists(os.path.join(v2, "memory.stat")):
        return JobCgroups(2, {"v2": v2})
    if prefer in (None, 1):
        dirs = {c: resolve(mounts, paths, c) for c in V1_CONTROLLERS}
        if dirs.get("cpuacct") and dirs.get("memory") and paths.get("memory", "/") != "/":
            # the cpu controller's cgroup (CPU quota, throttling) where it is the job's own
            if paths.get("cpu") == paths.get("cpuacct"):
                dirs["cpu"] = resolve(mounts, paths, "cpu")
            return JobCgroups(1, {c: d for c, d in dirs.items() if d})
    if prefer == 2 and v2 and paths.get("v2", "/") != "/":
        return JobCgroups(2, {"v2": v2})
    return None


