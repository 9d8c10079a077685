"""Network bytes and packets per cgroup, counted by the kernel (docs/network.md).

Two BPF_PROG_TYPE_CGROUP_SKB programs, one for ingress and one for egress, attached to
the root of the node's cgroup v2 hierarchy, run for every packet a socket of the node
sends or receives. Each adds the packet's length (`__sk_buff.len`: from the network header
on) and 1 to the counters of the socket's cgroup and of every cgroup above it, up to
MAX_LEVELS below the root (bpf_skb_ancestor_cgroup_id), in a per-CPU hash map keyed by
cgroup id. So a job's cgroup holds the traffic of every socket made inside it, in
whatever sub-cgroup (a scheduler's steps and tasks, a systemd scope), even after those
sub-cgroups are gone. The programs are hand-assembled (jobmon.node.bpf) and checked by
the kernel's verifier when they load; they always let the packet through.

The node reader sums each cgroup's per-CPU values and publishes them (DIR/network.txt,
read by probes/node_net.py): a JSON header, then one line per cgroup,
`<cgroup id> <rx bytes> <tx bytes> <rx packets> <tx packets>`. A cgroup's id is the inode
number of its directory. Counters of cgroups gone for GONE_GRACE seconds are dropped
(PRESSED_GRACE while the map is three quarters full): whether a counted cgroup still
exists is asked of the kernel by its id (open_by_handle_at), so a sweep costs one call
per counter, however many cgroups the tree holds.

A full map refuses new cgroups: their packets go uncounted. The header says how many
refreshes found it full ("full_refreshes"); a job whose counter was not there yet when one
did says its figures are not available, never 0 bytes (jobmon.probes.node_net).
"""
import ctypes
import errno
import json
import os
import struct
import time

from . import bpf
from .bpf import R0, R1, R2, R3, R4, R6, R7, R9, R10

FILE = "network.txt"
FORMAT = 1
VALUE = struct.Struct("<4Q")      # rx bytes, tx bytes, rx packets, tx packets
MAX_LEVELS = 16                   # cgroups below the root that count a packet
MAX_ENTRIES = 16384               # cgroups counted at once (allocated as they come)
HELPER_LOOKUP, HELPER_UPDATE, HELPER_ANCESTOR_CGROUP_ID = 1, 2, 83
NOEXIST = 1
GONE_GRACE = 120.0    # s a vanished cgroup stays published: its job's last read comes late
PRESSED_GRACE = 15.0  # ... while the map is PRESSED full (a job's last read: 1.5 periods)
PRESSED = MAX_ENTRIES * 3 // 4
# the kernel counts a large map's entries per CPU, in batches: "full" with this margin
FULL = MAX_ENTRIES - 256
SWEEP_EVERY = 30.0    # s between sweeps for vanished cgroups
PRESSED_SWEEP_EVERY = 3.0   # ... while PRESSED (a sweep: ~5 us of CPU per counter)
PRESSED_HOLD = 60.0   # s the PRESSED pace lasts after the map was last that full
WALK_MOST = 20000     # directories a sweep walks where the kernel cannot be asked by id
FILEID_KERNFS = 0xFE  # a cgroup's file handle: its 8-byte id (include/linux/exportfs.h)


