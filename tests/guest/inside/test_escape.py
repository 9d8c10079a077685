"""Where the accuracy bench's escape workload (an escaped daemon that outlives its parent)
reads over its truth in this guest: +1.03 to +1.78 s, against exact on the v1 host and in
procfs mode. Either jobmon counts CPU that is not the job's -- its own, sampling while it
waits for the daemon -- or the truth misses some of the job's: each process's own
getrusage, taken before it exits, leaves out its exit and the interpreter's shutdown,
which emulation (TCG) makes far slower.

The kernel settles it. jobmon reaps the job's processes (the top one and, as the
subreaper, the escaped daemon), so its children's CPU (cutime + cstime in /proc, read
while it is a zombie) is every CPU second of the job's processes, exits included, plus
the exec trampoline's, and none of jobmon's own. jobmon's figure is the job's cgroup
less the trampoline: it must equal what it reaped less the trampoline, and lie above the
self-reported truth by what the exits cost.
"""
import json
import os
import subprocess

from helpers import JOBMON, PYTHON, shared_tmpdir
from jobrun import JOBS

TICK = 1.0 / os.sysconf("SC_CLK_TCK")


def test_escape_excess_is_the_exits_the_truth_cannot_see(raw_guest):
    d = shared_tmpdir("jobmon-escape-")
    out, summary = os.path.join(d, "truth"), os.path.join(d, "summary.json")
    p = subprocess.Popen([JOBMON, "run", "--interval=1", f"--summary={summary}",
                          f"--store={os.path.join(d, 'store.db')}", "--",
                          PYTHON, os.path.join(JOBS, "escape.py"), out, "0.5", "2"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)   # a zombie: its final counters
    with open(f"/proc/{p.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    own_cpu = (int(fields[11]) + int(fields[12])) * TICK      # utime, stime
    reaped = (int(fields[13]) + int(fields[14])) * TICK       # cutime, cstime
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    with open(summary) as f:
        s = json.load(f)
    with open(out) as f, open(out + ".daemon") as g:
        truth = json.load(f)["cpu"] + json.load(g)["cpu"]
    got = s["cpu_user_seconds"] + s["cpu_system_seconds"]
    print(f"jobmon {got:.3f} s, self-reported truth {truth:.3f} s ({got - truth:+.3f}), "
          f"reaped by jobmon {reaped:.2f} s ({got - reaped:+.3f}), jobmon's own CPU "
          f"{own_cpu:.2f} s (sampler {s['monitor_cpu_seconds']:.3f} s)")
    assert s["method"] == "cgroup-v2" and s["leftover_procs"] >= 1
    # never more than the job's processes used (jobmon's own CPU is not in it), and no
    # less than that less the trampoline (30-70 ms here) and the clock ticks of /proc
    assert reaped - 0.15 <= got <= reaped + 2 * TICK, (got, reaped)
    # the excess over the self-reported truth is what the job's processes used after
    # reporting: it is in what jobmon reaped
    assert reaped - truth >= 0.8 * (got - truth), (got, truth, reaped)
