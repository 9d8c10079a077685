"""A pilot's account, end to end: a pilot process (under jobmon-condor-wrapper as the site's
batch job, or under `jobmon run` with the pilot's tags) validates, waits, then runs three
payload jobs, each through jobmon-condor-wrapper with the glidein's machine ad (so each
record names its pilot): one completes, one fails (exit 3), one is still running at the
pilot's end and gets the starter's soft kill (SIGTERM to its top pid). Everything lands in
the embedded store; `jobmon pilot` reads it back and partitions the pilot's core-hours.

The expected partition is recomputed here independently: the pilot's life stepped at a
fine grain, at each step the report's rule applied to what was running then (from the
recorded start and end times), and summed."""
import json
import os

import pytest

from helpers import PYTHON, jobmon, jobmon_run, needs_test_user, root
from test_condor_wrapper import FAST, WRAPPER, Starter, records

pytestmark = [root, needs_test_user]

GIB = 1 << 30
PILOT_CORES, PILOT_MEM_MIB = 4, 6144          # 4 cores, 6 GiB: 3 canonical units
SLOT_CORES, SLOT_MEM_MIB = 1, 2048            # each payload's slot: 1 unit

# glidein_startup.sh and the glidein's startd/starter, in small: validation (CPU), the
# mark of its end, a wait for a match, then the payloads as a starter runs them; at the
# pilot's end the one still running gets the soft kill, and the pilot cleans up and exits
PILOT = r"""
import json, signal, subprocess, sys, time
def burn(s):
    t = time.process_time()
    while time.process_time() - t < s: pass
spec = json.load(open(sys.argv[1]))
burn(0.4)
with open(spec["validated"], "w") as f:
    f.write(repr(time.time()))
time.sleep(0.3)
def start(p):
    return subprocess.Popen([spec["wrapper"]] + p["argv"], cwd=p["scratch"], env=p["env"],
                            stdin=subprocess.DEVNULL)
good, failed, killed = spec["payloads"]
long_one = start(killed)
time.sleep(0.5)
a, b = start(good), start(failed)
codes = [a.wait(), b.wait()]
time.sleep(0.4)
long_one.send_signal(signal.SIGTERM)
codes.append(long_one.wait())
time.sleep(0.2)
print(json.dumps(codes))
"""
BURN = ("import sys, time\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < float(sys.argv[1]): pass\n"
        "sys.exit(int(sys.argv[2]))\n")
SLEEP = "import time\ntime.sleep(120)\n"
GLIDEIN = {"GLIDEIN_Site": '"Site_X"', "GLIDEIN_ResourceName": '"Site_X_CE1"',
           "GLIDEIN_Name": '"gfactory_instance"'}
SLOT = {"RequestCpus": SLOT_CORES, "CpusProvisioned": SLOT_CORES,
        "RequestMemory": SLOT_MEM_MIB, "MemoryProvisioned": SLOT_MEM_MIB}


