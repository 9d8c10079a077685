#!/usr/bin/env python3
"""jobmon-condor-wrapper under the condor_starter's contract: start-up, memory, accuracy.

As root; the wrapper runs as an unprivileged user (default jobmon-test), in a scratch
directory with the starter's .job.ad/.machine.ad and the environment a real 25.14 starter
gave its wrapper (tests/fixtures/htcondor/real-pool-25.14), writing to a spool directory
as a site configured for InfluxDB would. The wrapper is installed by the virtualenv's
`jobmon-condor-setup`, as docs/htcondor.md installs it.

  start-up  ms from the starter's fork to the job's first instruction (`date +%s%N`
            exec'd as the job prints the clock as it starts): each job started the way the
            starter's Create_Process starts it (its user, its scratch directory, stdio on
            files there, the job's environment), the job alone and through each wrapper
            interleaved in random order in every round, so all see the same load;
            --hogs N adds N busy loops (--load X: as many as bring the run queue to
            about X), and the run queue is sampled throughout. Then the wrapper's on-CPU
            time when the job runs (its schedstat, read by the job, a shell): the same
            cost whatever the load
  memory    the wrapper's peak RSS: ru_maxrss of the wrapper process running a small job
            (`sleep 1`), and its VmHWM polled while it runs
  --check   ../shared/bench/check.py's workloads through the wrapper: a `jobmon` shim
            turns its `jobmon run --interval S --summary F -- CMD` into a starter-like
            start of the wrapper (+JobMonitorInterval = S, +JobMonitorSummary = F)

    sudo .venv/bin/python benchmarks/condor_wrapper.py [--reps 30] [--venv VENV]
        [--hogs N | --load X] [--compare NAME=WRAPPER ...] [--startup-only] [--check]
"""
import argparse
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import load

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADS = os.path.join(REPO, "tests", "fixtures", "htcondor", "real-pool-25.14")
SETPRIV = shutil.which("setpriv") or "/usr/bin/setpriv"
CAPTURED_SCRATCH = "/var/lib/condor/execute/dir_11963/scratch"


def captured_env():
    """The environment a real starter gave its USER_JOB_WRAPPER (the job's had no PATH)."""
    with open(os.path.join(ADS, "wrapper-argv-env.txt")) as f:
        text = f.read().split("--- env\n", 1)[1]
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


class Slot:
    """A scratch directory per job, the ads, the environment, the site configuration."""

    def __init__(self, user, base, site=""):
        self.user = pwd.getpwnam(user)
        self.base = base
        self.spool = os.path.join(base, "spool")
        os.makedirs(self.spool, exist_ok=True)
        os.chmod(self.spool, 0o1777)
        self.config = os.path.join(base, "jobmon.toml")
        with open(self.config, "w") as f:
            f.write(f'[store]\nkind = "influxdb"\n[spool]\ndir = "{self.spool}"\n{site}')
        self.n = 0

    def prepare(self, **attrs):
        self.n += 1
        scratch = os.path.join(self.base, f"dir_{self.n}", "scratch")
        os.makedirs(scratch)
        with open(os.path.join(ADS, ".job.ad")) as f:
            ad = f.read()
        with open(os.path.join(scratch, ".job.ad"), "w") as f:
            f.write(ad + "".join(f"{k} = {v}\n" for k, v in attrs.items()))
        shutil.copy(os.path.join(ADS, ".machine.ad"), scratch)
        for d in (os.path.dirname(scratch), scratch):
            os.chown(d, self.user.pw_uid, self.user.pw_gid)
        env = {k: v.replace(CAPTURED_SCRATCH, scratch)
               .replace(os.path.dirname(CAPTURED_SCRATCH), os.path.dirname(scratch))
               for k, v in captured_env().items() if k != "_"}
        # as STARTER_JOB_ENVIRONMENT would give it (pip's console script needs it; the
        # wrapper jobmon-condor-setup wrote names the same file itself)
        env.update(CONDOR_STARTER_PID=str(os.getpid()), HOME=self.user.pw_dir,
                   JOBMON_CONFIG=self.config)
        return scratch, env

    def argv(self, argv):
        u = self.user.pw_name
        return [SETPRIV, f"--reuid={u}", f"--regid={u}", "--clear-groups", "--"] + argv


