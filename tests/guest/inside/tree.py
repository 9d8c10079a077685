"""Shape the guest's cgroup v2 tree the way systemd, a delegation, Slurm or HTCondor would.

Used only inside the guest: reset() moves every process to the root cgroup and takes the
root's controllers away again, which on a real host would wreck its services.
"""
import os
import signal
import subprocess
import time

from jobmon import cgroups

CONTROLLERS = ("cpu", "io", "memory", "pids")   # what systemd enables on a v2 host


def root():
    return os.path.normpath(cgroups.own()[0]["v2"][0])


def path(rel):
    return os.path.join(root(), rel.strip("/"))


def words(d, name):
    with open(os.path.join(d, name)) as f:
        return f.read().split()


def write(d, name, text):
    with open(os.path.join(d, name), "w") as f:
        f.write(text)


def procs(d):
    return [int(p) for p in words(d, "cgroup.procs")]


def move(pid, d):
    """pid 0: the calling process (as in a preexec_fn, before the child execs)."""
    write(d, "cgroup.procs", str(pid))


def enable(d, ctrls=CONTROLLERS):
    for c in ctrls:
        write(d, "cgroup.subtree_control", "+" + c)


def make(rel, ctrls=CONTROLLERS, along=True):
    """mkdir -p below the root; with `along`, every cgroup above the last one hands `ctrls`
    to its children (the root included), as systemd does for slices."""
    d = root()
    parts = [p for p in rel.strip("/").split("/") if p]
    for i, p in enumerate(parts):
        if along:
            enable(d, [c for c in ctrls if c not in words(d, "cgroup.subtree_control")])
        d = os.path.join(d, p)
        if not os.path.isdir(d):
            os.mkdir(d)
    return d


def delegate(d, uid, gid):
    """What systemd does for user@.service (Delegate=yes): the user owns the cgroup, may
    create children below it and move its processes among them."""
    for name in ("", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"):
        os.chown(os.path.join(d, name), uid, gid)


def below(d):
    """Every cgroup below d, deepest first."""
    out = [x for x in cgroups.walk(d) if x != d]
    return sorted(out, key=lambda x: x.count("/"), reverse=True)


def reset():
    """Back to the guest as it booted: every process in the root cgroup, no other cgroup,
    no controller handed out by the root."""
    top = root()
    move(os.getpid(), top)
    for d in below(top):
        for _ in range(300):   # processes still exiting keep a cgroup busy a moment
            try:
                for p in procs(d):
                    try:
                        move(p, top)
                    except ProcessLookupError:
                        pass
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)
        else:
            raise RuntimeError(f"cannot remove {d}: {procs(d)}")
    for c in words(top, "cgroup.subtree_control"):
        write(top, "cgroup.subtree_control", "-" + c)


def sleeper(cgroup, user=None):
    """A long sleep in `cgroup` (a login shell, a slurmstepd, ...), as `user` if given."""
    argv = ["sleep", "600"]
    if user:
        from helpers import as_user
        argv = as_user(argv, user)
    return subprocess.Popen(argv, preexec_fn=lambda: move(0, cgroup))


def stop(*procs):
    for p in procs:
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
