"""The cgroup v2 guest: host side.

tests/guest/inside holds tests that reshape the whole cgroup tree (enable controllers at the
root, move the test process between cgroups): they run only inside the guest that
guest_boot.py boots, which sets JOBMON_GUEST. On the host that directory is not even
collected, so a host run shows no pile of skips, and no host cgroup is ever touched by them.
"""
import os

import guest_boot

collect_ignore = [] if os.environ.get(guest_boot.FLAG) else ["inside", "slurm_v2"]


def pytest_terminal_summary(terminalreporter):
    for run in guest_boot.runs:
        terminalreporter.write_line(run.timing_line())
