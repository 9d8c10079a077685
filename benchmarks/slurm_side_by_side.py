"""jobmon beside Slurm's own acct_gather_profile/influxdb (Debian's
slurm-wlm-influxdb-plugin), on the same jobs of one real cluster, into the same InfluxDB
(databases `slurm_profile` and `jobmon`): what each captured -- samples, tags, totals
against the jobs' own truth -- with the database up, down at the job's end, and frozen.

    sudo .venv/bin/python benchmarks/slurm_side_by_side.py [--json FILE]

Truth: each job prints the CPU it used (getrusage of itself). Slurm's figure is the sum
of its CPUTime points (CPU seconds per interval, whole-second timestamps); jobmon's the
end-of-job record, shipped by `jobmon ship` once the database answers. "Down": influxd
stopped while the job runs, started again after it ended. "Frozen": influxd stopped with
SIGSTOP (connections accepted, never answered) for FREEZE seconds around the job's end.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from servers import Influx  # noqa: E402
from slurm import Cluster  # noqa: E402
from slurm_site import JOBMON, JobmonSite  # noqa: E402

FREEZE = 20
BURN = """#!/usr/bin/python3
import json, resource, time
t = time.process_time()
while time.process_time() - t < {cpu}: pass
x = bytearray({mib} << 20)
time.sleep({hold})
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({{"cpu": r.ru_utime + r.ru_stime}}), flush=True)
"""


def slurm_side(influx, jid):
    rows = influx.rows(f'SELECT * FROM "CPUTime" WHERE "job" = \'{jid}\'', "slurm_profile")
    rss = influx.rows(f'SELECT max("value") FROM "RSS" WHERE "job" = \'{jid}\'', "slurm_profile")
    tags = sorted(k for k in (rows[0] if rows else {}) if k not in ("time", "value"))
    return {"points": len(rows), "cpu": round(sum(r["value"] for r in rows), 3),
            "rss_max_kib": rss[0]["max"] if rss else None, "tags": tags}


def jobmon_side(influx, jid):
    s = influx.rows(f'SELECT count("cpu_user_seconds") FROM "jobmon_sample" '
                    f'WHERE "job" = \'{jid}\'', "jobmon")
    j = influx.rows(f'SELECT * FROM "jobmon_job" WHERE "job" = \'{jid}\'', "jobmon")
    if not j:
        return {"points": s[0]["count"] if s else 0, "cpu": None, "tags": []}
    row = j[-1]
    tags = sorted(k for k in ("job", "scheduler", "run", "user", "host", "cluster", "account",
                              "partition") if row.get(k))
    return {"points": s[0]["count"] if s else 0,
            "cpu": round((row.get("cpu_user_seconds") or 0) + (row.get("cpu_system_seconds") or 0), 3),
            "peak_mib": round((row.get("mem_peak_bytes") or 0) / 2**20, 1), "tags": tags}


def run(c, script, during=None):
    """Submit, run `during(jid)` while it runs; returns (jid, truth, seconds from the
    job's own end to its COMPLETED state)."""
    jid = c.submit(script)
    c.wait_running(jid)
    if during:
        during(jid)
    out = os.path.join(c.jobs_dir, f"slurm-{jid}.out")

    def truth():   # the job's own line (Slurm may write its errors there too)
        try:
            with open(out) as f:
                lines = [l for l in f.read().splitlines() if l.startswith('{"cpu"')]
        except OSError:
            return None
        return json.loads(lines[-1])["cpu"] if lines else None
    while truth() is None:
        time.sleep(0.05)
    ended = time.monotonic()
    c.wait_done(jid, timeout=300)
    held = time.monotonic() - ended
    return jid, truth(), held


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    a = ap.parse_args()
    influx = Influx().start()
    influx.create_db("slurm_profile")
    site = JobmonSite(influx, db="jobmon")
    influx.create_db("jobmon")
    c = Cluster(prologs=[site.prolog], epilogs=[site.epilog], influx_url=influx.url,
                influx_db="slurm_profile")
    results = []
    try:
        c.start()
        cases = [("0.5 s CPU, db up", BURN.format(cpu=0.5, mib=20, hold=0.2), None),
                 ("3 s CPU + 100 MiB, db up", BURN.format(cpu=3, mib=100, hold=2), None)]

        def down(jid):
            time.sleep(1)
            influx.stop()

        def frozen(jid):
            time.sleep(1)
            os.kill(influx.proc.pid, signal.SIGSTOP)
        cases += [("3 s CPU, db down at job end", BURN.format(cpu=3, mib=20, hold=0.5), down),
                  (f"3 s CPU, db frozen {FREEZE} s at job end",
                   BURN.format(cpu=3, mib=20, hold=0.5), frozen)]
        for name, script, during in cases:
            if during is frozen:
                import threading
                threading.Timer(FREEZE + 1, lambda: os.kill(influx.proc.pid, signal.SIGCONT)).start()
            jid, truth, held = run(c, script, during)
            if during is down:
                time.sleep(1)
                influx.start()
            site.wait_record(jid)
            r = subprocess.run([JOBMON, "ship"], env=site.env(), capture_output=True,
                               text=True, timeout=120)
            if r.returncode:
                print(f"jobmon ship: {r.returncode} {r.stderr[-500:]}", flush=True)
            results.append({"case": name, "job": jid, "truth_cpu": round(truth, 3),
                            "end_held_s": round(held, 1), "slurm": slurm_side(influx, jid),
                            "jobmon": jobmon_side(influx, jid)})
            print(json.dumps(results[-1]), flush=True)
    finally:
        c.stop()
        influx.close()
        site.close()
    print("\n| case | truth CPU s | Slurm plugin: points, CPU s, tags | jobmon: samples, CPU s, "
          "tags | job end held |")
    print("|---|---|---|---|---|")
    for r in results:
        s, j = r["slurm"], r["jobmon"]
        print(f"| {r['case']} | {r['truth_cpu']} | {s['points']}, {s['cpu']}, "
              f"{' '.join(s['tags']) or '-'} | {j['points']}, {j['cpu']}, "
              f"{' '.join(j['tags']) or '-'} | {r['end_held_s']} s |")
    print(f"load average {os.getloadavg()}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
