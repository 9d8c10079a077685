"""The guest tests' results, one host test per guest test module: the guest (guest_boot.py)
boots once per session, on first use, and runs them all; each host test reports its module."""
import glob
import os

import pytest

import guest_boot

MODULES = sorted(os.path.basename(p)[:-3]
                 for p in glob.glob(os.path.join(guest_boot.INSIDE, "test_*.py")))


@pytest.fixture(scope="session")
def guest(tmp_path_factory):
    why = guest_boot.missing()
    if why:
        pytest.skip(why)
    return guest_boot.run(str(tmp_path_factory.mktemp("guest")))


def _report(case):
    out = case.output.strip()
    return (f"--- {case.name}: {case.outcome}\n{case.message.strip()}"
            + (f"\n--- its output:\n{out[-4000:]}" if out else ""))


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("module", MODULES)
def test_in_cgroup_v2_guest(guest, module):
    if guest.problem:
        pytest.fail(f"{guest.problem}\n--- guest pytest log:\n{guest.file('pytest.log')[-6000:]}"
                    f"\n--- console:\n{guest.console_tail()}", pytrace=False)
    cases = guest.cases.get(module)
    assert cases, f"{module} gave no results in the guest:\n{guest.file('pytest.log')[-6000:]}"
    bad = [c for c in cases if c.outcome in ("failed", "error")]
    for c in cases:
        if c.outcome in ("skipped", "xfailed"):
            print(f"{c.name}: {c.outcome}: {(c.message.strip() + chr(10)).splitlines()[0]}")
    if bad:
        pytest.fail("\n\n".join(_report(c) for c in bad), pytrace=False)
    if all(c.outcome == "skipped" for c in cases):
        pytest.skip(f"all skipped in the guest: {cases[0].message.strip().splitlines()[0]}")
