"""What `jobmon reconcile` costs per 1,000 ended runs, and its load on the scheduler's
accounting (calls per pass, so per minute at a given period).

    .venv/bin/python benchmarks/reconcile_cost.py [--runs 1000] [--cut 50] [--reps 3]
                                                  [--store both|local|influxdb]

The runs go in through the real writers (the embedded store's sink; for InfluxDB the
spool writer and the real shipper, to a real InfluxDB 1.6.7 from tests/servers.py), each
with 30 samples; `--cut` of them have no end-of-job record (their sampler killed with the
job), so they are folded from their samples. Then one pass of the real reconciler
(jobmon.report.reconcile.plan and the command's writes) settles them against:

  slurm     `sacct`: a stand-in on PATH that answers `sacct --json -D -j ID,ID,...` with
            the captured 22.05 record of tests/fixtures/slurm/sacct/cancelled.json, once
            per id asked, and counts its calls (slurmdbd's own time is not in it);
  htcondor  a history file of as many records (the captured 4711.1 of
            tests/fixtures/htcondor/history, renumbered), read by the real source
            (classad2).

Reported per pass: wall time, CPU of the reconciler (its process) and of the accounting
commands it ran (children), accounting calls, records written -- each scaled to 1,000 runs.
CPU seconds do not depend on the machine's load; wall seconds do (the load is printed).
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))

from jobmon import config  # noqa: E402
from jobmon.metrics import SAMPLE_NAMES  # noqa: E402
from jobmon.report import reconcile as rc  # noqa: E402
from jobmon.stores.local import LocalStore  # noqa: E402

FIXTURES = os.path.join(REPO, "tests", "fixtures")
SACCT = r"""#!PYTHON
import json, sys
with open(CALLS, "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")
if "--json" not in sys.argv:
    sys.exit("only --json here")
template = json.load(open(TEMPLATE))
ids = sys.argv[sys.argv.index("-j") + 1].split(",")
jobs = []
for i in ids:
    j = json.loads(json.dumps(template["jobs"][0]))
    j["job_id"] = int(i)
    for s in j.get("steps", []):
        s["step"]["job_id"] = int(i)
    jobs.append(j)