def program(map_fd, egress, levels=MAX_LEVELS):
    """The instructions: for each level from 1 (just below the root) down to the socket's
    own cgroup, look its counters up (made, zero, on first use) and add to them."""
    a = bpf.Asm()
    nbytes = 8 if egress else 0
    npackets = nbytes + 16
    a.mov(R6, R1)                       # the packet (struct __sk_buff)
    a.load32(R7, R6, 0)                 # its len
    a.mov_imm(R9, 1)
    for level in range(1, levels + 1):
        add, nxt = f"add{level}", f"next{level}"
        a.mov(R1, R6)
        a.mov_imm(R2, level)
        a.call(HELPER_ANCESTOR_CGROUP_ID)
        a.jump_if_zero(R0, "out")       # the socket's cgroup is above this level
        a.store64(R10, -8, R0)          # the key
        for attempt in (1, 2):          # look up; if missing, make it and look again
            a.load_map_fd(R1, map_fd)
            a.mov(R2, R10)
            a.add_imm(R2, -8)
            a.call(HELPER_LOOKUP)
            if attempt == 2:
                a.jump_if_zero(R0, nxt)     # the map is full: this level goes uncounted
                break
            a.jump_if_not_zero(R0, add)
            for off in (-40, -32, -24, -16):
                a.store64_imm(R10, off, 0)
            a.load_map_fd(R1, map_fd)
            a.mov(R2, R10)
            a.add_imm(R2, -8)
            a.mov(R3, R10)
            a.add_imm(R3, -40)
            a.mov_imm(R4, NOEXIST)          # another CPU may have made it meanwhile
            a.call(HELPER_UPDATE)
        a.label(add)
        a.atomic_add64(R0, nbytes, R7)
        a.atomic_add64(R0, npackets, R9)
        a.label(nxt)
    a.label("out")
    a.mov_imm(R0, 1)                    # let every packet through
    a.exit()
    return a.code()


def cgroup2_root(mountinfo="/proc/self/mountinfo"):
    """The mount point of the cgroup v2 hierarchy, or None (a cgroup v1-only node)."""
    from ..cgroups import parse_mountinfo
    with open(mountinfo) as f:
        mounts = parse_mountinfo(f.read())
    return mounts["v2"][0] if "v2" in mounts else None


def unavailable(why):
    """What the reader publishes where it cannot count: jobs say so, with this reason."""
    return (json.dumps({"format": FORMAT, "available": False, "why": why}) + "\n").encode()