def run_pilot(how):
    """Run the pilot `how` ("condor" or "jobmon-run"); return (store, pilot id, validated
    at, exit codes the pilot saw)."""
    pilot_id = "9001.0" if how == "condor" else "pilot-7"
    outer = Starter(site=FAST)
    glidein = Starter(site=FAST, machine_attrs=dict(GLIDEIN, JobMonitorPilot=f'"{pilot_id}"'))
    glidein.store = outer.store                    # one store for the node
    payloads = []
    for i, argv in enumerate(([PYTHON, "-c", BURN, "0.5", "0"], [PYTHON, "-c", BURN, "0.2", "3"],
                              [PYTHON, "-c", SLEEP])):
        glidein.prepare(ClusterId=101 + i, ProcId=0, GlobalJobId=f'"ap#{101 + i}.0#1"', **SLOT)
        payloads.append({"scratch": glidein.scratch, "env": glidein.env, "argv": argv})
    validated = os.path.join(outer.base, "validated")
    spec = os.path.join(outer.base, "pilot.json")
    with open(spec, "w") as f:
        json.dump({"wrapper": WRAPPER, "payloads": payloads, "validated": validated}, f)
    script = os.path.join(outer.base, "pilot.py")
    with open(script, "w") as f:
        f.write(PILOT)
    if how == "condor":   # the pilot is the site's batch job 9001.0, on a 4-core slot
        outer.prepare(ClusterId=9001, ProcId=0, GlobalJobId='"ce01#9001.0#1"',
                      RequestCpus=PILOT_CORES, CpusProvisioned=PILOT_CORES,
                      RequestMemory=PILOT_MEM_MIB, MemoryProvisioned=PILOT_MEM_MIB)
        p = outer.popen_prepared([PYTHON, script, spec], stdin=open(os.devnull))
        out, err = p.communicate(timeout=120)
        rc = p.returncode
    else:
        r = jobmon_run([f"--job-id={pilot_id}", "--interval=0.2", "--tag=role=pilot",
                        f"--tag=CpusProvisioned={PILOT_CORES}",
                        f"--tag=MemoryProvisioned={PILOT_MEM_MIB}"],
                       [PYTHON, script, spec], store=outer.store, user=outer.user.pw_name,
                       env=dict(os.environ, JOBMON_CONFIG=outer.config), timeout=120)
        rc, out, err = r.returncode, r.stdout, r.stderr
    assert rc == 0, err
    with open(validated) as f:
        v = float(f.read())
    return outer, pilot_id, v, json.loads(out)


