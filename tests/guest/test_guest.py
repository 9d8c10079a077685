"""The guest tests' results, one host test per guest test module: the guest (guest_boot.py)
boots once per session, on first use, and runs them all; each host test reports its module.

A second guest, booted the same way, runs the host's own tests that make real cgroups (those
marked cgroup_tree, guest_boot.host_modules()) in pure cgroup v2: one host test reports
each such module. They get a boot of their own, so that neither set runs near its limit."""
import glob
import os

import pytest

import guest_boot

MODULES = sorted(os.path.basename(p)[:-3]
                 for p in glob.glob(os.path.join(guest_boot.INSIDE, "test_*.py")))
HOST_MODULES = guest_boot.host_modules()
# seconds for each whole guest, boot included. The guest tests took 290-362 s on a quiet
# machine when they were 20; under emulation every figure grows with the host's load
GUEST_LIMIT = 900
HOST_TESTS_LIMIT = 600


def _boot(tmp_path_factory, name, **kw):
    why = guest_boot.missing()
    if why:
        pytest.skip(why)
    return guest_boot.run(str(tmp_path_factory.mktemp(name)), **kw)


@pytest.fixture(scope="session")
def guest(tmp_path_factory):
    return _boot(tmp_path_factory, "guest", limit=GUEST_LIMIT)


@pytest.fixture(scope="session")
def guest_host_tests(tmp_path_factory):
    return _boot(tmp_path_factory, "guest-host", inside=HOST_MODULES, what="host tests",
                 limit=HOST_TESTS_LIMIT)


def _report(case):
    out = case.output.strip()
    return (f"--- {case.name}: {case.outcome}\n{case.message.strip()}"
            + (f"\n--- its output:\n{out[-4000:]}" if out else ""))


def check(guest, module):
    """Fail with the guest's failures of `module`; skip where all of it skipped there."""
    if guest.problem:
        pytest.fail(f"{guest.problem}\n--- guest pytest log:\n{guest.file('pytest.log')[-6000:]}"
                    f"\n--- console:\n{guest.console_tail()}", pytrace=False)
    cases = guest.cases.get(module, [])
    bad = [c for c in cases if c.outcome in ("failed", "error")]
    not_run = guest.not_run(module)
    if not_run:
        pytest.fail(f"{len(not_run)} test(s) never ran in the guest (its pytest stopped at its "
                    f"time limit): {', '.join(not_run)}"
                    + "".join("\n\n" + _report(c) for c in bad), pytrace=False)
    assert cases, f"{module} gave no results in the guest:\n{guest.file('pytest.log')[-6000:]}"
    for c in cases:
        if c.outcome in ("skipped", "xfailed"):
            print(f"{c.name}: {c.outcome}: {(c.message.strip() + chr(10)).splitlines()[0]}")
    if bad:
        pytest.fail("\n\n".join(_report(c) for c in bad), pytrace=False)
    if all(c.outcome == "skipped" for c in cases):
        pytest.skip(f"all skipped in the guest: {cases[0].message.strip().splitlines()[0]}")


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("module", MODULES)
def test_in_cgroup_v2_guest(guest, module):
    check(guest, module)


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("module", [guest_boot.module_key(os.path.relpath(p, guest_boot.REPO))
                                    for p in HOST_MODULES])
def test_host_tests_in_cgroup_v2_guest(guest_host_tests, module):
    check(guest_host_tests, module)
