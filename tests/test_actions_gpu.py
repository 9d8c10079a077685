"""`jobmon act` on GPUs held idle (its default policy, resources = "gpus"): two HTCondor jobs
under the starter's contract on the recorded 2-GPU node (a real `jobmon gpu-reader`, as
tests/test_idle.py), both asleep -- their cores idle -- one with no process on its GPU,
the other with its process on its own. Only the first is warned and held (the real
htcondor2 bindings, a recorded schedd); the other's idle cores are not the policy's."""
import os
import time

from gpu_node_site import TELL_PID, GpuNode, wait_for_file
from helpers import PYTHON, TEST_USER, needs_test_user, root
from schedd_recorder import RecordedSchedd, job_ad

pytestmark = [root, needs_test_user]

GIB = 1 << 30
SITE = ('[condor]\ninterval = 0.2\nmin_interval = 0.05\n[actions]\nmode = "on"\n'
        'idle_seconds = 1.0\ngrace_seconds = 1.0\nwarn = "none"\n')     # resources: gpus


def test_a_job_holding_a_gpu_none_of_its_processes_is_on_is_warned_then_held(monkeypatch):
    from jobmon import config
    from jobmon.actions import actor
    from jobmon.plugins.condor.actions import Condor
    from jobmon.actions.records import LocalWriter
    from jobmon.stores.local import LocalStore
    from test_condor_wrapper import Starter
    node = GpuNode().start(period=0.2)
    uuid = {d["minor"]: d["uuid"] for d in node.rec["devices"]}
    starters, procs, ads = {}, {}, []
    try:
        for job, gpu in (("8.0", 0), ("9.0", 1)):
            gid = f"ap01.example.org#{job}#1795333960"
            s = Starter(site=SITE, Owner=f'"{TEST_USER}"', ClusterId=job[0],
                        GlobalJobId=f'"{gid}"').prepare()
            s.env.update(node.env(CUDA_VISIBLE_DEVICES=uuid[gpu]))
            s.env.update(PATH="/usr/bin:/bin", JOBMON_STORE=starters.get("8.0", s).store)
            s.pidfile = os.path.join(s.scratch, "pid")
            procs[job] = s.popen_prepared([PYTHON, "-c", TELL_PID, s.pidfile, "300"])
            starters[job] = s
            ads.append(job_ad(s.job_ad_text, ClusterId=int(job[0]), GlobalJobId=gid,
                              Owner=TEST_USER))
        busy = int(wait_for_file(starters["9.0"].pidfile))
        [index] = [i for i, d in enumerate(node.rec["devices"]) if d["minor"] == 1]
        node.set_procs(index, [(busy, GIB)])         # 9.0's process on its GPU
        path = starters["8.0"].store
        cfg = config.load(starters["8.0"].config)
        schedd = RecordedSchedd(monkeypatch, ads)
        seen, deadline = {}, time.monotonic() + 60
        while not os.path.exists(path):   # made by the jobs' user: never first by root
            assert time.monotonic() < deadline
            time.sleep(0.1)
        while seen.get("8.0", [None])[-1] != "act":
            assert time.monotonic() < deadline, seen
            st = LocalStore(path)
            done = actor.run_pass(cfg, st, {"htcondor": Condor(schedd=schedd.schedd)},
                                  LocalWriter(st))
            for d in done.decisions:
                seen.setdefault(d.job, []).append(d.kind)
            time.sleep(0.3)
        [call] = schedd.acts()
        assert '"ap01.example.org#8.0#1795333960"' in call[2], call
        assert "warn" in seen["8.0"] and set(seen.get("9.0", [])) <= {"busy"}, seen
        cores = [r["sample"].get("cpu_idle_seconds", 0) for r in LocalStore(path).latest(0)
                 if r["job"] == "9.0"]
        assert cores and cores[0] >= 1.0, "9.0's cores were idle too"
        hold = [a for a in LocalStore(path).actions() if a["action"] == "hold"]
        assert [(a["job"], a["resources"]) for a in hold] == [("8.0", "gpus")]
        assert "its GPUs with none of its processes on them" in hold[0]["reason"]
    finally:
        for job, p in procs.items():
            starters[job].hard_kill(p, vacate=10)
        node.close()
