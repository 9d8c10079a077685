"""What the node's GPU reader publishes, and how a job reads it: the directory contract,
the trust and freshness rules, which devices and which GPU processes are the job's.
Standard library only (it runs in every job's sampler); the probe is probes/gpu_node.py,
the node reader jobmon.node; docs/gpu.md has the whole design.

The directory contract (the reader writes it, this module owns it):
  DIR/gpus.json   JSON lines: a header object (FORMAT, times, period, the reader's PID
                  namespace), then one object per GPU in NVML index order. Replaced whole
                  at every refresh (written under a temporary name, then renamed), so a
                  reader never sees half a file; a job parses the header and its GPUs' lines.
  DIR/energy.json, DIR/network.txt   the node reader's other files, read with the same
                  Published and trust rules (probes/node_energy.py, probes/node_net.py).
Trust: nobody but root can have made DIR (every directory above it belongs to root and is
writable by root alone; a sticky world-writable one such as /tmp is accepted above DIR's
parent); DIR and the file belong to the reader's user and are writable by it alone. A job
user cannot make the sampler believe figures of their own making.
Freshness: a snapshot older than MAX_AGE_PERIODS refresh periods is never used.
"""
import os
import stat

FILE = "gpus.json"
FORMAT = 1
MAX_AGE_PERIODS = 2
NVIDIA_MAJOR = 195      # /dev/nvidiaN is char 195:N


class Untrusted(Exception):
    pass


def trusted_dir(path):
    """(fd, owner uid) of the reader's directory, once its ancestry and mode say that
    only root could have put it there and only its owner can change it."""
    real = os.path.realpath(path)
    parts = [p for p in real.split("/") if p]
    chain = ["/" + "/".join(parts[:i]) for i in range(len(parts))]   # "/", "/run", ...
    for i, p in enumerate(chain):
        st = os.lstat(p)
        if st.st_uid != 0:
            raise Untrusted(f"{p} belongs to uid {st.st_uid}, not root")
        parent = i == len(chain) - 1
        if st.st_mode & 0o022 and (parent or not st.st_mode & stat.S_ISVTX):
            raise Untrusted(f"{p} is writable by others than root")
    fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    if st.st_mode & 0o022:
        os.close(fd)
        raise Untrusted(f"{real} is writable by others than its owner")
    return fd, st.st_uid


class Snapshot:
    """One published file. Lines are parsed when asked for: a job reads its GPUs only."""

    def __init__(self, data):
        import json   # here: jobmon.metrics imports this module on every job's start
        self.lines = data.decode().rstrip("\n").split("\n")     # str: json skips sniffing
        self.head = json.loads(self.lines[0])
        if not isinstance(self.head, dict) or self.head.get("format") != FORMAT:
            raise ValueError(f"not a format {FORMAT} GPU snapshot")
        self.parsed = {}

    def __getitem__(self, key):
        return self.head[key]

    def gpu(self, index):
        import json
        g = self.parsed.get(index)
        if g is None:
            g = self.parsed[index] = json.loads(self.lines[1 + index])
        return g

    def find(self, index, uuid):
        """The GPU `uuid`, looked for at `index` first (where it was before)."""
        if index < len(self.lines) - 1 and self.gpu(index)["uuid"] == uuid:
            return self.gpu(index)
        return next((g for g in self.gpus() if g["uuid"] == uuid), None)

    def gpus(self):
        return [self.gpu(i) for i in range(len(self.lines) - 1)]


class Published:
    """One of the reader's files (`name` in the directory `path`): re-read (and re-checked)
    whenever it was replaced, and parsed by `parse(bytes)`."""

    def __init__(self, path, name=FILE, parse=None):
        self.path, self.name = path, name
        self.parse = parse or Snapshot
        self.dfd, self.owner = trusted_dir(path)
        self.key = self.snap = None

    def _open(self):
        return os.open(self.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.dfd)

    def read(self):
        """The latest snapshot. OSError (no file), Untrusted or ValueError otherwise."""
        try:
            fd = self._open()
        except FileNotFoundError:      # a restarted service may have made DIR anew
            dfd, owner = trusted_dir(self.path)
            os.close(self.dfd)
            self.dfd, self.owner = dfd, owner
            fd = self._open()
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != self.owner or st.st_mode & 0o022:
                raise Untrusted(f"{self.path}/{self.name} is not a file of the reader's "
                                "user writable by it alone")
            key = (st.st_ino, st.st_mtime_ns, st.st_size)
            if key == self.key:
                return self.snap
            data = os.pread(fd, st.st_size + 1, 0)
        finally:
            os.close(fd)
        snap = self.parse(data)
        self.key, self.snap = key, snap
        return snap

    def close(self):
        if self.dfd is not None:
            os.close(self.dfd)
            self.dfd = None


