"""An HTCondor parallel-universe job is one job on several slots: the starter of each node
runs jobmon-condor-wrapper with the same job ad (one ClusterId.ProcId, JobUniverse 11) and
tells the node its number (_CONDOR_PROCNO of _CONDOR_NPROCS). Here two nodes on two slots
of this machine, under the starter's contract (tests/test_condor_wrapper.py): node 0 does the
work, node 1 sleeps. jobmon query, the HTML page and `jobmon report` show one job with a row
per node (told apart by slot, sharing a host), its balance and the advice."""
import json
import os
import subprocess

import pytest

from helpers import jobmon, needs_test_user, root
from test_condor_wrapper import FAST, Starter, py

pytestmark = [root, needs_test_user]
BURN = "import time\nwhile time.process_time() < 0.6: pass"
IDLE = "import time\ntime.sleep(0.8)"


def test_a_parallel_job_is_one_job_with_a_row_per_node(tmp_path):
    starters, procs = [], []    # (the first one's directory goes with it: keep them)
    for node, code in ((0, BURN), (1, IDLE)):
        s = Starter(base=starters[0].base if starters else None, site=FAST, JobUniverse="11",
                    CurrentHosts="2", machine_attrs={"Name": f'"slot1_{node + 1}@vm"'})
        starters.append(s)
        s.n = 10 * node            # each slot its own execute directory
        s.prepare()
        s.env.update(_CONDOR_PROCNO=str(node), _CONDOR_NPROCS="2")
        procs.append(s.popen_prepared(py(code), stdin=subprocess.DEVNULL))
    base = starters[0].base
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0 and not err, err
    store = os.path.join(base, "store.db")
    # each node's record says which node it is
    assert sorted(d["tags"]["parallel_node"] for d, _s, _x in starters[0].records("5.0")) \
        == ["0", "1"]
    env = dict(os.environ, COLUMNS="80", JOBMON_CONFIG=str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    q = jobmon("query", "5.0", "--json", f"--store={store}", "--no-scheduler", env=env)
    assert q.returncode == 0, q.stderr
    doc = json.loads(q.stdout)
    nodes = {h["host"]: h for h in doc["hosts"]}
    assert sorted(nodes) == ["slot1_1@vm", "slot1_2@vm"]
    busy, idle = nodes["slot1_1@vm"], nodes["slot1_2@vm"]
    assert busy["cpu_percent"] >= 90 and idle["cpu_percent"] <= 10
    assert doc["summary"]["nodes"] == 2 and doc["summary"]["busiest_node"] == "slot1_1@vm"
    assert doc["summary"]["cpu_max_over_mean"] >= 1.8
    assert any(a["rule"] == "one_node_busy" for a in doc["advice"]), doc["advice"]
    text = jobmon("query", "5.0", f"--store={store}", "--no-scheduler", env=env).stdout
    assert "per node (2)" in text and "slot1_2@vm" in text
    assert max(map(len, text.splitlines())) <= 80
    # one job run in `jobmon report`
    rep = json.loads(jobmon("report", "--since=1d", "--json", f"--store={store}",
                            env=env).stdout)
    assert rep["jobs"] == 1
    page = str(tmp_path / "p.html")
    assert jobmon("report", "5.0", "--html", page, f"--store={store}", env=env).returncode == 0
    html = open(page, encoding="utf-8").read()
    assert "Balance across nodes" in html and "slot1_2@vm" in html


@pytest.mark.parametrize("hosts, names", [
    ((("wn1", {}), ("wn2", {})), ["wn1", "wn2"]),
    ((("wn1", {"slot": "slot1_1@wn1"}), ("wn1", {"slot": "slot1_2@wn1"})),
     ["slot1_1@wn1", "slot1_2@wn1"]),
    ((("wn1", {"parallel_node": "0"}), ("wn1", {"parallel_node": "1"})),
     ["wn1 node 0", "wn1 node 1"])])
def test_node_names_tell_nodes_on_one_host_apart(hosts, names):
    from jobmon.report.nodes import names as node_names
    assert node_names([{"host": h, "tags": t} for h, t in hosts]) == names
