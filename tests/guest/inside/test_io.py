"""Block I/O on cgroup v2: io.stat of the job's cgroup on a real disk (an ext4 image the
guest boots with), through the real `jobmon run`."""
import os

import pytest

import jobrun
from jobrun import MiB

SIZE = 64 * MiB
SLACK = 2 * MiB   # ext4 metadata the job itself reads or writes (the journal is jbd2's)


@pytest.mark.parametrize("mode", ["direct", "buffered"])
def test_read_write_bytes_from_io_stat(raw_guest, ext4, mode):
    """64 MiB written to the device and read back from it: by the samples taken while the
    job runs (io.stat) and by the summary."""
    path = os.path.join(ext4, f"io-{mode}-{os.getpid()}")
    try:
        r = jobrun.Run(["--cgroup=create", "--cgroup-version=2"],
                       jobrun.job("disk_io", path, SIZE, mode, 2.0), interval=0.5)
    finally:
        if os.path.exists(path):
            os.unlink(path)
    s = r.summary
    assert s["method"] == "cgroup-v2"
    running = r.samples[:-1]   # the last one is the final read, after the job
    assert max(x.get("write_bytes", 0) for x in running) >= SIZE, running
    assert max(x.get("read_bytes", 0) for x in running) >= SIZE, running
    for k in ("write_bytes", "read_bytes"):
        assert SIZE <= s[k] <= SIZE + SLACK, (k, s[k])
