"""`jobmon query JOBID` through the read service while another user floods it: p50 and
p99 of the whole command a user types, quiet and under the flood, with the service's CPU
and memory (as root; loopback only; every hostile loop is bounded and stops by itself).

    .venv/bin/python benchmarks/serve_flood.py [--jobs 3000] [--samples 10] [--queries 40]
                                               [--seconds 90]

The jobs of benchmarks/report_scale.py go through the spool writer and the real shipper
into InfluxDB 1.6.7 (tests/servers.py); jobmon-test asks for its own, over the service's
Unix socket and over TCP with MUNGE (a munged of our own). The flood, all of it as
jobmon-test2:

  - 1,000 idle connections, kept open: 500 on the socket, 500 over TCP that never send a
    credential (whatever the service closes is opened again every 0.5 s);
  - 10 hostile clients: 2 that connect and close as fast as they can, 2 that send a first
    line a byte a second (up to 50 connections each), 2 that send 50,000 `[` and 600 KiB
    lines, 2 that ask for 100,000 records again and again, 2 that hold as many identified
    connections as the service lets them (20 asked).

Printed: the quiet and flooded p50/p99 of each way -- the whole command, and the service's
answer alone (connect, identify, read: what the command's start-up does not inflate) --,
the service's CPU (percent of a core)
and its largest and final resident memory, the flood's counts, and the load average.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, HERE)

import report_scale  # noqa: E402
from helpers import PYTHON, as_user  # noqa: E402

CALLER, HOSTILE = "jobmon-test", "jobmon-test2"

# one hostile client: KIND, the service's socket, its TCP address, seconds to run
HOSTILE_CLIENT = r"""
import json, socket, sys, time
kind, path, tcp, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
end, count = time.monotonic() + seconds, 0
host, port = tcp.rsplit(":", 1)

def unix(identify=True):
    s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(path)
    f = s.makefile("rwb"); f.readline()
    if identify:
        f.write(b"{}\n"); f.flush(); f.readline()
    return s, f

def alive(s):
    s.setblocking(False)
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        s.setblocking(True)

held = []
while time.monotonic() < end and count < 1000000:
    try:
        if kind == "idle-unix" or kind == "idle-tcp":
            held = [s for s in held if alive(s)]
            while len(held) < 500 and time.monotonic() < end:
                s = (socket.create_connection((host, int(port)), 5) if kind == "idle-tcp"
                     else socket.socket(socket.AF_UNIX))
                if kind == "idle-unix":
                    s.settimeout(5); s.connect(path)
                held.append(s); count += 1
            time.sleep(0.5)
        elif kind == "churn":
            s = socket.socket(socket.AF_UNIX); s.connect(path); s.close(); count += 1
        elif kind == "slow":
            held = [s for s in held if alive(s)]
            if len(held) < 50:
                held.append(socket.create_connection((host, int(port)), 5)); count += 1
            for s in held:
                try:
                    s.send(b"{")
                except OSError:
                    pass
            time.sleep(1.0 / max(len(held), 1))
        elif kind == "nest":
            s, f = unix()
            for line in (b"[" * 50000, b'{"op":"jobs","x":"' + b"x" * (600 << 10) + b'"}'):
                f.write(line + b"\n"); f.flush(); f.readline(); count += 1
            s.close()
        elif kind == "hog":
            s, f = unix()
            for _ in range(5):
                f.write(b'{"op":"jobs","args":{"limit":100000}}\n'); f.flush()
                f.readline(); count += 1
            s.close()
        elif kind == "share":
            held = [s for s in held if alive(s)]
            while len(held) < 20:
                s, f = unix()
                held.append(s); count += 1
            time.sleep(0.5)
    except OSError:
        time.sleep(0.05)
print(json.dumps({"kind": kind, "count": count}))
"""
# the service's own part: connect, identify, read the caller's jobs, N times, each timed
# (no command start-up, which the machine's load inflates most)
ANSWER = r"""
import json, sys, time
from jobmon.serve.client import RemoteStore
out = []
for _ in range(int(sys.argv[3])):
    t = time.perf_counter()
    try:
        st = RemoteStore(sys.argv[1], sys.argv[2], timeout=30); st.jobs(20); st.close()
        out.append(time.perf_counter() - t)
    except Exception:
        out.append(float("inf"))
    time.sleep(0.2)
