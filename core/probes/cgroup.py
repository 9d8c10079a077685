"""What the cgroup v1 and v2 probes share: counting a job's processes across its cgroups."""
import os

from .files import read_all, reader


class Counter:
    """Counts a job's processes and threads across its cgroup and any nested ones.

    A cgroup jobmon created has no children: one directory. Scheduler job cgroups nest
    steps and tasks below the job, with processes only in the leaves: walk them. The list
    files are opened anew each time: cgroup v1 caches a pid list per open file and keeps
    serving it while it is re-read within a second, so a kept-open cgroup.procs goes stale.
    """

    def __init__(self, d, procs_file, threads_file, nested):
        self.d, self.procs_file, self.threads_file, self.nested = d, procs_file, threads_file, nested
        # the pids controller's O(1) task count beats listing every thread
        self.tasks = None if nested else reader(os.path.join(d, "pids.current"))

    def _dirs(self):
        if not self.nested:
            return (self.d,)
        from ..cgroups import walk
        return walk(self.d)

    def count(self):
        procs = threads = 0
        for d in self._dirs():
            try:
                procs += read_all(os.path.join(d, self.procs_file)).count(b"\n")
                if self.tasks is None:
                    threads += read_all(os.path.join(d, self.threads_file)).count(b"\n")
            except OSError:
                pass
        if self.tasks is not None:
            threads = int(self.tasks.read())
        return procs, threads

    def pids(self):
        out = []
        for d in self._dirs():
            try:
                out += [int(p) for p in read_all(os.path.join(d, self.procs_file)).split()]
            except OSError:
                pass
        return out

    def close(self):
        if self.tasks is not None:
            self.tasks.close()
