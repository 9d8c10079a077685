"""Multi-node and heterogeneous jobs: two slurmd on this machine (Debian builds Slurm with
multiple-slurmd support), each a node with its own cgroup tree (`slurm_<node>` on v1),
jobmon's Prolog and Epilog on both. Each node's sampler records its own part of the job
from its own node's cgroup (never the other node's directory of the same job), and
`jobmon query` joins the parts and sets sacct's record beside them.

Both nodes share one machine: each node's part is shipped by a shipper of its own with
`host` = the node, as each node's shipper does on a real cluster.
"""
import json
import os
import subprocess

import pytest

from helpers import JOBMON, cpu_tolerance
from slurm.common import SBIN_PATH
from slurm_site import JobmonSite, wait_no_samplers

pytestmark = [pytest.mark.root, pytest.mark.slow]

BURN = "import time\nwhile time.process_time() < {s}: pass"
TWO_NODES = ("#!/bin/sh\n#SBATCH -N2\n"
             f"srun -N2 /usr/bin/python3 -c \"{BURN.format(s=0.4)}\"\n")
# two nodes given, the work done on the first only: the batch script burns the CPU itself
# instead of starting it on every node with srun
LOPSIDED = ("#!/bin/sh\n#SBATCH -N2\n"
            f"/usr/bin/python3 -c \"{BURN.format(s=0.6)}\"\n")
HET = ("#!/bin/sh\n#SBATCH -n1\n#SBATCH hetjob\n#SBATCH -n1\n"
       f"srun --het-group=0,1 /usr/bin/python3 -c \"{BURN.format(s=0.3)}\"\n")


@pytest.fixture(scope="module")
def two_nodes(influx_server):
    from slurm import Cluster, have_slurm
    from slurm.cgroups import version
    why = have_slurm()
    if why:
        pytest.skip(f"Slurm test cluster: {why}")
    if version() != "v1":
        pytest.skip("several slurmd on one machine: the harness does it on cgroup v1")
    site = JobmonSite(influx_server, db="slurm_multinode")
    c = Cluster(prologs=[site.prolog], epilogs=[site.epilog], nodes=2).start()
    site.cluster = c
    try:
        ids = {"two": c.submit(TWO_NODES), "het": c.submit(HET),
               "lopsided": c.submit(LOPSIDED)}
        for jid in ids.values():
            c.wait(jid)
        recs = {jid: site.wait_record(jid, runs=n) for jid, n in
                ((str(ids["two"]), 2), (f"{ids['het']}+0", 1), (f"{ids['het']}+1", 1),
                 (str(ids["lopsided"]), 2))}
        recs.update(site.records())     # the steps' records too
        for node in c.spec.nodes:       # the spool is empty after
            ship_as(site, node)
        yield site, ids, recs
        assert c.drained_nodes() == []
        assert wait_no_samplers(c) == []
    finally:
        c.stop()
        site.close()
    assert not c.leftovers, f"left running: {c.leftovers}"
    assert not c.cgroups_left, c.cgroups_left


