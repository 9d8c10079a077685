"""Move a known number of bytes to and from a real disk: python3 disk_io.py FILE BYTES MODE
HOLD.

direct: O_DIRECT writes and reads (page-aligned buffer: an anonymous mmap), nothing cached;
buffered: written through the page cache and fsynced, dropped from the cache
(POSIX_FADV_DONTNEED), read back. Either way BYTES go to the device and BYTES come back
from it. Then it stays HOLD s, so samples taken while it runs see the totals.
"""
import mmap
import os
import sys
import time

path, size, mode, hold = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
CHUNK = 1 << 20
buf = mmap.mmap(-1, CHUNK)
buf.write(b"\xa5" * CHUNK)
direct = os.O_DIRECT if mode == "direct" else 0
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | direct, 0o644)
for _ in range(size // CHUNK):
    os.write(fd, buf)
os.fsync(fd)
os.close(fd)
fd = os.open(path, os.O_RDONLY | direct)
if not direct:
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
got = 0
while True:
    n = os.readv(fd, [buf])
    if n <= 0:
        break
    got += n
os.close(fd)
assert got == size, (got, size)
time.sleep(hold)