# --- which devices are the job's ---

def usable(gpu, dev_dir="/dev"):
    """May this process use the GPU? access(2) on its /dev/nvidiaN consults the device
    cgroup (a scheduler's device constraint, v1 or v2) as well as the mode bits, and unlike open()
    never wakes the driver. A GPU whose minor number NVML did not give counts as usable."""
    minor = gpu.get("minor")
    if minor is None:
        return True
    path = os.path.join(dev_dir, f"nvidia{minor}")
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == NVIDIA_MAJOR
            and os.minor(st.st_rdev) == minor and os.access(path, os.R_OK | os.W_OK))


def _by_prefix(entries, item):
    """The one entry whose UUID starts with item (CUDA accepts unique abbreviations)."""
    found = [e for e in entries if e["uuid"].startswith(item)]
    return found[0] if len(found) == 1 else None


def _lookup(gpus, item):
    if item.isdigit():
        i = int(item)
        return (gpus[i], None) if i < len(gpus) else None
    if item.startswith("MIG-GPU-"):            # drivers < 470: MIG-<GPU uuid>/<gi>/<ci>
        parent, _, ids = item[4:].partition("/")
        gpu = _by_prefix(gpus, parent)
        for inst in (gpu or {}).get("instances") or ():
            if ids == f"{inst['gi']}/{inst['ci']}":
                return gpu, inst
        return None
    if item.startswith("MIG-"):
        pairs = [(g, m) for g in gpus for m in g.get("instances") or ()]
        inst = _by_prefix([m for _g, m in pairs], item)
        return next(((g, m) for g, m in pairs if m is inst), None) if inst else None
    if item.startswith("GPU-"):
        gpu = _by_prefix(gpus, item)
        return (gpu, None) if gpu else None
    return None


def job_devices(snap, visible, can_use=usable):
    """[(gpu, MIG instance or None)] of the job. visible: CUDA_VISIBLE_DEVICES (None: every
    GPU the job may use). Indices count among the GPUs the job may use, in NVML order, as
    CUDA and an NVML inside a device-constrained job count them; UUIDs (GPU-, MIG-, unique
    prefixes) name devices wherever they are. Like CUDA, the list ends at the first entry
    that names nothing ("NoDevFiles", a bad index)."""
    gpus = [g for g in snap.gpus() if can_use(g)]
    if visible is None:
        return [(g, None) for g in gpus]
    out, seen = [], set()
    for item in visible.split(","):
        item = item.strip()
        if not item:
            continue
        dev = _lookup(gpus, item)
        if dev is None:
            break
        key = (dev[1] or dev[0])["uuid"]
        if key not in seen:
            seen.add(key)
            out.append(dev)
    return out


# --- which GPU processes are the job's ---

def own_pidns(proc="/proc"):
    st = os.stat(f"{proc}/self/ns/pid")
    return [st.st_dev, st.st_ino]


def start_ticks(pid, proc="/proc"):
    """Start time of a process (clock ticks since boot), the same in every PID namespace."""
    with open(f"{proc}/{pid}/stat", "rb") as f:
        data = f.read()
    return int(data[data.rindex(b")") + 2:].split()[19])


class PidMatcher:
    """NVML gives pids of the reader's PID namespace (the node's). A sampler there compares
    them with its job's pids directly. A sampler in another PID namespace (a container, a
    scheduler's per-job namespace) compares its pids with the pids each process has in the
    namespaces nested below the reader's (NSpid), and only counts a process whose start time
    also agrees: a pid number alone may be another namespace's process."""

    def __init__(self, reader_pidns, proc="/proc"):
        self.proc = proc
        self.same = own_pidns(proc) == reader_pidns

    def mine(self, p, pids):
        """True / False, or None when it cannot tell (the reader could not read /proc)."""
        if self.same:
            return p["pid"] in pids
        if p.get("ns_unknown"):
            return None
        for n in (p.get("nspid") or ())[1:]:
            if n in pids:
                try:
                    return start_ticks(n, self.proc) == p.get("start")
                except (OSError, ValueError, IndexError):
                    return False
        return False