def ship_as(site, node):
    """Ship the node's part of the spool as that node's own shipper would (`host` = the
    node): on a real cluster each node has its shipper and its host."""
    d = os.path.join(site.dir, f"ship-{node}")
    spool, state = os.path.join(d, "spool"), os.path.join(d, "state")
    os.makedirs(d)
    with open(site.config) as f:
        text = f.read().replace(f'dir = "{site.spool}"', f'dir = "{spool}"').replace(
            f'state_dir = "{site.state}"', f'host = "{node}"\nstate_dir = "{state}"')
    config = os.path.join(d, "jobmon.toml")
    with open(config, "w") as f:
        f.write(text)
    env = dict(site.env(), JOBMON_CONFIG=config)
    subprocess.run([JOBMON, "ship"], env=env, capture_output=True, timeout=120)  # sets it up
    for rec in [r for rs in site.records().values() for r in rs]:
        if rec.job_tags.get("node") == node:
            os.rename(rec.path, os.path.join(spool, os.path.basename(rec.path)))
    r = subprocess.run([JOBMON, "ship"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def jobmon_of(site, *args):
    env = dict(site.env(), PATH=SBIN_PATH, SLURM_CONF=site.cluster.conf, COLUMNS="80")
    r = subprocess.run([JOBMON, *args], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def query_json(site, job):
    return json.loads(jobmon_of(site, "query", str(job), "--json"))


def cpu(summary):
    return summary["cpu_user_seconds"] + summary["cpu_system_seconds"]


def test_one_sampler_per_node_each_its_own_part(two_nodes):
    site, ids, spooled = two_nodes
    jid = str(ids["two"])
    recs = [r for r in spooled[jid] if r.summary]
    nodes = site.cluster.spec.nodes
    assert sorted(r.job_tags["node"] for r in recs) == sorted(nodes)
    for rec in recs:
        assert rec.job_tags["num_nodes"] == "2" and rec.job_tags["job_id"] == jid
        assert rec.summary["method"] == f"cgroup-{site.cluster.spec.cgroup}"
        assert rec.job_tags["measured"] in ("job-cgroup", "job-cgroup-last-read")
        # each node ran one task of 0.4 s by its own clock (the first also the batch shell):
        # its own part. That clock counts from slurmstepd's fork: the task's set-up before
        # slurmstepd moves it into its task cgroup is in the step's slurm leaf, which the
        # job's figures leave out (seen 15 ms on a loaded host), so within the accuracy
        # target below 0.4 s
        assert 0.4 - cpu_tolerance(0.4) <= cpu(rec.summary) < 0.8, \
            (rec.job_tags["node"], cpu(rec.summary))
        steps = {r.job_tags["step"] for r in spooled.get(f"{jid}.0", [])
                 if r.job_tags.get("node") == rec.job_tags["node"]}
        assert steps == {"0"}


def test_query_joins_the_nodes_and_sacct(two_nodes):
    site, ids, spooled = two_nodes
    jid = str(ids["two"])
    recs = [r for r in spooled[jid] if r.summary]
    doc = query_json(site, jid)
    assert sorted(h["host"] for h in doc["hosts"]) == sorted(site.cluster.spec.nodes)
    total = cpu(doc["summary"])
    assert abs(total - sum(cpu(r.summary) for r in recs)) < 0.01
    sch = doc["scheduler"]
    slurm = {label: value for label, value, _unit in sch["figures"]}
    assert sch["end"]["num_nodes"] == 2 and slurm["state"] == "COMPLETED"
    assert abs(slurm["TotalCPU"] - total) < max(0.1, 0.02 * total), (slurm["TotalCPU"], total)
    assert not [d for d in sch["differences"] if d["field"] == "cpu_seconds"]


def test_het_components_on_their_nodes(two_nodes):
    site, ids, spooled = two_nodes
    het = str(ids["het"])
    parts = {}
    for offset in (0, 1):
        [rec] = [r for r in spooled[f"{het}+{offset}"] if r.summary]
        assert rec.job_tags["het_job_id"] == het
        assert 0.3 <= cpu(rec.summary) < 0.6
        parts[offset] = rec.job_tags["node"]
        doc = query_json(site, f"{het}+{offset}")
        sch = doc["scheduler"]
        assert sch["end"]["job"] == f"{het}+{offset}"
        assert sch["end"]["het_job_offset"] == str(offset)
        slurm = {label: value for label, value, _unit in sch["figures"]}
        assert abs(slurm["TotalCPU"] - cpu(rec.summary)) < 0.1
    assert sorted(parts.values()) == sorted(site.cluster.spec.nodes)   # never shared


def test_one_job_per_node_breakdown_balance_and_advice(two_nodes, tmp_path):
    """Each two-node job is one job in query, the HTML page and `jobmon report`, with a row
    per node, its balance across them (max / mean: 1 = even, 2 = one node did all), and
    advice for the one whose second node sat idle."""
    site, ids, _spooled = two_nodes
    nodes = sorted(site.cluster.spec.nodes)
    even, lopsided = (query_json(site, ids[k]) for k in ("two", "lopsided"))
    for doc in (even, lopsided):
        assert sorted(h["host"] for h in doc["hosts"]) == nodes
        assert sum(h["cpu_percent"] for h in doc["hosts"]) == pytest.approx(100, abs=0.2)
        assert all(h["memory_peak_bytes"] > 0 for h in doc["hosts"])
    bal = {k: {b["name"].split(",")[0]: b["value"] for b in doc["balance"]}
           for k, doc in (("even", even), ("lopsided", lopsided))}
    # each node of the even job burnt 0.4 s (the first also ran the batch shell)
    assert 1.0 <= bal["even"]["CPU"] < 1.5, bal
    assert lopsided["summary"]["busiest_node_cpu_percent"] >= 90
    assert bal["lopsided"]["CPU"] >= 1.8, bal
    rules = {k: {a["rule"]: a["text"] for a in doc["advice"]}
             for k, doc in (("even", even), ("lopsided", lopsided))}
    assert "one_node_busy" not in rules["even"]
    # the allocation is the job's (sacct: 2 CPUs): its CPU efficiency is the nodes' CPU over
    # it, and nobody is told that no allocation is known
    for doc in (even, lopsided):
        eff = {e["name"]: e["value"] for e in doc["efficiency"]}
        assert eff["cores allocated"] == 2, eff
        want = 100 * cpu(doc["summary"]) / (2 * doc["summary"]["wall_seconds"])
        assert eff["CPU efficiency (CPU time / (cores x wall))"] == pytest.approx(want, abs=0.1)
    assert not {"no_allocation"} & (set(rules["even"]) | set(rules["lopsided"]))
    busy = lopsided["summary"]["busiest_node"]
    assert busy in nodes and rules["lopsided"]["one_node_busy"].startswith(
        f"node {busy} did "), rules["lopsided"]
    # the terminal at 80 columns: the balance, then a row per node
    text = jobmon_of(site, "query", str(ids["lopsided"]))
    assert max(map(len, text.splitlines())) <= 80
    assert "balance across nodes" in text and "per node (2)" in text
    assert all(any(line.strip("│ ").startswith(n) for line in text.splitlines())
               for n in nodes), text
    # `jobmon report`: each job one run, however many nodes
    rep = json.loads(jobmon_of(site, "report", "--since=1d", "--json"))
    assert rep["jobs"] == len({str(ids["two"]), str(ids["lopsided"]), f"{ids['het']}+0",
                               f"{ids['het']}+1"}), rep["jobs"]
    # the HTML page, and a single-node job's beside it (screenshots: $JOBMON_SCREENSHOTS)
    from chromium import CHROMIUM, Chromium
    if not CHROMIUM:
        return
    shots = os.environ.get("JOBMON_SCREENSHOTS") or str(tmp_path)
    os.makedirs(shots, exist_ok=True)
    with Chromium(width=1400, height=900) as b:
        for name, job in (("multi-node", ids["lopsided"]), ("single-node", f"{ids['het']}+0")):
            page = str(tmp_path / f"{name}.html")
            jobmon_of(site, "report", str(job), "--html", page)
            b.events.clear()
            b.open("file://" + page)
            b.screenshot(os.path.join(shots, f"{name}.png"))
            assert b.problems() == []
            hosts = b.evaluate("[...document.querySelectorAll('#section-hosts tr')]"
                               ".map(r => r.innerText)")
            side = b.evaluate("document.querySelector('aside').innerText")
            if name == "multi-node":
                assert len(hosts) == 3 and "CPU share" in hosts[0], hosts
                assert "Balance across nodes" in side and "one_node_busy" in side
            else:
                assert hosts == [] and "Balance across nodes" not in side
