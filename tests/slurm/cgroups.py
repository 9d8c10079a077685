"""The cgroup side of the test cluster: which version the host has, what slurmd needs made
before it starts (v2 without systemd), and removing what Slurm left behind afterwards.

Slurm's v1 plugin makes `<controller>/slurm_<node>/uid_<uid>/job_<id>/step_<s>/task_<t>`
(Debian's build, `/slurm_%n`) and does not remove the top two levels. Its v2 plugin, with
IgnoreSystemd=yes, works below `system.slice/<node>_slurmstepd.scope`, which must exist.
"""
import os
import subprocess

from .common import which

CGROUP_ROOT = "/sys/fs/cgroup"
# Enabled at /, system.slice and the scope. Slurm 22.05 reads cgroup.controllers without
# stripping the newline, so whichever controller comes last is "not enabled": `pids` comes
# after `memory` in the kernel's order, which keeps memory usable.
V2_CONTROLLERS = ("cpuset", "cpu", "io", "memory", "pids")
DUMMY_IFACE = "jobmon0"
DUMMY_ADDR = "10.251.0.1/24"


def mounts():
    """[(mountpoint, fstype, super options)] from /proc/self/mountinfo."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            fstype, _source, sopts = right.split()[:3]
            out.append((left.split()[4], fstype, sopts))
    return out


def version():
    """'v2' on a pure cgroup2 host, else 'v1' (hybrid hosts: Slurm's v2 plugin refuses them)."""
    for mnt, fstype, _ in mounts():
        if mnt == CGROUP_ROOT:
            return "v2" if fstype == "cgroup2" else "v1"
    return "v1"


def v1_mounts():
    """Mount points of the v1 hierarchies (cpu, memory, freezer, name=systemd ...)."""
    return [mnt for mnt, fstype, _ in mounts() if fstype == "cgroup"]


def slurm_dirs_v1(node):
    """The cgroups Slurm's v1 plugin makes at each hierarchy's root for this node."""
    out = []
    for mnt in v1_mounts():
        try:
            names = os.listdir(mnt)
        except OSError:
            continue
        out += [os.path.join(mnt, n) for n in names
                if n in ("slurm_" + node, "slurm") and os.path.isdir(os.path.join(mnt, n))]
    return out


def tasks_in(tree):
    """Pids still in any cgroup of this tree (v1 `tasks` or v2 `cgroup.procs`)."""
    pids = set()
    for d, _subdirs, files in os.walk(tree):
        for name in ("cgroup.procs", "tasks"):
            if name in files:
                try:
                    with open(os.path.join(d, name)) as f:
                        pids.update(int(p) for p in f.read().split())
                except OSError:
                    pass
    return pids


def remove_tree(tree):
    """rmdir every cgroup of the tree, deepest first. Returns those that would not go."""
    left = []
    for d, _subdirs, _files in sorted(os.walk(tree, topdown=False), key=lambda w: -w[0].count("/")):
        try:
            os.rmdir(d)
        except FileNotFoundError:
            pass
        except OSError:
            left.append(d)
    return left


class V1:
    """cgroup v1: nothing to prepare; afterwards remove this node's slurm_* trees."""

    def __init__(self, node):
        self.node = node
        self.before = set()

    def prepare(self):
        busy = [d for d in slurm_dirs_v1(self.node) if tasks_in(d)]
        if busy:
            raise RuntimeError(f"another Slurm node named {self.node!r} is running here "
                               f"(processes in {busy[0]})")
        self.cleanup()   # empty trees a killed session left
        self.before = set(slurm_dirs_v1(self.node))

    def cleanup(self):
        left = []
        for d in slurm_dirs_v1(self.node):
            left += remove_tree(d)
        return left


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _enable(cgroup, controllers):
    """Enables each controller the cgroup has for its children, one write each (a write of
    several fails whole if one fails), in the order given."""
    with open(os.path.join(cgroup, "cgroup.controllers")) as f:
        available = f.read().split()
    with open(os.path.join(cgroup, "cgroup.subtree_control")) as f:
        enabled = f.read().split()
    for c in controllers:
        if c in available and c not in enabled:
            _write(os.path.join(cgroup, "cgroup.subtree_control"), "+" + c)


def has_ordinary_ipv4():
    out = subprocess.run([which("ip"), "-o", "-4", "addr", "show"], capture_output=True, text=True,
                         check=True).stdout
    return any(" inet " in l and " inet 127." not in l for l in out.splitlines())


class V2:
    """cgroup v2 without systemd (Debian's Slurm 22.05). Before slurmd starts:
    1. an ordinary IPv4 address: Slurm skips loopback when it looks up its own address,
       and on a host with only `lo` slurmdbd dies with `Unable to resolve "(null)"`;
    2. system.slice/<node>_slurmstepd.scope: Slurm only makes it through systemd;
    3. controllers enabled at /, system.slice and the scope (see V2_CONTROLLERS).
    cleanup() removes what prepare() made."""

    def __init__(self, node, root=CGROUP_ROOT):
        self.node = node
        self.root = root
        self.slice = os.path.join(root, "system.slice")
        self.scope = os.path.join(self.slice, f"{node}_slurmstepd.scope")
        self.made = []          # cgroups this object created, outermost first
        self.iface = None

    def prepare(self):
        if os.path.isdir(self.scope):
            if tasks_in(self.scope):
                raise RuntimeError(f"another Slurm node named {self.node!r} is running here "
                                   f"(processes in {self.scope})")
            remove_tree(self.scope)
        if not has_ordinary_ipv4():
            subprocess.run([which("ip"), "link", "add", DUMMY_IFACE, "type", "dummy"], check=True)
            self.iface = DUMMY_IFACE
            subprocess.run([which("ip"), "addr", "add", DUMMY_ADDR, "dev", DUMMY_IFACE], check=True)
            subprocess.run([which("ip"), "link", "set", DUMMY_IFACE, "up"], check=True)
        _enable(self.root, V2_CONTROLLERS)
        for d in (self.slice, self.scope):
            if not os.path.isdir(d):
                os.mkdir(d)
                self.made.append(d)
            _enable(d, V2_CONTROLLERS)

    def cleanup(self):
        left = remove_tree(self.scope) if os.path.isdir(self.scope) else []
        if self.slice in self.made:
            try:
                os.rmdir(self.slice)   # only if nothing else lives there now
            except OSError:
                pass
        if self.iface:
            subprocess.run([which("ip"), "link", "del", self.iface], check=False)
            self.iface = None
        return left


def for_version(ver, node):
    return V2(node) if ver == "v2" else V1(node)
