"""Guest side: every test starts from the guest as it booted (pure cgroup v2, all processes
in the root cgroup, no controllers handed out) and shapes the tree it needs with fixtures.

Outside the guest these tests never run (tests/guest/conftest.py does not even collect this
directory there; should it be named on a command line, every test here is skipped).
"""
import os
import pwd
import subprocess
import types

import pytest

import guest_boot
import tree
from helpers import TEST_USER

HERE = os.path.dirname(os.path.abspath(__file__))
IN_GUEST = guest_boot.in_guest()


def pytest_collection_modifyitems(config, items):
    guest_boot.skip_outside_guest(items, HERE, "tests/guest/guest_boot.py")


@pytest.fixture(autouse=True)
def raw_guest():
    """The guest as it booted; put back after the test, whatever it left."""
    if not IN_GUEST:
        pytest.skip("not in the cgroup v2 guest")
    tree.reset()
    yield tree.root()
    tree.reset()


@pytest.fixture
def systemd_host(raw_guest):
    """Controllers on from the root down the slices, as systemd leaves a v2 host, and the
    test process in a login session scope beside the session's shell. The scope holds
    processes, so v2's no-internal-processes rule keeps it from handing out controllers."""
    scope = tree.make("user.slice/user-0.slice/session-1.scope")
    tree.make("system.slice")
    shell = tree.sleeper(scope)
    tree.move(os.getpid(), scope)
    yield types.SimpleNamespace(scope=scope, slice=os.path.dirname(scope), shell=shell)
    tree.move(os.getpid(), raw_guest)
    tree.stop(shell)


@pytest.fixture
def test_user():
    try:
        pw = pwd.getpwnam(TEST_USER)
    except KeyError:
        pytest.skip(f"no user {TEST_USER} (tests/setup.sh makes it)")
    return pw


@pytest.fixture
def delegated(raw_guest, test_user):
    """The test user's user@UID.service as systemd delegates it: controllers enabled in the
    cgroups above it, the cgroup and its cgroup.procs, cgroup.subtree_control and
    cgroup.threads owned by the user, its own subtree_control empty."""
    uid = test_user.pw_uid
    d = tree.make(f"user.slice/user-{uid}.slice/user@{uid}.service")
    tree.delegate(d, uid, test_user.pw_gid)
    return d


@pytest.fixture(scope="session")
def ext4():
    """The ext4 image the guest was booted with (--disk), mounted: io.stat counts block I/O
    only on a real block device, not on the 9p root or tmpfs."""
    dev = subprocess.run(["blkid", "-L", guest_boot.DISK_LABEL], capture_output=True,
                         text=True, timeout=60).stdout.strip()
    if not dev:
        pytest.skip(f"no disk labelled {guest_boot.DISK_LABEL} (guest_boot.py attaches one)")
    mnt = "/tmp/jobmon-io"
    os.makedirs(mnt, exist_ok=True)
    subprocess.run(["mount", dev, mnt], check=True, timeout=60)
    os.chmod(mnt, 0o1777)
    yield mnt
    subprocess.run(["umount", mnt], timeout=60)