def expected(pilot, payloads, validated, step=0.0005):
    """The report's rule, applied step by step: before validation all cores are
    validation; with nothing running, all are overhead; else each payload has its slot,
    the idle cores make whole units (1 core + 2 GiB) of overhead, and the cores left over
    go to the running payloads, shared by their cores."""
    cats = dict.fromkeys(("validation", "goodput", "preemption", "overhead",
                          "misconfiguration", "decision_problem"), 0.0)
    per = [0.0] * len(payloads)
    t, end = pilot["start"], pilot["end"]
    while t < end:
        dt = min(step, end - t)
        mid = t + dt / 2
        if mid < validated:
            cats["validation"] += PILOT_CORES * dt
        else:
            running = [i for i, p in enumerate(payloads) if p["start"] <= mid < p["end"]]
            idle = PILOT_CORES - SLOT_CORES * len(running)
            idle_mem = (PILOT_MEM_MIB - SLOT_MEM_MIB * len(running)) * (1 << 20)
            units = min(idle, idle_mem // (2 * GIB)) if running else idle
            cats["overhead"] += units * dt
            for i in running:
                share = (SLOT_CORES + (idle - units) / len(running)) * dt
                cats[payloads[i]["category"]] += share
                per[i] += share
        t += dt
    return {k: v / 3600 for k, v in cats.items()}, [x / 3600 for x in per]


@pytest.mark.parametrize("how", ["condor", "jobmon-run"])
def test_pilot_with_a_good_a_failed_and_a_killed_payload(how):
    starter, pilot_id, validated, codes = run_pilot(how)
    assert codes == [0, 3, -15]        # the killed one: by the soft kill, SIGTERM
    for job in ("101.0", "102.0", "103.0"):
        (info, summary, samples), = records(starter.store, job)
        assert info["tags"]["pilot"] == pilot_id and info["tags"]["CpusProvisioned"] == "1"
        assert summary and samples

    r = jobmon("pilot", pilot_id, "--json", f"--store={starter.store}",
               f"--validated-at={validated!r}")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["pilot"] == pilot_id and m["validation_source"] == "given"
    assert m["resources"] == {"cores": 4.0, "memory_bytes": 6 * GIB, "gpus": 0.0}
    hours = m["wall_seconds"] / 3600
    assert m["provisioned"]["core_hours"] == pytest.approx(PILOT_CORES * hours, rel=1e-9)
    assert m["balanced"]
    total = sum(c["core_hours"] for c in m["categories"].values())
    assert total == pytest.approx(m["provisioned"]["core_hours"], rel=1e-9)

    # each payload: how it ended, why, and where its time went
    by_job = {p["job"]: p for p in m["payloads"]}
    assert sorted(by_job) == ["101.0", "102.0", "103.0"]
    good, failed, killed = by_job["101.0"], by_job["102.0"], by_job["103.0"]
    assert (good["outcome"], good["category"]) == ("goodput", "goodput")
    assert good["reason"].startswith("completed")
    assert (failed["outcome"], failed["cause"], failed["category"]) == \
        ("badput", "user", "goodput")               # the user's failure: goodput of the pilot
    assert "exit code 3" in failed["reason"]
    assert (killed["outcome"], killed["category"]) == ("badput", "preemption")
    assert "SIGTERM" in killed["reason"] and killed["signal"] == 15
    assert m["pilot"] and killed["end"] <= m["end"] <= killed["end"] + 5

    # the partition, against the rule applied step by step to the recorded times
    cats, per = expected(m, m["payloads"], validated)
    for name, h in m["categories"].items():
        assert h["core_hours"] == pytest.approx(cats[name], abs=2e-5), name
    for p, h in zip(m["payloads"], per):
        assert p["core_hours"] == pytest.approx(h, abs=2e-5), p["job"]
    assert m["user_badput"]["core_hours"] == pytest.approx(failed["core_hours"], rel=1e-9)
    assert m["categories"]["misconfiguration"]["core_hours"] == 0
    assert m["categories"]["decision_problem"]["core_hours"] == 0
    # every category the scenario holds got time: validation 0.4 s of CPU at least
    assert m["categories"]["validation"]["core_hours"] >= PILOT_CORES * 0.4 / 3600
    for name in ("goodput", "preemption", "overhead"):
        assert m["categories"][name]["core_hours"] > 0, name
    # the killed payload ran alone with 3 idle cores and 4 GiB: 2 whole units overhead,
    # 1 core of remainder to it; so it got more than its slot's 1 core for its life
    assert killed["core_hours"] > SLOT_CORES * (killed["end"] - killed["start"]) / 3600

    # no validation mark: validation counts as none, the wait before the first payload
    # is overhead, and the text report says so
    r = jobmon("pilot", pilot_id, f"--store={starter.store}", "--json")
    m2 = json.loads(r.stdout)
    assert m2["validation_source"] == "unknown"
    assert m2["categories"]["validation"]["core_hours"] == 0
    assert m2["categories"]["overhead"]["core_hours"] == pytest.approx(
        m["categories"]["overhead"]["core_hours"] + m["categories"]["validation"]["core_hours"],
        rel=1e-9)
    r = jobmon("pilot", pilot_id, f"--store={starter.store}")
    assert r.returncode == 0, r.stderr
    assert "preemption badput" in r.stdout and "not recorded" in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) <= 80
    # each payload: its category for the pilot, then how its own run ended, in words that
    # never put a goodput under a badput: the user's failure is said to be the pilot's
    # goodput
    text = r.stdout.split("\npayloads (3)", 1)[1]
    lines = [x.strip() for x in text.splitlines()[1:]]
    at = {job: lines.index(next(x for x in lines if x.startswith(job)))
          for job in ("101.0", "102.0", "103.0")}
    assert lines[at["101.0"]].endswith("core-s  goodput") or \
        lines[at["101.0"]].endswith("core-h  goodput")
    assert lines[at["102.0"]].endswith("goodput")
    assert lines[at["102.0"] + 1].startswith("its run: failed (exit code 3)")
    after = min([i for i in at.values() if i > at["102.0"]] + [len(lines)])
    assert "its user's doing, so goodput for the pilot" in " ".join(
        lines[at["102.0"] + 1:after])
    assert lines[at["103.0"]].endswith("preemption badput")
    assert not [x for x in lines if x.startswith(("badput", "goodput", "->"))]


def test_unknown_pilot_is_one_clear_line(tmp_path):
    store = str(tmp_path / "store.db")
    r = jobmon_run(["--job-id=other"], ["true"], store=store)
    assert r.returncode == 0
    r = jobmon("pilot", "nope", f"--store={store}")
    assert r.returncode == 1 and r.stderr.strip() == "jobmon: no pilot 'nope' in the store"
