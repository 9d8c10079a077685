"""Storage figures said honestly on a real network file system: the guest's root is this
machine's file system over 9p (a network protocol: virtio here), whose I/O is in no
storage counter of the job (io.stat counts block devices); the ext4 disk is local. A job
reading a file from the root shows it in its read() totals only, and its summary and its
report (jobmon query) name the file system (network_fs)."""
import glob
import json
import os
import subprocess

import jobrun
from helpers import JOBMON, PYTHON, REPO
from jobrun import MiB

from jobmon.probes.netfs import Mounts, not_local

# reads a file in 1 MiB blocks, holding it open for 7 s (jobmon looks at the job's open
# files at its first sample and 5 s later)
READ = ("import sys, time\nf = open(sys.argv[1], 'rb')\nn = 0\n"
        "while True:\n    b = f.read(1 << 20)\n    n += len(b)\n    if not b: break\n"
        "time.sleep(7)\nprint(n)\n")


def big_file_on_root(mounts):
    """A file of several MiB on the guest's root (this machine's file system over 9p): the
    largest shared library the repository's .venv ships in a wheel's .libs directory
    (htcondor's; a few directories listed, not a walk of the tree, which over 9p under
    emulation takes minutes), or, for a checkout under an overlay (a clone in /tmp), the
    kernel image the guest booted (/boot is the root's)."""
    found = [p for p in glob.glob(os.path.join(REPO, ".venv", "lib", "python3*",
                                               "site-packages", "*.libs", "*"))
             if os.path.isfile(p) and not os.path.islink(p)]
    assert found, f"no wheel libraries in {REPO}/.venv"
    big = max(found, key=os.path.getsize)
    if (mounts.of(big) or ("",))[0] == "/":
        return big
    return max(glob.glob("/boot/vmlinuz-*"), key=os.path.getsize)


def test_a_job_reading_from_the_9p_root_is_told_its_reads_are_not_in_storage(raw_guest, ext4):
    # the guest's root is this machine's file system over 9p (/usr, /tmp and the like
    # are overlays in the guest's memory)
    with open("/proc/self/mountinfo") as f:
        mounts = Mounts(f.read())
    big = big_file_on_root(mounts)
    point, fstype = mounts.of(big)
    kind = not_local(fstype)
    assert point == "/" and kind, f"{big} is on {fstype} at {point}"
    size = os.path.getsize(big)
    assert size > 2 * MiB, (big, size)
    os.chdir(ext4)                          # the job's working directory: the local disk
    try:
        r = jobrun.Run(["--job-id=netfs-9p", "--cgroup=create", "--cgroup-version=2"],
                       [PYTHON, "-c", READ, big], interval=0.5)
    finally:
        os.chdir("/")
    s = r.summary
    print({k: s.get(k) for k in ("network_fs", "read_bytes", "rchar_bytes")})
    assert s["method"] == "cgroup-v2"
    assert s["network_fs"] == f"{kind} / (open files)", s["network_fs"]
    assert s["rchar_bytes"] >= size and s["read_bytes"] < size / 4, s
    q = subprocess.run([JOBMON, "query", "netfs-9p", "--json",
                        f"--store={os.path.join(r.dir, 'store.db')}"], capture_output=True,
                       text=True, env=dict(os.environ, JOBMON_CONFIG=os.devnull), timeout=120)
    assert q.returncode == 0, q.stderr
    totals = {t["name"]: t["value"] for t in json.loads(q.stdout)["totals"]}
    told = [v for k, v in totals.items() if k.startswith("on file systems no storage")]
    assert told == [s["network_fs"]] and "storage read (local disks only)" in totals, totals
