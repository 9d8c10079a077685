"""A pilot counts only its own payloads. Anybody can name a pilot: user B's job with a
`pilot` tag (`jobmon run --tag pilot=ID`, or the HTCondor wrapper run by hand with a
machine ad that names the pilot) used to be counted as a payload of user A's pilot, its
core-hours in A's goodput, and the text report showed no user. Played here as two real
users against the real InfluxDB (through the real shipper) and the embedded store, with
the HTCondor starter's contract for the wrapper; `jobmon pilot` must count A's payloads
only and show B's apart, with B's name."""
import json
import os
import subprocess
import time

import pytest

from helpers import (JOBMON, PYTHON, as_user, jobmon, needs_test_user, owned_by,
                     shared_tmpdir)
from test_condor_wrapper import FAST, WRAPPER, Starter

pytestmark = [pytest.mark.root, needs_test_user]

# the write and read path also as configured for InfluxDB 3 (conftest: site_flavour)
SITE_FLAVOURS = ("1.x", "3.x")

A, B = "jobmon-test", "jobmon-test2"
PILOT = "pilotV"
# the pilot: starts its own payload (as its user, naming itself), waits until told to end
PILOT_SCRIPT = r"""
import json, os, subprocess, sys, time
payload, done = json.load(open(sys.argv[1])), sys.argv[2]
rc = subprocess.run(payload["argv"], cwd=payload["cwd"], env=payload["env"]).returncode
while not os.path.exists(done):
    time.sleep(0.05)
sys.exit(rc)
"""
BUSY = "import sys, time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n" \
       "sys.exit({code})\n"


def busy(seconds, code=0):
    return [PYTHON, "-c", BUSY.format(s=seconds, code=code)]


def start_pilot(env, payload, cwd=None, payload_env=None, store=None, pilot_id=PILOT):
    """A's pilot under `jobmon run`, 4 cores and 8 GiB, running `payload` (argv, in cwd,
    with payload_env: None, its own) as its own payload; returns (the process, the file
    that ends it)."""
    where = shared_tmpdir("jobmon-pilot-")
    done, spec = os.path.join(where, "done"), os.path.join(where, "payload.json")
    with open(spec, "w") as f:
        json.dump({"argv": payload, "cwd": cwd or where, "env": payload_env}, f)
    script = os.path.join(where, "pilot.py")
    with open(script, "w") as f:
        f.write(PILOT_SCRIPT)
    argv = [JOBMON, "run", f"--job-id={pilot_id}", "--interval=0.2", "--tag=CpusProvisioned=4",
            "--tag=MemoryProvisioned=8192"] + ([f"--store={store}"] if store else []) + \
        ["--", PYTHON, script, spec, done]
    return subprocess.Popen(as_user(argv, A), env=env, cwd=where), done


def end_pilot(pilot, done):
    open(done, "w").close()
    assert pilot.wait(timeout=60) == 0


def check_only_own(m, own_job):
    """A's payload counts; B's is a claim, shown apart with B's name."""
    assert [(p["job"], p["user"]) for p in m["payloads"]] == [(own_job, A)]
    [claim] = m["claims"]
    assert claim["user"] == B and f"not by the pilot's user {A}" in claim["why"]
    [own] = m["payloads"]
    # everything the pilot delivered is its own payload's: B's busy core-seconds are in
    # no category (they were most of the goodput before)
    delivered = sum(m["categories"][c]["core_hours"]
                    for c in ("goodput", "misconfiguration", "preemption"))
    assert delivered == pytest.approx(own["core_hours"], rel=1e-9)
    assert m["balanced"]
    return claim


def test_another_users_jobmon_run_naming_the_pilot_is_not_its_payload(site):
    """B's `jobmon run --tag pilot=pilotV` while A's pilot runs (InfluxDB): not counted
    in the pilot; `jobmon pilot` lists it apart with B's name, in JSON and in text."""
    site.prepare()
    pilot, done = start_pilot(site.env, [JOBMON, "run", "--job-id=payload-1",
                                         "--interval=0.2", f"--tag=pilot={PILOT}",
                                         "--tag=CpusProvisioned=1", "--"] + busy(0.3))
    time.sleep(0.3)
    site.jobmon("run", "--job-id=junk-payload", "--interval=0.2", f"--tag=pilot={PILOT}",
                "--tag=CpusProvisioned=4", "--tag=request_cpus=4", "--", *busy(0.8, 1),
                user=B, check=False, cwd=shared_tmpdir())
    end_pilot(pilot, done)
    site.ship()
    m = json.loads(site.jobmon("pilot", PILOT, "--json").stdout)
    claim = check_only_own(m, "payload-1")
    assert claim["job"] == "junk-payload" and claim["resources"]["cores"] == 4
    text = site.jobmon("pilot", PILOT).stdout
    assert f"payload-1 by {A}" in text
    assert "claims by other users, not counted (1):" in text and f"junk-payload by {B}" in text
    assert max(map(len, text.splitlines())) <= 80
    # a site whose pilots run payloads under other accounts lists them: then it counts
    env = dict(site.env, JOBMON_OWNERSHIP_PILOT_ACCOUNTS=f"{A}, jobmon-test?")
    m = json.loads(site.jobmon("pilot", PILOT, "--json", env=env).stdout)
    assert sorted(p["user"] for p in m["payloads"]) == [A, B] and m["claims"] == []