class NetCounter:
    """The loaded and attached programs, their map, and the cgroups seen gone."""

    file = FILE

    def __init__(self, root, period, clock=time.monotonic):
        self.root, self.period, self.clock = root, period, clock
        self.ncpu = bpf.possible_cpus()
        self.fds = []
        try:
            self.map = self._keep(bpf.map_create(bpf.MAP_PERCPU_HASH, 8, VALUE.size,
                                                 MAX_ENTRIES, bpf.NO_PREALLOC, "jobmon_net"))
            target = self._keep(os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
            self.root_fd = target
            for egress, kind in ((False, bpf.CGROUP_INET_INGRESS),
                                 (True, bpf.CGROUP_INET_EGRESS)):
                prog = self._keep(bpf.prog_load(bpf.PROG_CGROUP_SKB, program(self.map, egress),
                                                kind, "jobmon_net_" + ("tx" if egress else "rx")))
                self._keep(bpf.link_create(prog, target, kind))
        except OSError:
            self.close()
            raise
        self.since = round(clock(), 6)
        self.gen = f"{os.getpid()}-{self.since}"
        self.gone = {}            # cgroup id -> when its directory was first missed
        self.swept = clock()
        self.full_refreshes = 0   # refreshes that found the map full
        self.pressed_at = -1e9    # when the map was last PRESSED full
        self.by_id = True         # open_by_handle_at answers; else a bounded walk
        self.batch = True         # the kernel reads the map in batches (Linux 5.6)
        self.warned = False

    def _keep(self, fd):
        self.fds.append(fd)
        return fd

    def counts(self):
        """{cgroup id: (rx bytes, tx bytes, rx packets, tx packets)}, the CPUs summed."""
        out = {}
        size = VALUE.size * self.ncpu
        if self.batch:
            try:
                items = bpf.map_items(self.map, 8, size)
            except OSError:           # before Linux 5.6: a call per key
                self.batch = False
        if not self.batch:
            items = ((k, bpf.map_lookup(self.map, k, size)) for k in bpf.map_keys(self.map, 8))
        for key, raw in items:
            if raw is None:
                continue
            total = [0, 0, 0, 0]
            for per_cpu in VALUE.iter_unpack(raw):
                for i, v in enumerate(per_cpu):
                    total[i] += v
            out[struct.unpack("<Q", key)[0]] = total
        return out

    def sweep(self, ids, grace=GONE_GRACE):
        """Drop the counters of cgroups gone for `grace` seconds."""
        now = self.clock()
        live = self._live(ids)
        for cid in ids:
            if live is None or cid in live:
                self.gone.pop(cid, None)
            elif now - self.gone.setdefault(cid, now) > grace:
                bpf.map_delete(self.map, struct.pack("<Q", cid))
                del self.gone[cid]
        self.swept = now

    def _live(self, ids):
        """The ids among `ids` whose cgroup exists; None where that cannot be told."""
        if self.by_id:
            try:
                return {cid for cid in ids if _exists(self.root_fd, cid)}
            except OSError as e:
                self.by_id = False
                self._warn(f"cannot ask the kernel for cgroups by id ({e.strerror}): "
                           f"walking at most {WALK_MOST} directories instead")
        live = set()
        for n, (d, _dirs, _files) in enumerate(os.walk(self.root)):
            if n >= WALK_MOST:
                self._warn(f"more than {WALK_MOST} cgroups: counters of vanished ones "
                           "are kept (a full map leaves new jobs without figures)")
                return None
            try:
                live.add(os.stat(d).st_ino)
            except OSError:
                pass
        return live

    def _warn(self, text):
        if not self.warned:
            import logging
            logging.getLogger("jobmon.node").warning("network counters: %s", text)
            self.warned = True

    def refresh(self, seq):
        t = self.clock()
        counts = self.counts()
        full = len(counts) >= FULL
        self.full_refreshes += full
        if len(counts) >= PRESSED:
            self.pressed_at = t
        # pressed a while after: the last of a flood's cgroups go as fast as its first
        pressed = t - self.pressed_at < PRESSED_HOLD
        if t - self.swept >= (PRESSED_SWEEP_EVERY if pressed else SWEEP_EVERY):
            self.sweep(counts, PRESSED_GRACE if pressed else GONE_GRACE)
        head = {"format": FORMAT, "available": True, "host": os.uname().nodename, "seq": seq,
                "mono": round(t, 6), "time": round(time.time(), 3), "period": self.period,
                "since": self.since, "gen": self.gen, "levels": MAX_LEVELS,
                "cgroups": len(counts), "max_cgroups": MAX_ENTRIES, "full": full,
                "full_refreshes": self.full_refreshes}
        lines = [json.dumps(head, separators=(",", ":"))]
        lines += [f"{cid} {v[0]} {v[1]} {v[2]} {v[3]}" for cid, v in sorted(counts.items())]
        return ("\n".join(lines) + "\n").encode()

    def close(self):
        for fd in reversed(self.fds):     # links first: the programs detach
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []


_libc = None


def _exists(root_fd, cid):
    """Whether the cgroup of id `cid` exists: open_by_handle_at(2) with its kernfs handle,
    which the kernel answers ESTALE for one removed. OSError where it cannot answer."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    handle = ctypes.create_string_buffer(struct.pack("<IiQ", 8, FILEID_KERNFS, cid), 16)
    fd = _libc.open_by_handle_at(root_fd, handle, os.O_RDONLY | os.O_CLOEXEC |
                                 os.O_DIRECTORY)
    if fd >= 0:
        os.close(fd)
        return True
    e = ctypes.get_errno()
    if e in (errno.ESTALE, errno.ENOENT):
        return False
    raise OSError(e, os.strerror(e))


class Unavailable:
    """Where the node cannot count per job: the file says why, and jobs say so."""

    file = FILE

    def __init__(self, why):
        self.why = why
        self.data = unavailable(why)

    def refresh(self, seq):
        return self.data

    def close(self):
        pass


def network_source(period, clock=time.monotonic, mountinfo="/proc/self/mountinfo"):
    """The counter, or an Unavailable that says why there is none."""
    try:
        root = cgroup2_root(mountinfo)
    except OSError as e:
        return Unavailable(f"cannot read {mountinfo}: {e.strerror}")
    if root is None:
        return Unavailable("this node has no cgroup v2 hierarchy (cgroup v1 only): no "
                           "per-job network counters")
    try:
        return NetCounter(root, period, clock)
    except OSError as e:
        hint = " (the node reader needs root: CAP_BPF and CAP_NET_ADMIN)" \
            if e.errno in (1, 13) else ""
        return Unavailable(f"the kernel refused the counting program: {e.strerror}{hint}")
