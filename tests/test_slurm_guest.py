"""jobmon's Slurm Prolog and Epilog on cgroup v2, in a guest booted for them: the guest
tests (tests/guest/slurm_v2) start a whole Slurm cluster with cgroup/v2, which takes
minutes under emulation, so they get a boot of their own (limit 15 minutes) rather than
the shared guest of tests/guest/inside. One host test per guest test."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "guest"))
import guest_boot  # noqa: E402

SLURM_V2 = os.path.join(guest_boot.HERE, "slurm_v2")
# seconds for the whole guest: boot, cluster, jobs (480 s were not enough for the cluster's
# first wave of jobs on a 2-core machine at load average 8-20)
LIMIT = 900
MYSQL_SEED = "mysql-seed"   # in the guest's shared directory (test_slurm_v2.py takes it)


@pytest.fixture(scope="module")
def guest(tmp_path_factory):
    why = guest_boot.missing()
    if why:
        pytest.skip(why)
    from slurm import have_slurm
    why = have_slurm()
    if why:
        pytest.skip(f"no Slurm to run in the guest: {why}")
    workdir = str(tmp_path_factory.mktemp("slurm-guest"))
    # MariaDB's datadir made here, natively, and copied in the guest: making it there
    # takes minutes under emulation
    from slurm.common import SBIN_PATH
    from slurm.config import install_mysql_db
    install_mysql_db(os.path.join(workdir, "rw", MYSQL_SEED), {"PATH": SBIN_PATH})
    return guest_boot.run(workdir, limit=LIMIT, inside=SLURM_V2)


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("name", ["test_v2_accuracy_and_sacct_beside",
                                  "test_v2_steps_arrays_short_jobs",
                                  "test_v2_spikes_between_samples_sized_by_the_kernel_peak",
                                  "test_v2_processes_killed_at_the_end",
                                  "test_v2_a_job_killed_for_memory"])
def test_slurm_on_cgroup_v2(guest, name):
    if guest.problem:
        pytest.fail(f"{guest.problem}\n--- guest pytest log:\n{guest.file('pytest.log')[-6000:]}"
                    f"\n--- console:\n{guest.console_tail()}", pytrace=False)
    cases = [c for cs in guest.cases.values() for c in cs if c.name == name]
    assert cases, f"{name} gave no result in the guest:\n{guest.file('pytest.log')[-6000:]}"
    [case] = cases
    print(case.output[-4000:])
    if case.outcome in ("failed", "error"):
        pytest.fail(f"{case.message}\n{case.output[-4000:]}", pytrace=False)
    if case.outcome == "skipped":
        pytest.skip(case.message.strip().splitlines()[0] if case.message.strip() else "skipped")