def start_as_starter(slot, argv, env, scratch):
    """What the starter's Create_Process does for a job through USER_JOB_WRAPPER: a child
    that becomes the job's user (no supplementary groups), enters the scratch directory,
    has stdin on /dev/null and stdout/stderr on files there, and execs argv with the
    job's environment. Returns the clock just before the fork and the Popen."""
    out = open(os.path.join(scratch, "_condor_stdout"), "wb")
    err = open(os.path.join(scratch, "_condor_stderr"), "wb")
    t0 = time.time_ns()
    p = subprocess.Popen(argv, cwd=scratch, env=env, stdin=subprocess.DEVNULL, stdout=out,
                         stderr=err, user=slot.user.pw_uid, group=slot.user.pw_gid,
                         extra_groups=[])
    out.close()
    err.close()
    return t0, p


# the job that reports: the clock as it starts, or its parent's (the wrapper's) CPU so far
WALL_JOB = [shutil.which("date") or "/bin/date", "+%s%N"]
CPU_JOB = ["/bin/sh", "-c", "read t rest < /proc/$PPID/schedstat; echo $t"]


def startup(slot, variants, reps, cpu=False):
    """For each variant (name, argv prefix, ad attributes), the median and p90 of: ms from
    the starter's fork to the job's first instruction, or (cpu) the wrapper's on-CPU ms
    when the job, a shell, reads it (exact, whatever the load; the shell's own start, which
    the wrapper may spend on its next steps, is in it). The variants are interleaved in
    random order in every round, so that all see the same load."""
    import random
    ms = {name: [] for name, _, _ in variants}
    order = list(variants)
    for i in range(reps + 1):
        random.shuffle(order)
        for name, prefix, attrs in order:
            scratch, env = slot.prepare(**attrs)
            t0, p = start_as_starter(slot, prefix + (CPU_JOB if cpu else WALL_JOB), env,
                                     scratch)
            if p.wait() != 0:
                raise RuntimeError(f"{name}: exit {p.returncode}: "
                                   f"{open(os.path.join(scratch, '_condor_stderr')).read()}")
            if i:   # the first round warms the page cache
                with open(os.path.join(scratch, "_condor_stdout")) as f:
                    out = int(f.read())
                ms[name].append(out / 1e6 if cpu else (out - t0) / 1e6)
    rows = []
    for name, _, _ in variants:
        v = sorted(ms[name])
        rows.append((name, statistics.median(v), v[int(0.9 * (len(v) - 1))]))
    return rows


def hwm(pid, stop, seen):
    while not stop.is_set():
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        seen[0] = max(seen[0], int(line.split()[1]))
        except OSError:
            pass
        stop.wait(0.01)


def memory(slot, wrapper, reps=5):
    maxrss, polled = [], []
    for _ in range(reps):
        scratch, env = slot.prepare()
        p = subprocess.Popen(slot.argv([wrapper, "/bin/sleep", "1"]), cwd=scratch, env=env)
        stop, seen = threading.Event(), [0]
        t = threading.Thread(target=hwm, args=(p.pid, stop, seen))
        t.start()
        _, status, ru = os.wait4(p.pid, 0)
        stop.set()
        t.join()
        p.returncode = os.waitstatus_to_exitcode(status)
        maxrss.append(ru.ru_maxrss / 1024)
        polled.append(seen[0] / 1024)
    return max(maxrss), max(polled)


SHIM = r"""#!/bin/sh
# `jobmon run --interval S --summary F -- CMD...` as a starter would start the wrapper
set -e
[ "$1" = run ] && shift
while [ "$1" != "--" ]; do
    case "$1" in
        --interval) interval=$2; shift 2 ;;
        --summary) summary=$2; shift 2 ;;
        *) shift ;;
    esac
done
shift
chown {user} "$PWD"; [ -d /tmp/bench-scratch ] && chmod 1777 /tmp/bench-scratch
scratch=$(mktemp -d {base}/job.XXXXXX); chown {user} "$scratch"
cp {ads}/.machine.ad "$scratch/"
{{ cat {ads}/.job.ad; echo "JobMonitorInterval = $interval"
   echo "JobMonitorSummary = \"$summary\""; }} > "$scratch/.job.ad"
exec {setpriv} --reuid={user} --regid={user} --clear-groups -- env -i HOME=/ \
    BATCH_SYSTEM=HTCondor JOBMON_CONFIG={config} PATH=/usr/bin:/bin \
    _CONDOR_JOB_AD="$scratch/.job.ad" _CONDOR_MACHINE_AD="$scratch/.machine.ad" \
    _CONDOR_SCRATCH_DIR="$scratch" _CONDOR_WRAPPER_ERROR_FILE="$scratch/.err" \
    {wrapper} "$@"
"""


