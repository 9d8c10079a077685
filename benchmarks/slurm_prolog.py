"""jobmon's Slurm Prolog as slurmd runs it, beside a Prolog that does nothing, under a
known load; and what a sampler costs beside its job. As root.

  slurmd's way  each Prolog is started as slurmd's run_script starts it: a child in a
                process group of its own, stdio on /dev/null, the Prolog environment
                slurmd gave a real job (tests/fixtures/slurm/prolog/plain.env, no PATH),
                the installed wrapper exec'd; slurmd waits for it, then SIGKILLs its
                process group. Wall time from the fork to its exit. One at a time
                (--single N, jobmon's and the bare Prolog interleaved), and --at-once N
                together (--rounds R, a round of N jobmon Prologs and one of N bare ones
                alternating). Every jobmon job's sampler must then be alive, and, once
                the Epilogs ran, its record in the spool.
  cluster       (--cluster) a real cluster (tests/slurm): jobs one after the other, each
                Prolog timed around the installed wrapper by `date +%s%N` before and
                after, a bare Prolog timed the same way beside it; then a sampler's
                resident memory and CPU over a --long s job at 10 s and 1 s intervals.

--hogs N adds N busy loops; the run queue is sampled throughout (benchmarks/load.py).

    sudo .venv/bin/python benchmarks/slurm_prolog.py [--hogs N] [--single 30]
        [--at-once 10 --rounds 5] [--cluster [--jobs 20] [--long 30]] [--json FILE]
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests")
sys.path.insert(0, TESTS)

import load  # noqa: E402
from slurm_site import JobmonSite  # noqa: E402

BARE = "#!/bin/sh\nexit 0\n"
TIMED = """#!/bin/sh
t0=$(/bin/date +%s%N)
{prolog}
t1=$(/bin/date +%s%N)
echo "$SLURM_JOB_ID {name} $((t1 - t0))" >> {log}
exit 0
"""


def recorded_env(kind):
    with open(os.path.join(TESTS, "fixtures", "slurm", kind, "plain.env")) as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)


class Slurmd:
    """Runs Prologs and Epilogs the way slurmd does, for made-up jobs of the test user."""

    def __init__(self, site, node):
        import pwd
        self.site, self.node = site, node
        self.user = pwd.getpwnam("jobmon-test")
        self.next_job = 900000 + os.getpid() % 1000 * 100

    def env(self, kind, job):
        env = recorded_env(kind)
        for k in ("SLURM_CONF", "PWD"):
            env.pop(k, None)
        env.update(SLURM_JOB_ID=str(job), SLURM_JOBID=str(job), SLURMD_NODENAME=self.node,
                   SLURM_NODELIST=self.node, SLURM_JOB_UID=str(self.user.pw_uid),
                   SLURM_UID=str(self.user.pw_uid), SLURM_JOB_GID=str(self.user.pw_gid),
                   SLURM_JOB_USER=self.user.pw_name)
        return env

    def run(self, script, env):
        """Seconds from the fork to the script's exit; its process group then SIGKILLed."""
        t0 = time.perf_counter()
        p = subprocess.Popen([script], env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             process_group=0, cwd="/")
        p.wait()
        wall = time.perf_counter() - t0
        try:
            os.killpg(p.pid, signal.SIGKILL)     # slurmd: nothing of a Prolog outlives it
        except ProcessLookupError:
            pass
        return wall

    def jobs(self, n):
        out = list(range(self.next_job, self.next_job + n))
        self.next_job += n
        return out

    def at_once(self, script, jobs, kind="prolog"):
        """Run `script` for each job at the same moment (threads behind a barrier)."""
        walls = {}
        gate = threading.Barrier(len(jobs))

        def one(job):
            env = self.env(kind, job)
            gate.wait()
            walls[job] = self.run(script, env)
        threads = [threading.Thread(target=one, args=(j,)) for j in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [walls[j] for j in jobs]


def sampler_alive(site, node, job):
    """The job's sampler named in its pid file, running: slurmd's SIGKILL of the Prolog's
    process group did not reach it."""
    try:
        with open(os.path.join(site.run_dir, f"{node}.{job}.pid")) as f:
            pid = int(f.read().split()[0])
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, ValueError):
        return False


