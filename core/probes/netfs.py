"""Is the job's I/O where its storage counters can see it? The cgroup's io.stat and blkio,
and /proc/<pid>/io's read_bytes/write_bytes, count block I/O the job caused on local block
devices only. A network file system (NFS, Lustre, GPFS, CephFS, SMB, BeeGFS, 9p,
virtiofs) sends its I/O over the network, and a FUSE file system through its daemon: none
of it is in them, while read()/write() totals (rchar/wchar) count every call. So a job whose
working directory or open files are on one may read terabytes and show "storage read 0 B".

jobmon looks where the job's processes are: their working directories and open files
(/proc/<pid>/cwd, /proc/<pid>/fd/*), matched against the mount table
(the job's /proc/<pid>/mountinfo, read at each look: the longest mount point that holds
each path). A look costs the mount table and, where it holds a file system of those kinds,
one readlink per process and per open file (where it holds none, no file can be on one): it
is made at the first sample, 5 s later and then every LOOK_SECONDS, for at most
MAX_PROCS processes and MAX_LINKS links in all (a thousand forked workers hold the same
files: the first few of them tell). Standard library only.
"""
import os

SECOND, LOOK_SECONDS = 5.0, 60.0
MAX_PROCS, MAX_LINKS = 64, 256
# file system types whose I/O is not block I/O of the job on a local disk
NETWORK = {"nfs", "nfs4", "lustre", "gpfs", "ceph", "cifs", "smb3", "smbfs", "beegfs", "9p",
           "virtiofs", "glusterfs", "afs", "pvfs2", "orangefs", "panfs", "wekafs", "davfs",
           "ncpfs", "fuse"}


def unescape(s):
    """mountinfo escapes space, tab, newline and backslash as octal."""
    return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n") \
        .replace("\\134", "\\")


def parse_mounts(text):
    """[(mount point, fstype)] from mountinfo, in mount order."""
    out = []
    for line in text.split("\n"):
        left, sep, right = line.partition(" - ")
        f, r = left.split(" "), right.split(" ")
        if sep and len(f) >= 5 and r:
            out.append((unescape(f[4]), r[0]))
    return out


def not_local(fstype):
    """The type's name for a report when its I/O is not local block I/O, else None: network
    file systems by name, FUSE ones (fuse.sshfs, fuse.ceph-fuse ...) as their subtype; a FUSE
    file system on a local block device (fuseblk: ntfs-3g, exfat) is local."""
    base = fstype.split(".", 1)[0]
    return fstype if base in NETWORK else None


class Mounts:
    def __init__(self, text):
        # {mount point: fstype}; of several at one point the latest mounted hides the rest
        self.at = dict(parse_mounts(text))
        self.any_not_local = any(not_local(t) for t in self.at.values())

    def of(self, path):
        """(mount point, fstype) that holds the absolute `path`, or None: its longest
        leading directory that is a mount point (a lookup per level, whatever the size of
        the table: container hosts have thousands)."""
        while path.startswith("/"):
            if path in self.at:
                return path, self.at[path]
            if path == "/":
                break
            path = os.path.dirname(path)
        return None


class NetFs:
    """What of the job is on a file system its storage counters do not see: {(fstype, mount
    point): set of "working directory" / "open files"}."""

    def __init__(self, proc="/proc"):
        self.proc = proc
        self.mounts = None       # the job's mount table at the last look
        self.next = None
        self.found = {}

    def due(self, now):
        return self.next is None or now >= self.next

    def look(self, pids, now):
        """Look at (up to MAX_PROCS of) the job's processes: at the first sample, SECOND
        seconds later (the job has opened its input by then), then every LOOK_SECONDS."""
        self.next = now + (SECOND if self.next is None else LOOK_SECONDS)
        pids = list(pids)[:MAX_PROCS]
        self.mounts = self._mounts(pids)
        if self.mounts is None or not self.mounts.any_not_local:
            return
        links = MAX_LINKS
        for pid in pids:
            if links <= 0:
                break
            base = os.path.join(self.proc, str(pid))
            self._see(self._link(os.path.join(base, "cwd")), "working directory")
            links -= 1
            try:
                fds = os.listdir(os.path.join(base, "fd"))[:links]
            except OSError:
                continue
            links -= len(fds)
            for fd in fds:
                self._see(self._link(os.path.join(base, "fd", fd)), "open files")

    def _mounts(self, pids):
        """The mount table as the job sees it (it may have a namespace of its own), read
        again at each look: an automounter mounts a network file system when the job first
        goes there."""
        for where in [str(p) for p in pids[:1]] + ["self"]:
            try:
                with open(os.path.join(self.proc, where, "mountinfo")) as f:
                    return Mounts(f.read())
            except OSError:
                continue
        return None

    @staticmethod
    def _link(path):
        try:
            return os.readlink(path)
        except OSError:
            return None

    def _see(self, target, how):
        if not target or not target.startswith("/"):   # pipes, sockets, anon inodes
            return
        if target.endswith(" (deleted)"):
            target = target[:-len(" (deleted)")]
        m = self.mounts.of(target)
        kind = m and not_local(m[1])
        if kind:
            self.found.setdefault((kind, m[0]), set()).add(how)

    def text(self):
        """"nfs4 /home (working directory, open files); lustre /scratch (open files)", or
        None where nothing was found."""
        if not self.found:
            return None
        return "; ".join(f"{kind} {point} ({', '.join(sorted(hows, reverse=True))})"
                         for (kind, point), hows in sorted(self.found.items()))


# the end-of-job figure this module gives (jobmon.metrics.declared)
FIGURES = (
    {"name": "network_fs", "unit": "text", "range": None, "method": "estimated",
     "meaning": "network and FUSE file systems (nfs, lustre, gpfs, ceph, 9p ...) the job worked "
                "on, as \"nfs4 /home (working directory, open files)\": their I/O is in "
                "rchar_bytes and wchar_bytes only, never in read_bytes and write_bytes; empty if "
                "none",
     "note": "looked for every 60 s, in up to 64 processes' working directories and open files, "
             "256 links in all",
     "report": ({"group": "io",
                 "label": "on file systems no storage figure counts (their I/O "
                          "is in the read()/write() totals only)", "unit": ""},)},
)
