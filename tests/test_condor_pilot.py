"""A glidein pilot watched as a whole by `jobmon run`, running three payload jobs one after
another, each through jobmon-condor-wrapper as its USER_JOB_WRAPPER (as the pilot's own
starter would): every payload record names the pilot, so the pilot's time can be split
between its payloads and its own overhead."""
import json
import os

from helpers import PYTHON, jobmon_run, needs_test_user, root
from test_condor_wrapper import FAST, WRAPPER, Starter, records

pytestmark = [root, needs_test_user]

# stands in for glidein_startup.sh and the pilot's condor_startd/starter: it burns some CPU
# of its own (set-up, then between payloads), and starts each payload as a starter does
PILOT = r"""
import json, subprocess, sys, time
def burn(s):
    t = time.process_time()
    while time.process_time() - t < s: pass
spec = json.load(open(sys.argv[1]))
burn(0.3)
codes = []
for p in spec["payloads"]:
    codes.append(subprocess.run([spec["wrapper"]] + p["argv"], cwd=p["scratch"], env=p["env"],
                                stdin=subprocess.DEVNULL).returncode)
    burn(0.1)
print(json.dumps(codes))
"""

PAYLOAD = ("import sys, time\n"
           "t = time.process_time()\n"
           "while time.process_time() - t < 0.3: pass\n"
           "sys.exit(int(sys.argv[1]))\n")
GLIDEIN = {"GLIDEIN_Site": '"Site_X"', "GLIDEIN_ResourceName": '"Site_X_CE1"',
           "GLIDEIN_Name": '"gfactory_instance"', "JobMonitorPilot": '"pilot-7"'}


def cpu(summary):
    return summary["cpu_user_seconds"] + summary["cpu_system_seconds"]


def test_pilot_with_three_payloads():
    starter = Starter(site=FAST, machine_attrs=GLIDEIN)
    payloads = []
    for i, code in enumerate((0, 3, 0)):
        starter.prepare(ClusterId=101 + i, ProcId=0, GlobalJobId=f'"ap#{101 + i}.0#1"')
        payloads.append({"scratch": starter.scratch, "env": starter.env,
                         "argv": [PYTHON, "-c", PAYLOAD, str(code)]})
    spec = os.path.join(starter.base, "pilot.json")
    with open(spec, "w") as f:
        json.dump({"wrapper": WRAPPER, "payloads": payloads}, f)
    pilot = os.path.join(starter.base, "pilot.py")
    with open(pilot, "w") as f:
        f.write(PILOT)
    r = jobmon_run(["--job-id=pilot-7", "--interval=0.2", "--tag=role=pilot"],
                   [PYTHON, pilot, spec], store=starter.store, user=starter.user.pw_name,
                   env=dict(os.environ, JOBMON_CONFIG=starter.config))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [0, 3, 0]

    (p_info, p_sum, _), = records(starter.store, "pilot-7")
    assert p_info["scheduler"] == "local" and p_info["tags"]["role"] == "pilot"
    runs = []
    for i, code in enumerate((0, 3, 0)):
        (info, summary, samples), = records(starter.store, f"{101 + i}.0")
        assert info["scheduler"] == "htcondor" and info["run"] == 1
        assert info["tags"]["pilot"] == "pilot-7"
        assert (info["tags"]["GLIDEIN_Site"], info["tags"]["GLIDEIN_ResourceName"],
                info["tags"]["GLIDEIN_Name"]) == ("Site_X", "Site_X_CE1", "gfactory_instance")
        assert summary["exit_code"] == code and samples
        assert cpu(summary) >= 0.3
        runs.append((summary["start_time"], summary["end_time"], summary))
    # one after another, all inside the pilot's own run
    assert p_sum["start_time"] <= runs[0][0]
    for (_, end, _), (start, _, _) in zip(runs, runs[1:]):
        assert end <= start
    assert runs[-1][1] <= p_sum["end_time"]
    # the pilot's record holds its payloads and its own overhead (0.3 s + 3 x 0.1 s burnt,
    # plus its interpreter and the wrappers' own CPU)
    payload_cpu = sum(cpu(s) for _, _, s in runs)
    assert cpu(p_sum) - payload_cpu >= 0.55, (cpu(p_sum), payload_cpu)
    assert p_sum["wall_seconds"] >= sum(s["wall_seconds"] for _, _, s in runs)
    assert p_sum["procs_max"] >= 3   # pilot, a wrapper, its payload