def slurmd_way(site, args, prologs):
    """prologs: [(name, Prolog, Epilog or None)], the first jobmon's."""
    node = f"bench{os.getpid()}"
    sd = Slurmd(site, node)
    out = {"single": {n: [] for n, _, _ in prologs}, "at_once": {n: [] for n, _, _ in prologs},
           "samplers_alive": 0, "samplers": 0, "records": 0}
    jobs_seen = []
    for _ in range(args.single):
        for name, script, epilog in prologs:
            [job] = sd.jobs(1)
            out["single"][name].append(sd.run(script, sd.env("prolog", job)))
            if epilog:
                sd.run(epilog, sd.env("epilog", job))
            if name == "jobmon":
                jobs_seen.append(job)
            time.sleep(0.5)       # each Prolog alone: the last sampler has settled
    for _ in range(args.rounds):
        for name, script, epilog in prologs:
            jobs = sd.jobs(args.at_once)
            out["at_once"][name].append(sd.at_once(script, jobs))
            if epilog and name != "jobmon":
                sd.at_once(epilog, jobs, kind="epilog")
            if name == "jobmon":
                jobs_seen += jobs
                out["samplers"] += len(jobs)
                out["samplers_alive"] += sum(sampler_alive(site, node, j) for j in jobs)
                sd.at_once(site.epilog, jobs, kind="epilog")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        have = site.records()
        out["records"] = sum(1 for j in jobs_seen if any(r.summary for r in have.get(str(j), [])))
        if out["records"] == len(jobs_seen):
            break
        time.sleep(1)
    out["jobs"] = len(jobs_seen)
    return out


def on_cluster(site, args, bare):
    from slurm import Cluster
    log = os.path.join(site.dir, "prolog-times")
    timed = []
    for name, script in (("jobmon", site.prolog), ("bare", bare)):
        path = os.path.join(site.dir, f"timed-{name}")
        with open(path, "w") as f:
            f.write(TIMED.format(prolog=script, name=name, log=log))
        os.chmod(path, 0o755)
        timed.append(path)
    c = Cluster(prologs=timed, epilogs=[site.epilog]).start()
    try:
        c.submit("true\n")        # warm: the first job of a cluster pays slurmd's own set-up
        time.sleep(3)
        open(log, "w").close()
        for _ in range(args.jobs):   # one at a time: each Prolog alone
            c.wait_done(c.submit("/bin/sleep 0.2\n"))
        times = {"jobmon": [], "bare": []}
        with open(log) as f:
            for line in f:
                _job, name, ns = line.split()
                times[name].append(int(ns) / 1e9)
        cost = [sampler_cost(site, c, args.long, iv) for iv in (10.0, 1.0)] if args.long else []
    finally:
        c.stop()
    return {"prolog": times, "cost": cost}


def sampler_cost(site, c, seconds, interval):
    """One job of `seconds` (mostly asleep) sampled every `interval` s: the sampler's
    peak RSS and its CPU share over the job."""
    from slurm_site import samplers
    site.write_config(interval=interval)
    jid = c.submit(f"/usr/bin/python3 -c 'x = bytearray(50 << 20)\nimport time\n"
                   f"time.sleep({seconds})'\n")
    c.wait_running(jid)
    time.sleep(max(seconds - 2, 1))
    rss = max((hwm_kib(p) or 0) for p, _ in samplers(c)) if samplers(c) else None
    c.wait_done(jid, timeout=seconds + 120)
    [rec] = site.wait_record(jid)
    s = rec.summary
    return {"interval": interval, "job_seconds": s["wall_seconds"], "samples": s["samples"],
            "sampler_cpu_seconds": s["monitor_cpu_seconds"],
            "sampler_cpu_share": s["monitor_cpu_seconds"] / s["wall_seconds"],
            "sampler_rss_kib": rss}


def hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None


def ms(values):
    v = sorted(values)
    p90 = v[max(0, -(-9 * len(v) // 10) - 1)]      # nearest rank
    return (f"median {1000 * statistics.median(v):.1f} ms, p90 {1000 * p90:.1f}"
            f", max {1000 * v[-1]:.1f} ({len(v)} Prologs)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hogs", type=int, default=0, help="busy loops to add to the load")
    ap.add_argument("--load", type=float, help="add busy loops to bring the run queue to this")
    ap.add_argument("--single", type=int, default=30)
    ap.add_argument("--at-once", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cluster", action="store_true")
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--long", type=float, default=0.0, help="seconds of the cost jobs")
    ap.add_argument("--venv", help="the virtualenv jobmon is installed in (a regular pip "
                    "install; default: the suite's)")
    ap.add_argument("--compare-venv", help="also time the Prolog another build's "
                    "jobmon-slurm-hooks installs (e.g. an older one), in the same rounds")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    if a.load is not None:
        a.hogs, before = load.hogs_to_reach(a.load)
        print(f"run queue {before:.2f} before; {a.hogs} busy loop(s) added for about {a.load:g}")
    site = JobmonSite(None)
    if a.venv:
        python = os.path.join(a.venv, "bin", "python3")
        hooks = subprocess.run([python, "-c", "import jobmon.plugins.slurm.hooks as h; "
                                "print(h.__file__)"], capture_output=True, text=True,
                               check=True).stdout.strip()
        site.install(python=python, hooks_path=hooks)
    bare = os.path.join(site.dir, "bare-prolog")
    with open(bare, "w") as f:
        f.write(BARE)
    os.chmod(bare, 0o755)
    prologs = [("jobmon", site.prolog, site.epilog), ("bare", bare, None)]
    if a.compare_venv:   # another build's wrappers, as its own installer writes them
        d = os.path.join(site.dir, "compare")
        os.makedirs(d)
        subprocess.run([os.path.join(a.compare_venv, "bin", "jobmon-slurm-hooks"), "install",
                        d, f"--config={site.config}", f"--run-dir={site.run_dir}"],
                       check=True, capture_output=True)
        prologs.append(("compared", os.path.join(d, "jobmon-prolog"),
                        os.path.join(d, "jobmon-epilog")))
    res = {}
    try:
        with load.hogs(a.hogs), load.Load() as measured:
            res["slurmd_way"] = slurmd_way(site, a, prologs)
            if a.cluster:
                res["cluster"] = on_cluster(site, a, bare)
    finally:
        site.close()
    res["load"] = measured.text()
    sw = res["slurmd_way"]
    print(f"{a.hogs} busy loop(s) added; load: {res['load']}\n")
    for name in sw["single"]:
        print(f"| one at a time, {name} Prolog | {ms(sw['single'][name])} |")
    for name in sw["at_once"]:
        rounds = sw["at_once"][name]
        print(f"| {a.at_once} at once, {name} Prolog | {ms(sum(rounds, []))}; slowest of each "
              f"round {', '.join(f'{1000 * max(r):.0f}' for r in rounds)} ms |")
    print(f"\nsamplers alive after slurmd's kill of their Prologs' process groups: "
          f"{sw['samplers_alive']} of {sw['samplers']}; records: {sw['records']} of {sw['jobs']}")
    if a.cluster:
        for name, v in res["cluster"]["prolog"].items():
            print(f"| real cluster, one job at a time, {name} Prolog (date before/after) | "
                  f"{ms(v)} |")
        for r in res["cluster"]["cost"]:
            print(f"| sampler, {r['job_seconds']:.0f} s job, interval {r['interval']:g} s | "
                  f"RSS {r['sampler_rss_kib'] / 1024:.1f} MiB, CPU {r['sampler_cpu_seconds']:.3f}"
                  f" s = {100 * r['sampler_cpu_share']:.2f} % of a core ({r['samples']} "
                  f"samples) |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
