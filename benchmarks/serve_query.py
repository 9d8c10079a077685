"""`jobmon query JOBID` of one job among 10,000 through the read service (target <= 0.5 s
median), beside the same query read directly with the credential, in one run (as root).

    .venv/bin/python benchmarks/serve_query.py [--jobs 10000] [--samples 100] [--reps 15]

The jobs of benchmarks/report_scale.py (10,000 jobs x 100 samples, 50 users) go through
the spool writer and the real shipper into InfluxDB 1.6.7 (tests/servers.py); the jobs of
one of those users are jobmon-test's, who asks. Three ways, interleaved so that they share
the machine's load: direct (the reader holds the credential), through `jobmon serve` on
its Unix socket (peer credentials), and over TCP with a MUNGE credential (a munged of our
own). Each is the whole command a user types, timed as wall time and as the command's CPU
time (which load does not inflate); the answers must be the same report.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, HERE)

import report_scale  # noqa: E402
from helpers import as_user  # noqa: E402

CALLER = "jobmon-test"          # takes the place of user0 (arrays 1000 and 1050)


class Site:
    def __init__(self, path):
        self.config = path


def process_cpu(pid):
    """CPU seconds (user + system) the process used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def runs(a):
    """report_scale's jobs, user0's made the caller's."""
    for job, smp, summary in report_scale.jobs(a.jobs, a.samples, time.time() - 7 * 86400):
        if job["user"] == "user0":
            job["user"] = CALLER
        yield job, smp, summary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args()
    from serve_site import Munged, Service
    from servers import Influx
    d = tempfile.mkdtemp(prefix="jobmon-bench-serve-")
    os.chmod(d, 0o755)
    srv, munged, service = Influx().start(), None, None
    try:
        cfgfile = report_scale.spool_and_ship(srv, d, runs(a))
        munged = Munged()
        service = Service(Site(cfgfile), munged).start()
        ways = {"direct": cfgfile, "service (socket)": service.client_config(),
                "service (TCP, MUNGE)": service.client_config(service.address)}
        ids = [f"1000_{k}" for k in (0, 17, 42, 77, 99)] + [f"1050_{k}" for k in (3, 64)]
        # per query: wall time, and the CPU time of every process that served it: the
        # command, the service, munged, influxd (CPU time is what load does not inflate)
        daemons = {"service": service.proc.pid, "munged": munged.proc.pid,
                   "influxd": srv.proc.pid}
        times, cpu, answers = {w: [] for w in ways}, {w: [] for w in ways}, {}
        for rep in range(a.reps):
            job = ids[rep % len(ids)]
            for way, cfg in ways.items():
                env = dict(os.environ, JOBMON_CONFIG=cfg)
                env.pop("JOBMON_STORE", None)
                argv = as_user([report_scale.JOBMON, "query", "--json", "--no-scheduler", job],
                               CALLER)
                before = {n: process_cpu(pid) for n, pid in daemons.items()}
                times[way] += report_scale.timed(argv, env, 1, lambda out: answers.setdefault(
                    (job, way), out))
                used = {n: process_cpu(pid) - before[n] for n, pid in daemons.items()}
                used["command"] = report_scale.CPU.pop(argv[1])[0]
                cpu[way].append(used)
            assert len({answers[(job, w)] for w in ways}) == 1, f"{job}: the answers differ"
        load = os.getloadavg()
        for way in ways:
            t = sorted(times[way])
            parts = {n: sum(c[n] for c in cpu[way]) / a.reps for n in cpu[way][0]}
            total = sorted(sum(c.values()) for c in cpu[way])
            print(f"{way:22s} jobmon query JOBID: wall median {t[len(t) // 2]:.3f} s (min "
                  f"{t[0]:.3f}, max {t[-1]:.3f}); CPU of all its processes median "
                  f"{total[len(total) // 2]:.3f} s (mean: " + ", ".join(
                      f"{n} {v * 1000:.0f} ms" for n, v in parts.items()) + ")")
        print(f"{a.reps} queries each, interleaved; one job among {a.jobs} x {a.samples} "
              f"samples; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    finally:
        if service:
            service.close()
        if munged:
            munged.close()
        srv.close()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
