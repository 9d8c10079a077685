"""The processes a scheduler kills when a job's tasks end, seen from beside the job.

A scheduler may end a step by killing every process still in its cgroup once the step's
tasks (the processes its step daemon started: the batch script, the parallel launcher's
tasks; the plugin names that daemon, task_parent) have exited: a daemon the job left
behind, a background command nobody waited for. The job's own exit status says
nothing of them. The attach mode holds a pidfd for each process of each step it has seen;
a task's pidfd firing marks the moment the tasks end. What had not ended by the wake-up
that saw it, or is still listed in the step after it, was still running then (leftovers)
and was killed by the scheduler; with the kernel's exit status of each one
(PIDFD_INFO_EXIT, Linux 6.15 and later) only those that died of a signal count as killed.
A process whose end the same wake-up saw (the script's last command, or a leftover the
scheduler killed within the sampler's wake-up latency) counts only where its exit status says it
died of a signal: before 6.15 such a kill is missed, never a kill claimed that was not.

A process born and killed between two looks at the step is not seen. Standard library only.
"""
import fcntl
import os
import struct

MAX_TRACKED = 64     # pidfds held for processes that may be left over, the oldest first
# ioctl(pidfd, PIDFD_GET_INFO, struct pidfd_info): _IOWR(0xFF, 11, 64 bytes)
PIDFD_GET_INFO = 0xC040FF0B
PIDFD_INFO_EXIT = 1 << 3
_EXIT_CODE_AT = 60   # offset of exit_code (a wait status) in struct pidfd_info


def exit_status(fd):
    """The wait status of the process behind a pidfd once it is gone and reaped, or None
    (still there, not yet reaped, or a kernel before 6.15)."""
    buf = bytearray(struct.pack("=Q", PIDFD_INFO_EXIT) + bytes(56))
    try:
        fcntl.ioctl(fd, PIDFD_GET_INFO, buf)
    except OSError:
        return None
    if not struct.unpack_from("=Q", buf)[0] & PIDFD_INFO_EXIT:
        return None
    return struct.unpack_from("=i", buf, _EXIT_CODE_AT)[0]


def parent_name(pid):
    """The command name (comm) of a process's parent, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        ppid = data[data.rindex(b")") + 2:].split()[1].decode()
        with open(f"/proc/{ppid}/comm", "rb") as f:
            return f.read().strip().decode(errors="replace")
    except (OSError, ValueError, IndexError):
        return None


class Step:
    def __init__(self):
        self.tasks = set()       # pids of the step's tasks
        self.others = set()      # pids of its other processes, ever seen
        self.ended = None        # the wake-up in which its last task ended
        self.leftovers = set()   # still running when the tasks ended
        self.same_time = set()   # ended in the same wake-up as the last task: before or
        #                          after it, only their exit status can tell


class EndKills:
    """Per step: its tasks (processes whose parent is named `task_parent`) and the rest;
    look() at each read of the steps, fired() at each wake-up, counts() at the end."""

    def __init__(self, task_parent):
        self.task_parent = task_parent
        self.steps = {}
        self.fds = {}            # pid -> pidfd, kept open for the exit status
        self.exited = {}         # pid -> the wake-up in which its pidfd fired
        self.others_tracked = 0
        self.wakeup = 0

    def look(self, step, pids):
        st = self.steps.setdefault(step, Step())
        for pid in pids:
            if pid in st.tasks:
                continue
            if pid not in st.others:
                if parent_name(pid) == self.task_parent:
                    if st.ended is None:
                        st.tasks.add(pid)
                        self._track(pid)
                    continue                 # after the tasks: the scheduler's own
                st.others.add(pid)
                if self.others_tracked < MAX_TRACKED:
                    self.others_tracked += 1
                    self._track(pid)
            if st.ended is not None:         # still listed after the tasks ended
                st.leftovers.add(pid)

    def _track(self, pid):
        try:
            self.fds[pid] = os.pidfd_open(pid)
        except OSError:                      # gone already, or no pidfds (kernel < 5.3)
            self.exited.setdefault(pid, self.wakeup)

    def poll_fds(self):
        """The pidfds to wait on (a fired one stays readable: left out)."""
        return [fd for pid, fd in self.fds.items() if pid not in self.exited]

    def fired(self, fds):
        """One wake-up (call it at each): the pidfds in `fds` became readable (their
        processes exited). True when a step's tasks have just ended: read the steps now,
        what is still listed is left over."""
        self.wakeup += 1
        for pid, fd in self.fds.items():
            if fd in fds:
                self.exited.setdefault(pid, self.wakeup)
        ended = False
        for st in self.steps.values():
            if st.ended is None and st.tasks and st.tasks <= set(self.exited):
                st.ended = self.wakeup
                # held and not ended yet: still running when the tasks ended (the others
                # count if still listed at the next look)
                st.leftovers |= {p for p in st.others if p in self.fds and p not in self.exited}
                st.same_time |= {p for p in st.others if self.exited.get(p) == self.wakeup}
                ended = True
        return ended

    def totals(self):
        """(leftovers, killed) over the steps whose tasks were seen to end, or (None, None)."""
        known = [c for c in map(self.counts, self.steps) if c[0] is not None]
        if not known:
            return None, None
        return sum(c[0] for c in known), sum(c[1] for c in known)

    def counts(self, step):
        """(leftovers, killed) of a step: processes still running when its tasks ended,
        and those of them the scheduler killed; (None, None) if its tasks were not seen
        to end."""
        st = self.steps.get(step)
        if st is None or st.ended is None:
            return None, None
        leftovers, killed = len(st.leftovers), 0
        for pid in st.leftovers:
            status = self._status(pid)
            killed += status is None or os.WIFSIGNALED(status)
        for pid in st.same_time - st.leftovers:   # killed: after the tasks; else before
            status = self._status(pid)
            if status is not None and os.WIFSIGNALED(status):
                leftovers, killed = leftovers + 1, killed + 1
        return leftovers, killed

    def _status(self, pid):
        fd = self.fds.get(pid)
        return exit_status(fd) if fd is not None else None

    def close(self):
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}
