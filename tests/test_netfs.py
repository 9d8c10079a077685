"""Storage figures said honestly: cgroup I/O and /proc/<pid>/io count block I/O on local
disks only, so jobmon notes where a job worked on a network or FUSE file system, whose I/O
no storage counter sees (the cgroup v2 guest shows it on a real one, its 9p root:
tests/guest/inside/test_netfs.py); every storage figure says "local disks"."""
import json
import os
import shutil

from helpers import PYTHON, jobmon, jobmon_run
from jobmon.probes import netfs
from jobmon.sinks import card_text

# mountinfo lines in the kernel's format (fs/proc_namespace.c show_mountinfo) for the file
# systems jobmon must tell apart; written for this test, not recorded from those systems
MOUNTINFO = """\
22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:25 / /tmp rw,nosuid shared:5 - tmpfs tmpfs rw
41 22 0:40 / /home rw,relatime shared:20 - nfs4 fs1:/export/home rw,vers=4.2
42 22 0:41 / /scratch rw,relatime shared:21 - lustre 10.0.0.1@o2ib:/scratch rw,flock
43 22 0:42 / /gpfs/proj rw,relatime shared:22 - gpfs proj rw
44 22 0:43 / /cephfs rw,relatime shared:23 - ceph 10.0.0.2:6789:/ rw,name=jobs
45 22 0:44 / /mnt/remote\\040dir rw,nosuid shared:24 - fuse.sshfs user@host:/d rw,user_id=0
46 22 8:17 / /mnt/usb rw,nosuid shared:25 - fuseblk /dev/sdb1 rw,user_id=0
47 41 0:45 / /home/alice/local rw,relatime shared:26 - ext4 /dev/vdb rw
48 22 0:46 / /srv/share rw,relatime shared:27 - 9p share rw,trans=virtio
"""


def test_the_file_system_of_a_path_is_its_longest_mount_point():
    m = netfs.Mounts(MOUNTINFO)
    cases = {"/home/alice/data.h5": ("/home", "nfs4"), "/home/alice/local/x": (
        "/home/alice/local", "ext4"), "/scratch/run/out": ("/scratch", "lustre"),
        "/gpfs/proj/a": ("/gpfs/proj", "gpfs"), "/cephfs/in": ("/cephfs", "ceph"),
        "/mnt/remote dir/f": ("/mnt/remote dir", "fuse.sshfs"), "/tmp/f": ("/tmp", "tmpfs"),
        "/homework": ("/", "ext4"), "/mnt/usb/f": ("/mnt/usb", "fuseblk")}
    for path, want in cases.items():
        assert m.of(path) == want, path
    kinds = {t: netfs.not_local(t) for t in ("nfs4", "lustre", "gpfs", "ceph", "fuse.sshfs",
                                             "9p", "ext4", "tmpfs", "fuseblk", "overlay")}
    assert kinds == {"nfs4": "nfs4", "lustre": "lustre", "gpfs": "gpfs", "ceph": "ceph",
                     "fuse.sshfs": "fuse.sshfs", "9p": "9p", "ext4": None, "tmpfs": None,
                     "fuseblk": None, "overlay": None}


def test_what_the_job_had_on_them_is_said_by_file_system_and_how(tmp_path):
    """A look at a process whose working directory is on a (recorded) NFS mount and which
    holds a file open on Lustre: one line says both. The process is this one, with its
    own links; the mount table is the recorded one."""
    look = netfs.NetFs()
    look.mounts = netfs.Mounts(MOUNTINFO)
    look._see("/home/alice", "working directory")
    look._see("/scratch/run/out.h5", "open files")
    look._see("/home/alice/in.txt", "open files")
    look._see("/tmp/x", "open files")
    look._see("pipe:[1234]", "open files")
    assert look.text() == ("lustre /scratch (open files); "
                           "nfs4 /home (working directory, open files)")
    s = {"read_bytes": 0, "write_bytes": 4096, "network_fs": look.text()}
    assert card_text.io_line(s) == ("I/O: read 0 B, wrote 4.0 KiB (local disks); not counted: "
                                    "lustre /scratch (open files); nfs4 /home (working "
                                    "directory, open files)")


def test_a_job_on_local_disks_only_has_none_and_its_figures_say_local(tmp_path):
    """This machine has local file systems only: a real job reading and writing in /tmp
    gets no network_fs, and its report calls its storage figures local."""
    store = str(tmp_path / "s.db")
    code = ("import os, time\nopen('f', 'wb').write(os.urandom(1 << 20))\n"
            "f = open('f', 'rb'); time.sleep(6); f.read()")
    r = jobmon_run(["--job-id=local-io", "--interval=0.5", f"--summary={tmp_path}/s.json"],
                   [PYTHON, "-c", code], store=store, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "s.json") as f:
        assert json.load(f)["network_fs"] is None
    env = dict(os.environ, JOBMON_CONFIG=os.devnull)
    env.pop("JOBMON_STORE", None)
    q = jobmon("query", "local-io", "--json", f"--store={store}", env=env)
    names = {t["name"] for t in json.loads(q.stdout)["totals"]}
    assert "storage read (local disks only)" in names and "storage read" not in names


def test_a_look_reads_at_most_its_links_in_all(tmp_path):
    """A look reads MAX_LINKS links in all, however many processes and files: a recorded
    /proc of 40 processes with 10 open files each, the NFS file held by a late one is past
    the bound; by an early one it is found. The mount table is the recorded one."""
    proc = tmp_path / "proc"

    def tree(nfs_at):
        for pid in range(1, 41):
            d = proc / str(pid)
            (d / "fd").mkdir(parents=True)
            (d / "mountinfo").write_text(MOUNTINFO)
            (d / "cwd").symlink_to("/tmp")
            for fd in range(10):
                target = "/home/alice/in.h5" if (pid, fd) == nfs_at else f"/tmp/{pid}.{fd}"
                (d / "fd" / str(fd)).symlink_to(target)

    def found(nfs_at):
        shutil.rmtree(proc, ignore_errors=True)
        tree(nfs_at)
        look = netfs.NetFs(str(proc))
        look.look(range(1, 41), 0.0)
        return look.text()

    assert netfs.MAX_LINKS < 40 * 11
    assert found((2, 9)) == "nfs4 /home (open files)"
    assert found((40, 9)) is None


def test_a_look_where_every_mount_is_local_reads_no_link(tmp_path, monkeypatch):
    """No file can be on a network file system where none is mounted: a look then reads
    the mount table and no link (at 1000 processes that is ~3 ms of CPU a look). Once one
    is mounted (an automounter's NFS), the next look reads them again and finds it."""
    proc = tmp_path / "proc"
    local = "\n".join(line for line in MOUNTINFO.splitlines()
                      if netfs.not_local(line.split(" - ")[1].split()[0]) is None) + "\n"
    for pid in (1, 2):
        (proc / str(pid) / "fd").mkdir(parents=True)
        (proc / str(pid) / "mountinfo").write_text(local)
        (proc / str(pid) / "cwd").symlink_to("/home/alice/local")
        (proc / str(pid) / "fd" / "3").symlink_to("/home/alice/in.h5")
    read = []
    real = netfs.NetFs._link
    monkeypatch.setattr(netfs.NetFs, "_link", staticmethod(lambda p: read.append(p) or real(p)))
    look = netfs.NetFs(str(proc))
    look.look([1, 2], 0.0)
    assert read == [] and look.text() is None
    (proc / "1" / "mountinfo").write_text(MOUNTINFO)
    look.look([1, 2], 10.0)
    assert len(read) == 4 and look.text() == "nfs4 /home (open files)"
