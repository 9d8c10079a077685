"""The node reader's figures in every report: `jobmon query` (terminal, JSON, CSV), the HTML
page, `jobmon report --by`, the report card -- each energy and network figure with its
scope and method. Real jobs on a node reader (a recorded RAPL tree, real BPF counters)
into the embedded store."""
import json
import os
import re
import subprocess

import pytest

from helpers import JOBMON, needs_root
from node_site import BUSY, CLIENT, NodeReader, Powered, Server, sent_as

pytestmark = needs_root


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """Two jobs of root's on a node reader: e1 (account phys) busy, then talking to a local
    server; e2 (account chem) busy for longer. Gives the store and the bytes e1's socket
    says it sent (retransmissions included)."""
    tmp = tmp_path_factory.mktemp("node-reports")
    powered = Powered("xeon_2s", {"intel-rapl:0": 60, "intel-rapl:1": 40,
                                  "intel-rapl:0:0": 12, "intel-rapl:1:0": 8})
    n = NodeReader(powered, "[node_reader]\ncarbon_intensity = 400\n").start(
        period=0.5, wait_for=("energy.json", "network.txt"))
    path, sent = str(tmp / "store.db"), {}
    try:
        server = Server(answer=50_000)
        for job, account, code in (("e1", "phys", f'"$0" -c "$1" 0.5; "$0" -c "$2" '
                                                  f'{server.port} 1000000'),
                                   ("e2", "chem", '"$0" -c "$1" 1.5')):
            r = subprocess.run([JOBMON, "run", f"--job-id={job}", f"--store={path}",
                                f"--tag=account={account}", "--interval=0.2", "--", "sh", "-c",
                                code, "python3", BUSY, CLIENT], env=n.env(),
                               capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr
            sent[job] = int(r.stdout.split()[0]) if r.stdout else 0
    finally:
        n.close()
        powered.close()
    return {"store": path, "sent": sent}


@pytest.fixture(scope="module")
def store(jobs):
    return jobs["store"]


def jobmon(*args):
    r = subprocess.run([JOBMON, *args], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, COLUMNS="150"))
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_query_shows_each_figure_with_its_scope_and_method(jobs, store):
    doc = json.loads(jobmon("query", "e1", f"--store={store}", "--json"))
    rows = {r["field"]: r for r in doc["node"]}
    assert (rows["cpu_energy_joules"]["scope"], rows["cpu_energy_joules"]["method"]) == \
        ("job", "apportioned")
    assert "share of the CPU time the node used" in rows["cpu_energy_joules"]["note"]
    assert (rows["co2e_grams"]["scope"], rows["co2e_grams"]["method"]) == ("job", "estimated")
    assert rows["co2e_grams"]["note"].startswith("at 400 gCO2e/kWh, the site's carbon "
                                                 "intensity; ± from the energy's bound")
    # every energy figure with its bound, the summary's, and what the bound leaves out
    for field in ("cpu_energy_joules", "dram_energy_joules", "energy_joules", "co2e_grams"):
        bound = field.replace("_joules", "_error_joules").replace("_grams", "_error_grams")
        assert rows[field]["error"] == doc["summary"][bound] and 0 < rows[field]["error"] \
            < rows[field]["value"], (field, rows[field])
    assert "the model (every CPU-second costs the same) is not bounded" in \
        rows["cpu_energy_joules"]["note"]
    assert rows["energy_method"]["value"].startswith("cpu,dram: RAPL counters x the job's "
                                                     "share of the node's busy CPU time")
    assert (rows["net_tx_bytes"]["scope"], rows["net_tx_bytes"]["method"]) == ("job", "exact")
    s = doc["summary"]
    assert rows["net_tx_bytes"]["value"] == s["net_tx_bytes"]
    assert jobs["sent"]["e1"] >= 1_000_000
    assert sent_as(s["net_tx_bytes"], s["net_tx_packets"], jobs["sent"]["e1"]), (s, jobs)
    assert doc["scope_and_method"]["gpu_util_avg_percent"] == {
        "scope": "device", "method": "derived"}
    text = jobmon("query", "e1", f"--store={store}")
    assert "energy and network (scope, method)" in text
    assert "CPU package energy" in text and "job, apportioned" in text
    assert "job, estimated" in text and "gCO2e" in text
    [line] = [x for x in text.splitlines() if x.startswith("CPU package energy")]
    assert " J ± " in line, line
    [line] = [x for x in text.splitlines() if x.startswith("CO2e")]
    assert " gCO2e ± " in line, line
    csv = jobmon("query", "e1", f"--store={store}", "--csv")
    assert "e1,node,CPU package energy," in csv and '"job, apportioned; ± ' in csv


def test_the_html_page_plots_power_and_network_and_says_how(store, tmp_path):
    page = tmp_path / "e1.html"
    jobmon("report", "e1", f"--store={store}", "--html", str(page))
    html = page.read_text()
    assert 'id="plot-power"' in html and 'id="plot-network"' in html
    assert "Energy and network" in html and "job, apportioned" in html
    assert re.search(r"<th>CPU package energy</th><td>[0-9.]+ J ± [0-9.]+ m?J</td>", html)
    assert '"field":"power_watts"' in html


def test_report_by_account_sums_energy(store):
    model = json.loads(jobmon("report", f"--store={store}", "--by", "account", "--json",
                              "--since", "1h"))
    groups = {g["key"]: g for g in model["groups"]}
    e1, e2 = (json.loads(jobmon("query", j, f"--store={store}", "--json"))["summary"]
              for j in ("e1", "e2"))
    for key, s in (("phys", e1), ("chem", e2)):
        assert groups[key]["energy_jobs"] == 1
        assert groups[key]["energy_kwh"] == pytest.approx(s["energy_joules"] / 3.6e6)
        assert groups[key]["co2e_kg"] == pytest.approx(s["co2e_grams"] / 1000)
        assert groups[key]["energy_error_kwh"] == pytest.approx(
            s["energy_error_joules"] / 3.6e6)
        assert groups[key]["co2e_error_kg"] == pytest.approx(s["co2e_error_grams"] / 1000)
    assert model["total"]["energy_error_kwh"] == pytest.approx(
        (e1["energy_error_joules"] + e2["energy_error_joules"]) / 3.6e6)
    assert model["total"]["energy_unbounded_jobs"] == 0
    assert model["total"]["energy_jobs"] == 2
    text = jobmon("report", f"--store={store}", "--by", "account", "--since", "1h")
    assert "energy" in text and "kWh" in text and "2 of 2 job runs measured" in text
    assert " kWh (GPUs' counters" in text and "± the sum of the runs' bounds, a worst case" \
        in text and "which the data cannot bound" in text


def test_the_card_says_the_energy(store):
    from jobmon.sinks.card_text import card_lines
    from jobmon.printable import size
    s = json.loads(jobmon("query", "e1", f"--store={store}", "--json"))["summary"]
    lines = card_lines(s)
    [energy] = [x for x in lines if "Energy:" in x]
    assert "CPU+DRAM apportioned" in energy and "gCO2e ± " in energy and " J ± " in energy
    network = f"Network: sent {size(s['net_tx_bytes'])}, received {size(s['net_rx_bytes'])}"
    assert s["net_tx_bytes"] > 1_000_000 and network in [x.strip() for x in lines], lines
