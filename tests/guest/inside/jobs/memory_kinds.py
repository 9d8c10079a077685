"""Hold three kinds of memory, say how much of each, wait: python3 memory_kinds.py DIR
ANON SHM FILE (bytes).

anon: a touched bytearray; shmem: a tmpfs file in /dev/shm written and not mapped (charged
to the cgroup as shmem, resident, never counted as cache); file: a file in DIR (on a real
disk) written and fsynced, so its pages sit clean in the page cache. Prints one JSON line
when all are held, then exits when stdin closes.
"""
import json
import os
import sys

d, anon, shm, filebytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
MiB = b"x" * (1 << 20)


def fill(path, size, sync):
    with open(path, "wb") as f:
        for _ in range(size >> 20):
            f.write(MiB)
        if sync:
            f.flush()
            os.fsync(f.fileno())


def status():
    with open("/proc/self/status") as f:
        return {k: int(v.split()[0]) * 1024 for k, _, v in (line.partition(":") for line in f)
                if k in ("RssAnon", "RssFile", "RssShmem")}


b = bytearray(anon)
for i in range(0, anon, 4096):
    b[i] = 1
shm_path = f"/dev/shm/jobmon-kinds-{os.getpid()}"
fill(shm_path, shm, False)
fill(os.path.join(d, f"kinds-{os.getpid()}"), filebytes, True)
print(json.dumps(status()), flush=True)
try:
    sys.stdin.read()
finally:
    os.unlink(shm_path)