def check(slot, wrapper, bench_dir, reps):
    shim = os.path.join(slot.base, "jobmon")
    with open(shim, "w") as f:
        f.write(SHIM.format(user=slot.user.pw_name, base=slot.base, ads=ADS, setpriv=SETPRIV,
                            config=slot.config, wrapper=wrapper))
    os.chmod(shim, 0o755)
    env = dict(os.environ, JOBMON=shim)
    return subprocess.run([sys.executable, os.path.join(bench_dir, "check.py"),
                           "--reps", str(reps)], env=env, capture_output=True, text=True).stdout


def install(venv, slot):
    """The wrapper as `jobmon-condor-setup` writes it, for this slot's site file."""
    bin_dir = os.path.join(slot.base, "bin")
    subprocess.run([os.path.join(venv, "bin", "jobmon-condor-setup"), f"--bin-dir={bin_dir}",
                    f"--condor-config-dir={os.path.join(slot.base, 'condor')}",
                    f"--config={slot.config}", f"--python={os.path.join(venv, 'bin', 'python3')}",
                    f"--check-user={slot.user.pw_name}"], check=True, capture_output=True)
    return os.path.join(bin_dir, "jobmon-condor-wrapper")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--user", default="jobmon-test")
    ap.add_argument("--venv", default=os.path.dirname(os.path.dirname(sys.executable)),
                    help="the virtualenv jobmon is installed in (a regular pip install)")
    ap.add_argument("--compare", action="append", default=[], metavar="NAME=WRAPPER",
                    help="another wrapper to time in the same run (e.g. an older build's)")
    ap.add_argument("--hogs", type=int, default=0, help="busy loops to add to the load")
    ap.add_argument("--load", type=float, help="add busy loops to bring the run queue to this")
    ap.add_argument("--startup-only", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--check-reps", type=int, default=1)
    ap.add_argument("--bench-dir", default=os.path.join(REPO, "..", "shared", "bench"))
    a = ap.parse_args()
    if a.load is not None:
        a.hogs, before = load.hogs_to_reach(a.load)
        print(f"run queue {before:.2f} before; {a.hogs} busy loop(s) added for about {a.load:g}")
    base = tempfile.mkdtemp(prefix="jobmon-condor-bench-")
    os.chmod(base, 0o755)
    slot = Slot(a.user, base, site="[condor]\ninterval = 1.0\nmin_interval = 0.1\n")
    wrapper = install(a.venv, slot)
    pip_script = os.path.join(a.venv, "bin", "jobmon-condor-wrapper")
    variants = [("job alone", [], {}),
                ("through the wrapper (jobmon-condor-setup)", [wrapper], {}),
                ("through pip's console script jobmon-condor-wrapper", [pip_script], {}),
                ("through the wrapper, +JobMonitor = false", [wrapper], {"JobMonitor": "false"})]
    variants += [(f"through {c.split('=', 1)[0]}", [c.split("=", 1)[1]], {}) for c in a.compare]
    print(f"wrapper {wrapper} (python {os.path.realpath(os.path.join(a.venv, 'bin', 'python3'))}),"
          f" as {a.user}, {a.reps} rounds, the variants in random order in each, "
          f"{a.hogs} busy loop(s) added\n")
    print("| started as the starter starts a job | median ms to the job's first instruction "
          "| p90 ms |")
    print("|---|---|---|")
    with load.hogs(a.hogs), load.Load() as measured:
        rows = startup(slot, variants, a.reps)
    for name, med, p90 in rows:
        print(f"| {name} | {med:.1f} | {p90:.1f} |")
    print(f"\nload: {measured.text()}")
    print("\n| the wrapper's on-CPU ms when the job runs | median | p90 |")
    print("|---|---|---|")
    with load.hogs(a.hogs), load.Load() as measured:
        # the wrapper's own CPU: not the job alone, nor an opted-out job (the wrapper
        # became it: its parent is the starter)
        rows = startup(slot, [v for v in variants[1:] if not v[2]], a.reps, cpu=True)
    for name, med, p90 in rows:
        print(f"| {name} | {med:.1f} | {p90:.1f} |")
    print(f"\nload: {measured.text()}")
    if a.startup_only:
        shutil.rmtree(base, ignore_errors=True)
        return
    maxrss, polled = memory(slot, wrapper)
    print(f"\nwrapper peak RSS: ru_maxrss {maxrss:.1f} MiB, VmHWM polled {polled:.1f} MiB")
    if a.check:
        print("\n" + check(slot, wrapper, a.bench_dir, a.check_reps))
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
