"""Guest side of the Slurm-on-cgroup-v2 tests: they start a whole Slurm cluster (its
cgroup/v2 plugin needs a pure v2 host) and so run only in a guest booted for them
(tests/test_slurm_guest.py), never on the host."""
import os

import guest_boot

HERE = os.path.dirname(os.path.abspath(__file__))


def pytest_collection_modifyitems(config, items):
    guest_boot.skip_outside_guest(items, HERE, "tests/test_slurm_guest.py")
