"""A Slurm job given every core of its node (--exclusive) on the real test cluster: its
cpuset is the whole node, so only Slurm's allocation says what it was given (DESIGN §9).
The sampler takes it from the Prolog's SLURM_JOB_CPUS_PER_NODE: efficiency, core-hours,
idle units and core advice in its summary, and `jobmon query` shows them beside sacct's
AllocCPUS -- never the advice to tag a `jobmon run` with request_cpus."""
import json
import os
import subprocess

import pytest

from helpers import JOBMON
from slurm.common import SBIN_PATH

pytestmark = [pytest.mark.root, pytest.mark.slow]

# single-threaded and asleep: one core of the node would do
SLEEPER = "/usr/bin/python3 -c 'import time\nfor _ in range(20): time.sleep(0.1)'\n"


def test_a_job_given_its_whole_node_has_its_allocation_from_slurm(jobmon_slurm):
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    jid = slurm.submit(SLEEPER, exclusive=True)
    slurm.wait_done(jid)
    [rec] = site.wait_record(jid)
    s, tags = rec.summary, rec.job_tags
    cpus = int(slurm.record("prolog", jid)["SLURM_JOB_CPUS_PER_NODE"])
    assert cpus == os.cpu_count(), cpus           # every core of the node: no cpuset tells
    assert tags["alloc_cpus"] == str(cpus)
    assert s["cores_allocated"] == cpus, s
    assert s["cpu_efficiency_percent"] is not None and s["cpu_efficiency_percent"] < 10, s
    assert s["provisioned_core_hours"] == pytest.approx(cpus * s["wall_seconds"] / 3600,
                                                        abs=1e-6)
    assert s["idle_canonical_core_hours"] is not None, s
    if cpus > 1:
        assert "ask for 1 core (cpu_underused)" in s["advice"], s["advice"]
    assert "no_allocation" not in (s["advice"] or "")
    # the reader: efficiency beside sacct's AllocCPUS, core advice, no `jobmon run` hint
    assert site.ship().returncode == 0
    env = dict(site.env(), PATH=SBIN_PATH, SLURM_CONF=slurm.conf)
    q = subprocess.run([JOBMON, "query", str(jid), "--json"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert q.returncode == 0, q.stderr
    doc = json.loads(q.stdout)
    eff = {e["name"]: e["value"] for e in doc["efficiency"]}
    assert eff["cores allocated"] == cpus
    assert eff["CPU efficiency (CPU time / (cores x wall))"] is not None
    assert doc["scheduler"]["allocation"].get("cores_allocated") in (None, cpus)
    rules = {a["rule"] for a in doc["advice"]}
    assert "no_allocation" not in rules, doc["advice"]
    if cpus > 1:
        assert "cpu_underused" in rules, doc["advice"]