print(json.dumps(out))
"""
KINDS = ["idle-unix", "idle-tcp"] + ["churn", "slow", "nest", "hog", "share"] * 2


class Site:
    def __init__(self, path):
        self.config = path


def runs(a):
    for job, smp, summary in report_scale.jobs(a.jobs, a.samples, time.time() - 7 * 86400):
        job["user"] = CALLER if job["user"] == "user0" else HOSTILE   # the hogs read theirs
        yield job, smp, summary


def process_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def queries(ways, n, ids, until=float("inf")):
    """{way: sorted wall times} of `jobmon query` as CALLER, the ways interleaved (n each,
    fewer where `until` comes first)."""
    times = {w: [] for w in ways}
    for i in range(n):
        if time.monotonic() > until:
            break
        for way, cfg in ways.items():
            env = dict(os.environ, JOBMON_CONFIG=cfg)
            env.pop("JOBMON_STORE", None)
            argv = as_user([report_scale.JOBMON, "query", "--json", "--no-scheduler",
                            ids[i % len(ids)]], CALLER)
            t = time.perf_counter()
            r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
            times[way].append(time.perf_counter() - t if r.returncode == 0 else float("inf"))
    return {w: sorted(t) for w, t in times.items()}


def answers(service, ways, n):
    """{way: sorted times} of the service's answer alone, as CALLER."""
    out = {}
    for way, cfg in ways.items():
        address = service.socket if way == "socket" else service.address
        r = subprocess.run(as_user([PYTHON, "-c", ANSWER, address, service.munged.socket,
                                    str(n)], CALLER), capture_output=True, text=True,
                           timeout=600)
        out[way] = sorted(json.loads(r.stdout)) if r.returncode == 0 else [float("inf")]
    return out


def pct(xs, p):
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--seconds", type=float, default=90)
    a = ap.parse_args()
    from serve_site import Munged, Service
    from servers import Influx
    d = tempfile.mkdtemp(prefix="jobmon-bench-flood-")
    os.chmod(d, 0o755)
    srv, munged, service, hostile = Influx().start(), None, None, []
    try:
        cfgfile = report_scale.spool_and_ship(srv, d, runs(a))
        munged = Munged()
        service = Service(Site(cfgfile), munged).start()
        pid = service.proc.pid
        ways = {"socket": service.client_config(),
                "TCP+MUNGE": service.client_config(service.address)}
        ids = [f"1000_{k}" for k in (0, 17, 42, 77, 99)]
        quiet = queries(ways, max(a.queries // 4, 5), ids)
        quiet_answers = answers(service, ways, a.queries)
        cpu0, t0, rss = process_cpu(pid), time.monotonic(), [rss_mib(pid)]
        argv = ["prlimit", "--nofile=4096:4096", "--"]
        hostile = [subprocess.Popen(argv + as_user([PYTHON, "-c", HOSTILE_CLIENT, kind,
                                                    service.socket, service.address,
                                                    str(a.seconds)], HOSTILE),
                                    stdout=subprocess.PIPE, text=True) for kind in KINDS]
        stop = threading.Event()

        def watch():
            while not stop.wait(0.5):
                rss.append(rss_mib(pid))
        threading.Thread(target=watch, daemon=True).start()
        time.sleep(5)                          # the flood at full strength
        flooded_answers = answers(service, ways, a.queries)
        flooded = queries(ways, a.queries, ids, until=t0 + a.seconds - 3)
        counts = [json.loads(p.communicate(timeout=a.seconds + 120)[0]) for p in hostile]
        stop.set()
        cpu = (process_cpu(pid) - cpu0) / (time.monotonic() - t0)
        time.sleep(2)
        after = rss_mib(pid)
        load = os.getloadavg()
        for way in ways:
            q, f = quiet[way], flooded[way]
            print(f"jobmon query via {way:9s}: quiet p50 {pct(q, 50):.3f} s p99 {pct(q, 99):.3f}"
                  f" s ({len(q)}); flooded p50 {pct(f, 50):.3f} s p99 {pct(f, 99):.3f} s "
                  f"max {f[-1]:.3f} s ({len(f)}, failed {sum(x == float('inf') for x in f)})")
        for way in ways:
            q, f = quiet_answers[way], flooded_answers[way]
            print(f"the service's answer via {way:9s} (connect, identify, 20 jobs): quiet "
                  f"p50 {pct(q, 50) * 1000:.0f} ms p99 {pct(q, 99) * 1000:.0f} ms; flooded "
                  f"p50 {pct(f, 50) * 1000:.0f} ms p99 {pct(f, 99) * 1000:.0f} ms max "
                  f"{f[-1] * 1000:.0f} ms ({len(f)}, failed {sum(x == float('inf') for x in f)})")
        print(f"service: {cpu * 100:.1f} % of a core over the flood ({a.seconds:.0f} s, "
              f"answering the hogs' 100,000-record reads included); resident "
              f"{rss[0]:.0f} MiB before, {max(rss):.0f} MiB at most, {after:.0f} MiB after")
        print("flood: " + ", ".join(f"{c['kind']} {c['count']}" for c in counts))
        print(f"{a.jobs} jobs x {a.samples} samples; load average {load[0]:.1f} "
              f"{load[1]:.1f} {load[2]:.1f}; {os.cpu_count()} CPUs")
        tail = [x for x in service.logged().splitlines() if "closing unidentified" in x
                or "out of descriptors" in x][-2:]
        print("service log: " + " | ".join(tail))
        if service.proc.poll() is not None:
            print(f"the service ended ({service.proc.returncode}):\n" +
                  "\n".join(service.logged().splitlines()[-30:]))
    finally:
        for p in hostile:
            if p.poll() is None:
                p.kill()
                p.wait()
        if service:
            service.close()
        if munged:
            munged.close()
        srv.close()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