print(json.dumps(dict(template, jobs=jobs)))
"""


def runs(n, cut, start, scheduler):
    """(job, samples, summary or None) of n ended runs, the last `cut` without a summary."""
    for j in range(n):
        job_id = f"{500000 + j}" if scheduler == "slurm" else f"{800000 + j}.0"
        t0 = start + j
        tags = {"request_cpus": "1", "request_memory": "2GiB"}
        job = {"job": job_id, "host": "wn1", "user": "bench", "method": "cgroup-v2",
               "start_time": t0, "tags": tags, "command": ["./fit"], "interval": 10.0,
               "scheduler": scheduler, "run": 1}
        smp = []
        for k in range(30):
            s = {name: 1000 * k + 17 for name in SAMPLE_NAMES}
            s.update(time=int((t0 + k * 10) * 1e9), elapsed_seconds=k * 10.0,
                     method="cgroup-v2", cpu_user_seconds=k * 9.0, cpu_system_seconds=0.0)
            smp.append(s)
        summary = None if j >= n - cut else {
            "job": job_id, "host": "wn1", "method": "cgroup-v2", "start_time": t0,
            "end_time": t0 + 290, "exit_code": 0, "signal": None, "wall_seconds": 290.0,
            "cpu_user_seconds": 261.0, "cpu_system_seconds": 0.0, "rss_peak_bytes": 1 << 30,
            "samples": 30, "interval_seconds": 10.0, "reconciled": 0, "cut_short": 0,
            "outcome": "goodput", "outcome_reason": "completed (exit code 0)", "tags": tags}
        yield job, smp, summary


def write_runs(sink_for, killed, n, cut, start, scheduler):
    """The runs through a sink each, as jobs write them; killed(sink): a sampler killed
    with its job, no end-of-job record."""
    for job, smp, summary in runs(n, cut, start, scheduler):
        sink = sink_for()
        sink.open(job)
        for s in smp:
            sink.write(s)
        if summary is not None:
            sink.close(summary)
        else:
            killed(sink)


def history_file(path, n):
    """n history records of jobs 800000.0 ... (the captured removed job, renumbered)."""
    from jobmon.plugins.condor.accounting.condor_history import split_records
    with open(os.path.join(FIXTURES, "htcondor", "history")) as f:
        [(banner, text)] = [(b, t) for b, t in split_records(f) if b.get("ProcId") == "1"]
    with open(path, "w") as f:
        for j in range(n):
            c = 800000 + j
            body = text.replace("ClusterId = 4711", f"ClusterId = {c}").replace(
                "ProcId = 1", "ProcId = 0").replace("4711.1", f"{c}.0")
            f.write(body + f"*** Offset = {j} ClusterId = {c} ProcId = 0 Owner = \"alice\" "
                    "CompletionDate = -1 CurrentTime = 1760001802\n")


def accounting(tmp, scheduler, n):
    """(config text for the source, the file its calls are counted in)."""
    calls = os.path.join(tmp, "calls")
    open(calls, "w").close()
    if scheduler == "slurm":
        bindir = os.path.join(tmp, "bin")
        os.makedirs(bindir)
        path = os.path.join(bindir, "sacct")
        with open(path, "w") as f:
            f.write(SACCT.replace("PYTHON", sys.executable).replace("CALLS", repr(calls))
                    .replace("TEMPLATE", repr(os.path.join(FIXTURES, "slurm", "sacct",
                                                           "cancelled.json"))))
        os.chmod(path, 0o755)
        return f'[slurm]\nsacct = "{path}"\naccounting = "sacct"\n', calls
    history = os.path.join(tmp, "history")
    history_file(history, n)
    return f'[condor]\nhistory = "{history}"\n', calls


def one_pass(store_kind, scheduler, n, cut, influx=None):
    tmp = tempfile.mkdtemp(prefix="jobmon-reconcile-bench-")
    try:
        source_cfg, calls = accounting(tmp, scheduler, n)
        cfg_path = os.path.join(tmp, "jobmon.toml")
        start = time.time() - 3600
        if store_kind == "local":
            with open(cfg_path, "w") as f:
                f.write(source_cfg)
            path = os.path.join(tmp, "store.db")
            write_runs(lambda: LocalStore(path), lambda sink: sink.db.close(), n, cut, start,
                       scheduler)
            store = LocalStore(path)
        else:
            store = influx_fill(influx, tmp, cfg_path, source_cfg, n, cut, start, scheduler)
        os.environ["JOBMON_CONFIG"] = cfg_path
        cfg = config.load()
        ru0, ch0 = resource.getrusage(resource.RUSAGE_SELF), \
            resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        records = store.unreconciled(start - 1, "wn1") if store_kind != "local" else \
            store.unreconciled(start - 1)
        plan = rc.plan(store, records, cfg, now=start + 3600 + 600)
        if store_kind == "local":
            from jobmon.cli.reading import write_local
            failed = write_local(store, plan.writes)
        else:
            from jobmon.cli.reconcile import _write_influx
            failed = _write_influx(cfg, plan.writes)
        wall = time.perf_counter() - t0
        ru1, ch1 = resource.getrusage(resource.RUSAGE_SELF), \
            resource.getrusage(resource.RUSAGE_CHILDREN)
        assert failed is None and not plan.errors, (failed, plan.errors)
        assert plan.counts["settled"] == n and plan.counts["folded"] == cut, plan.counts
        with open(calls) as f:
            n_calls = sum(1 for _ in f)
        t1 = time.perf_counter()   # the next pass, every run settled: what a timer costs
        again = store.unreconciled(start - 1, "wn1") if store_kind != "local" else \
            store.unreconciled(start - 1)
        assert rc.plan(store, again, cfg).writes == []
        idle = time.perf_counter() - t1
        return {"idle_wall": idle, "wall": wall, "cpu": ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime,
                "child_cpu": ch1.ru_utime + ch1.ru_stime - ch0.ru_utime - ch0.ru_stime,
                "calls": n_calls if scheduler == "slurm" else len(cfg["condor"]["history"]
                                                                   .split(":")),
                "written": len(plan.writes)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def influx_fill(influx, tmp, cfg_path, source_cfg, n, cut, start, scheduler):
    """The runs through the spool writer and the real shipper into a fresh database."""
    from jobmon.sinks.spool import SpoolSink
    from jobmon.stores.influx import InfluxStore
    from jobmon.ship.spooldir import prepare_spool
    db = f"bench_reconcile_{scheduler}_{int(time.time() * 1000)}"
    influx.create_db(db)
    spool, state = os.path.join(tmp, "spool"), os.path.join(tmp, "state")
    prepare_spool(spool)
    with open(cfg_path, "w") as f:
        f.write(f'[store]\nkind = "influxdb"\n[influxdb]\nurl = "{influx.url}"\n'
                f'database = "{db}"\n[spool]\ndir = "{spool}"\n[shipper]\n'
                f'state_dir = "{state}"\nhost = "wn1"\n{source_cfg}')

    def killed(sink):   # the lock goes, no end point
        os.close(sink.fd)
        sink._release_reserve(keep=False)
    write_runs(lambda: SpoolSink(spool), killed, n, cut, start, scheduler)
    jobmon = os.path.join(os.path.dirname(sys.executable), "jobmon")
    r = subprocess.run([jobmon, "ship"], env=dict(os.environ, JOBMON_CONFIG=cfg_path),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return InfluxStore(influx.url, db)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--cut", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--store", default="both", choices=("both", "local", "influxdb"))
    a = ap.parse_args()
    influx = None
    kinds = ("local", "influxdb") if a.store == "both" else (a.store,)
    if "influxdb" in kinds:
        from servers import Influx
        influx = Influx().start()
    try:
        print(f"load {open('/proc/loadavg').read().split()[:3]}, {a.runs} ended runs a pass, "
              f"{a.cut} of them cut short")
        print(f"{'store':9} {'scheduler':9} {'wall s':>8} {'CPU s':>7} {'acct CPU s':>10} "
              f"{'calls':>5} {'written':>7} {'next pass s':>11}   (medians of {a.reps}, "
              "per 1,000 runs)")
        for kind in kinds:
            for scheduler in ("slurm", "htcondor"):
                got = [one_pass(kind, scheduler, a.runs, a.cut, influx) for _ in range(a.reps)]
                med = {k: sorted(g[k] for g in got)[len(got) // 2] for k in got[0]}
                per = 1000.0 / a.runs
                print(f"{kind:9} {scheduler:9} {med['wall'] * per:8.2f} {med['cpu'] * per:7.2f} "
                      f"{abs(med['child_cpu']) * per:10.2f} {med['calls']:5d} "
                      f"{med['written']:7d} {med['idle_wall']:11.3f}")
                print(json.dumps(dict(med, store=kind, scheduler=scheduler, runs=a.runs)),
                      file=sys.stderr)
    finally:
        if influx is not None:
            influx.close()


if __name__ == "__main__":
    main()