def test_the_wrapper_run_by_hand_with_a_made_up_machine_ad_is_not_its_payload():
    """B runs jobmon-condor-wrapper by hand with a machine ad naming A's pilot (the
    embedded store both write to): not counted in the pilot, listed apart with B's name."""
    glidein = {"GLIDEIN_Name": '"gfactory"', "JobMonitorPilot": f'"{PILOT}"'}
    mine = Starter(site=FAST, machine_attrs=glidein, user=A)
    forged = Starter(site=FAST, machine_attrs=glidein, user=B)
    forged.store = mine.store
    # one store file for both users (as a shared embedded store would be)
    from jobmon.stores.local import LocalStore
    LocalStore(mine.store).db.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(mine.store + suffix):
            os.chmod(mine.store + suffix, 0o666)
    mine.prepare(ClusterId=101, ProcId=0, GlobalJobId='"ap#101.0#1"', CpusProvisioned=1)
    env = dict(os.environ, JOBMON_CONFIG=mine.config)
    # the pilot's startd starts its payload as a starter does (scratch dir, ads, env)
    pilot, done = start_pilot(env, [WRAPPER] + busy(0.3), mine.scratch, mine.env,
                              store=mine.store)
    time.sleep(0.3)
    forged.prepare(ClusterId=999, ProcId=0, GlobalJobId='"ap#999.0#1"', CpusProvisioned=2)
    p = forged.popen_prepared(busy(0.8, 1), stdin=subprocess.DEVNULL)
    assert p.wait(timeout=60) == 1, p.stderr.read()
    end_pilot(pilot, done)
    r = jobmon("pilot", PILOT, "--json", f"--store={mine.store}", env=env)
    assert r.returncode == 0, r.stderr
    claim = check_only_own(json.loads(r.stdout), "101.0")
    assert (claim["job"], claim["run"]) == ("999.0", 1)
    text = jobmon("pilot", PILOT, f"--store={mine.store}", env=env).stdout
    assert f"999.0 run 1 by {B}" in text and f"101.0 run 1 by {A}" in text


def test_another_users_run_under_the_pilots_job_id_is_not_the_pilot(site, tmp_path):
    """A's pilot is HTCondor's 4711.0 (its history names A); afterwards B runs `jobmon run
    --job-id 4711.0` with a payload of B's naming it. `jobmon pilot 4711.0` showed B's run
    as the pilot (the newest record of the id) and B's payload as its goodput; it is A's
    pilot, with A's payload, and `--user` shows a pilot of that user only."""
    site.prepare()
    pilot, done = start_pilot(site.env, [JOBMON, "run", "--job-id=payload-1",
                                         "--interval=0.2", "--tag=pilot=4711.0",
                                         "--tag=CpusProvisioned=1", "--"] + busy(0.3),
                              pilot_id="4711.0")
    end_pilot(pilot, done)
    site.jobmon("run", "--job-id=4711.0", "--interval=0.2", "--tag=CpusProvisioned=4", "--",
                JOBMON, "run", "--job-id=junk-payload", "--interval=0.2", "--tag=pilot=4711.0",
                "--tag=CpusProvisioned=4", "--", *busy(0.5), user=B, cwd=shared_tmpdir())
    site.ship()
    reader = tmp_path / "reader.toml"       # where HTCondor's history says whose 4711.0 is
    history = owned_by(A, "htcondor", "history")
    with open(site.config) as f:
        reader.write_text(f.read() + FAST + f'history = "{history}"\n')
    env = dict(site.env, JOBMON_CONFIG=str(reader))
    r = site.jobmon("pilot", "4711.0", "--json", env=env)
    m = json.loads(r.stdout)
    assert m["user"] == A and [(p["job"], p["user"]) for p in m["payloads"]] == \
        [("payload-1", A)]
    assert m["other_users"] == [] and "--user" not in r.stderr
    r = site.jobmon("pilot", "4711.0", f"--user={B}", env=env, check=False)
    assert r.returncode == 1 and f"no pilot '4711.0' in the store of user {B}" in r.stderr
