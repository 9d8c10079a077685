#!/usr/bin/env python3
"""jobmon-condor-wrapper under the condor_starter's contract: start-up, memory, accuracy.

As root; the wrapper runs as an unprivileged user (default jobmon-test), in a scratch
directory with the starter's .job.ad/.machine.ad and environment (tests/fixtures/htcondor),
writing to a spool directory as a site configured for InfluxDB would.

  start-up  time from invoking the wrapper to the job running (`date +%s%N` exec'd as the
            job, against the clock read just before), median and p90 of --reps runs; the
            same through setpriv alone is the baseline, and an opted-out job (exec) too
  memory    the wrapper's peak RSS: ru_maxrss of the wrapper process (setpriv execs it)
            running a small job (`sleep 1`), and its VmHWM polled while it runs
  --check   ../shared/bench/check.py's workloads through the wrapper: a `jobmon` shim
            turns its `jobmon run --interval S --summary F -- CMD` into a starter-like
            start of the wrapper (+JobMonitorInterval = S, +JobMonitorSummary = F)

    sudo .venv/bin/python benchmarks/condor_wrapper.py [--reps 30] [--wrapper PATH]
        [--check [--bench-dir ../shared/bench]]
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

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADS = os.path.join(REPO, "tests", "fixtures", "htcondor", "real-pool-25.14")
SETPRIV = shutil.which("setpriv") or "/usr/bin/setpriv"
# the starter's own variables (the rest of a job's environment is the job's)
STARTER_ENV = {"BATCH_SYSTEM": "HTCondor", "OMP_NUM_THREADS": "1", "_CONDOR_SLOT": "slot1_1",
               "_CHIRP_DELAYED_UPDATE_PREFIX": "Chirp*", "_CONDOR_BIN": "/usr/bin"}


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
        env = dict(STARTER_ENV, HOME=self.user.pw_dir, PWD=scratch, TMPDIR="/tmp",
                   CONDOR_STARTER_PID=str(os.getpid()), JOBMON_CONFIG=self.config,
                   _CONDOR_SCRATCH_DIR=scratch, _CONDOR_JOB_IWD=scratch,
                   _CONDOR_JOB_AD=os.path.join(scratch, ".job.ad"),
                   _CONDOR_MACHINE_AD=os.path.join(scratch, ".machine.ad"),
                   _CONDOR_WRAPPER_ERROR_FILE=os.path.join(scratch, ".job_wrapper_failure"))
        return scratch, env

    def argv(self, argv):
        u = self.user.pw_name
        return [SETPRIV, f"--reuid={u}", f"--regid={u}", "--clear-groups", "--"] + argv


def startup(slot, wrapper, reps):
    date = shutil.which("date")
    rows = []
    for name, argv, attrs in (("job alone (setpriv + date)", [date, "+%s%N"], {}),
                              ("through the wrapper", [wrapper, date, "+%s%N"], {}),
                              ("through the wrapper, +JobMonitor = false",
                               [wrapper, date, "+%s%N"], {"JobMonitor": "false"})):
        ms = []
        for i in range(reps + 1):
            scratch, env = slot.prepare(**attrs)
            t0 = time.time_ns()
            out = subprocess.run(slot.argv(argv), cwd=scratch, env=env, capture_output=True,
                                 check=True).stdout
            if i:   # the first run warms the page cache
                ms.append((int(out) - t0) / 1e6)
        ms.sort()
        rows.append((name, statistics.median(ms), ms[int(0.9 * (len(ms) - 1))]))
    return rows


def cpu_at_job_start(slot, wrapper, jobmon, reps):
    """On-CPU time (schedstat, ns exact) of the wrapper, and of `jobmon run`, from exec to
    the moment the job (a shell) reads it: the start-up's cost whatever the machine's load,
    plus what the wrapper did meanwhile."""
    job = ["/bin/sh", "-c", "cut -d' ' -f1 /proc/$PPID/schedstat"]
    rows = []
    for name, argv in (("through the wrapper", [wrapper] + job),
                       ("jobmon run --store none (as the same user)",
                        [jobmon, "run", "--store", "none", "--"] + job)):
        ms = []
        for i in range(reps + 1):
            scratch, env = slot.prepare()
            out = subprocess.run(slot.argv(argv), cwd=scratch, env=env, capture_output=True,
                                 check=True).stdout
            if i:
                ms.append(int(out) / 1e6)
        ms.sort()
        rows.append((name, statistics.median(ms), ms[int(0.9 * (len(ms) - 1))]))
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--user", default="jobmon-test")
    ap.add_argument("--wrapper", default=shutil.which("jobmon-condor-wrapper", path=os.path.dirname(
        sys.executable)) or "jobmon-condor-wrapper")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--check-reps", type=int, default=1)
    ap.add_argument("--bench-dir", default=os.path.join(REPO, "..", "shared", "bench"))
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="jobmon-condor-bench-")
    os.chmod(base, 0o755)
    slot = Slot(a.user, base, site="[condor]\ninterval = 1.0\nmin_interval = 0.1\n")
    load = open("/proc/loadavg").read().split()[:3]
    print(f"wrapper {a.wrapper}, as {a.user}, {a.reps} runs each, load {' '.join(load)}\n")
    print("| invocation | median ms to job start | p90 ms |")
    print("|---|---|---|")
    for name, med, p90 in startup(slot, a.wrapper, a.reps):
        print(f"| {name} | {med:.1f} | {p90:.1f} |")
    print("\n| on-CPU time when the job runs | median ms | p90 ms |")
    print("|---|---|---|")
    jobmon = os.path.join(os.path.dirname(a.wrapper), "jobmon")
    for name, med, p90 in cpu_at_job_start(slot, a.wrapper, jobmon, a.reps):
        print(f"| {name} | {med:.1f} | {p90:.1f} |")
    maxrss, polled = memory(slot, a.wrapper)
    print(f"\nwrapper peak RSS: ru_maxrss {maxrss:.1f} MiB, VmHWM polled {polled:.1f} MiB")
    if a.check:
        print("\n" + check(slot, a.wrapper, a.bench_dir, a.check_reps))
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
