"""Guest side of the Slurm-on-cgroup-v2 tests: they start a whole Slurm cluster (its
cgroup/v2 plugin needs a pure v2 host) and so run only in a guest booted for them
(tests/test_slurm_guest.py), never on the host."""
import os

import pytest

import guest_boot

HERE = os.path.dirname(os.path.abspath(__file__))


def _in_guest():
    if not os.environ.get(guest_boot.FLAG) or os.geteuid() != 0:
        return False
    with open("/proc/self/mountinfo") as f:
        fstypes = {line.partition(" - ")[2].split(" ")[0] for line in f}
    return "cgroup2" in fstypes and "cgroup" not in fstypes


IN_GUEST = _in_guest()


def pytest_collection_modifyitems(config, items):
    if IN_GUEST:
        return
    skip = pytest.mark.skip(reason="runs only in the cgroup v2 guest (tests/test_slurm_guest.py)")
    for item in items:
        if str(item.path).startswith(HERE + os.sep):
            item.add_marker(skip)
