"""A Slurm test cluster (tests/slurm) with jobmon's Prolog and Epilog installed the way a
site installs them (`jobmon-slurm-hooks install`), its samplers spooling for an
InfluxDB site; and readers for what the samplers wrote.

The wrappers slurm.conf names stay at fixed paths for the cluster's life; a test may
rewrite them (the fault matrix: a broken interpreter path, ...) and the site's config,
which every sampler reads anew, and put them back after.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from helpers import JOBMON, REPO
from jobmon.plugins.slurm import install

PYTHON = os.path.join(os.path.dirname(sys.executable), "python3")
HOOKS = os.path.join(REPO, "plugins", "slurm", "hooks.py")


class JobmonSite:
    """Config, spool, run dir and the two wrappers, below one temp dir."""

    def __init__(self, influx=None, interval=1.0, db="slurm_jobmon", prolog_limit=None):
        """prolog_limit: seconds before the wrapper kills the Prolog (default the
        installed one's, 3 s; under emulation a Python start alone can take that)."""
        self.prolog_limit = prolog_limit or install.PROLOG_LIMIT
        self.dir = tempfile.mkdtemp(prefix="jobmon-slurm-site-")
        os.chmod(self.dir, 0o755)
        self.influx, self.db = influx, db
        if influx is not None:
            influx.create_db(db)
        self.spool = os.path.join(self.dir, "spool")
        self.state = os.path.join(self.dir, "state")
        self.run_dir = os.path.join(self.dir, "run")
        self.hooks_dir = os.path.join(self.dir, "hooks")
        self.config = os.path.join(self.dir, "jobmon.toml")
        self.warnings = os.path.join(self.dir, "warnings.log")
        self.prolog = os.path.join(self.hooks_dir, "jobmon-prolog")
        self.epilog = os.path.join(self.hooks_dir, "jobmon-epilog")
        os.makedirs(self.hooks_dir)
        with open(self.warnings, "w"):
            pass
        os.chmod(self.warnings, 0o666)   # the samplers run as the jobs' users
        self.interval = interval
        self.write_config()
        self.install()
        self.ship()                      # prepares the spool directory (mode 3733)

    def write_config(self, extra="", url=None, spool=None, **slurm):
        url = url or (self.influx.url if self.influx else "http://127.0.0.1:9")
        s = {"interval": self.interval, "warnings": self.warnings, "end_wait_seconds": 10.0}
        s.update(slurm)
        lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in s.items())
        with open(self.config, "w") as f:
            f.write(f'[store]\nkind = "influxdb"\n[influxdb]\nurl = "{url}"\n'
                    f'database = "{self.db}"\ntimeout_seconds = 2.0\n'
                    f'[spool]\ndir = "{spool or self.spool}"\n'
                    f'[shipper]\nstate_dir = "{self.state}"\nretry_initial_seconds = 0.05\n'
                    f'retry_max_seconds = 0.5\n[slurm]\n{lines}{extra}')
        os.chmod(self.config, 0o644)

    def install(self, python=PYTHON, hooks_path=HOOKS, config=None, run_dir=None):
        """The wrappers as `jobmon-slurm-hooks install` writes them (the arguments: what
        they run and with, for the fault matrix)."""
        for kind, path in (("prolog", self.prolog), ("epilog", self.epilog)):
            text = install.wrapper(kind, path, python, hooks_path, config or self.config,
                                 run_dir or self.run_dir, prolog_limit=self.prolog_limit)
            with open(path + ".tmp", "w") as f:
                f.write(text)
            os.chmod(path + ".tmp", 0o755)
            os.rename(path + ".tmp", path)

    def env(self):
        env = dict(os.environ, JOBMON_CONFIG=self.config)
        env.pop("JOBMON_STORE", None)
        return env

    def ship(self):
        return subprocess.run([JOBMON, "ship"], env=self.env(), capture_output=True, text=True,
                              timeout=120)

    def warnings_text(self):
        with open(self.warnings) as f:
            return f.read()

    def spool_files(self):
        return sorted(os.path.join(self.spool, n) for n in os.listdir(self.spool)
                      if n.endswith(".lp"))

    def records(self):
        """{job value: [Record]} of everything in the spool now (one per job run)."""
        out = {}
        for path in self.spool_files():
            try:
                rec = Record.read(path)
            except FileNotFoundError:   # gone since the listing (a sampler's end reservation)
                continue
            if rec.job is not None:
                out.setdefault(rec.job, []).append(rec)
        return out

    def wait_record(self, job, timeout=60, runs=1):
        """The finished Records of a job (its end-of-job point written), once there."""
        deadline = time.monotonic() + timeout
        while True:
            recs = [r for r in self.records().get(str(job), []) if r.summary]
            if len(recs) >= runs:
                return sorted(recs, key=lambda r: r.job_point["start_time"])
            if time.monotonic() > deadline:
                have = {j: [(r.job_tags.get("restart_count"), bool(r.summary)) for r in rs]
                        for j, rs in self.records().items()}
                raise AssertionError(f"no {runs} finished record(s) of job {job} in the spool "
                                     f"within {timeout} s; spool: {have}; "
                                     f"warnings:\n{self.warnings_text()[-3000:]}")
            time.sleep(0.2)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Record:
    """One spool file: the job's point (description, then summary) and its samples."""

    def __init__(self, path, points):
        self.path = path
        self.points = points
        jobs = [p for p in points if p["measurement"] == "jobmon_job"]
        self.samples = [p["fields"] for p in points if p["measurement"] == "jobmon_sample"]
        self.job_point = jobs[-1]["fields"] if jobs else {}
        self.tags = jobs[-1]["tags"] if jobs else {}
        self.job = self.tags.get("job")
        self.summary = self.job_point if self.job_point.get("ended") else None
        self.job_tags = json.loads(self.job_point.get("tags") or "{}")
        self.owner = os.stat(path).st_uid

    @classmethod
    def read(cls, path):
        with open(path, "rb") as f:
            data = f.read().rstrip(b"\0")
        return cls(path, [parse(l) for l in data.decode().split("\n") if l])

    def cpu(self):
        s = self.summary
        return s["cpu_user_seconds"] + s["cpu_system_seconds"]


_FIELD = re.compile(r'([^=,]+)=("(?:[^"\\]|\\.)*"|[^,]*)')


def _split(text, sep):
    """Split on sep outside backslash escapes."""
    out, cur, i = [], "", 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            cur += text[i + 1]
            i += 2
            continue
        if c == sep:
            out.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    out.append(cur)
    return out


def parse(line):
    """One line of jobmon's line protocol -> {measurement, tags, fields, time}."""
    # key part ends at the first unescaped space
    i = 0
    while True:
        i = line.index(" ", i)
        if line[i - 1] != "\\":
            break
        i += 1
    key, rest = line[:i], line[i + 1:]
    fields_text, _, ts = rest.rpartition(" ")
    parts = _split(key, ",")
    tags = dict(p.split("=", 1) for p in parts[1:])
    fields = {}
    for m in _FIELD.finditer(fields_text):
        k, v = m.group(1), m.group(2)
        if v.startswith('"'):
            fields[k] = v[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        elif v.endswith("i"):
            fields[k] = int(v[:-1])
        else:
            fields[k] = float(v)
    return {"measurement": parts[0], "tags": tags, "fields": fields, "time": int(ts)}


# --- pytest fixtures (tests/conftest.py imports them) ------------------------------------

import pytest  # noqa: E402


def samplers(cluster):
    """[(pid, comm)] of jobmon samplers still running below the cluster's daemons."""
    out = []
    for pid, _ppid, comm in cluster.processes():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"slurm/hooks.py") for a in argv):
            out.append((pid, comm))
    return out


def wait_no_samplers(cluster, timeout=30):
    deadline = time.monotonic() + timeout
    while samplers(cluster):
        if time.monotonic() > deadline:
            return samplers(cluster)
        time.sleep(0.1)
    return []


@pytest.fixture(scope="session")
def jobmon_slurm_cluster(influx_server):
    """One Slurm cluster whose Prolog and Epilog are jobmon's, for the whole session."""
    from slurm import Cluster, have_slurm
    why = have_slurm()
    if why:
        pytest.skip(f"Slurm test cluster: {why}")
    site = JobmonSite(influx_server)
    cluster = Cluster(prologs=[site.prolog], epilogs=[site.epilog]).start()
    site.cluster = cluster
    yield site
    cluster.stop()
    site.close()
    if cluster.leftovers:
        pytest.fail("processes left running after the cluster stopped (samplers?): "
                    + ", ".join(f"{pid} {comm}" for pid, comm, _ in cluster.leftovers))


@pytest.fixture
def jobmon_slurm(jobmon_slurm_cluster):
    """The cluster, its node healthy, the site's wrappers and config as installed; after
    the test its jobs cancelled, no node drained and no sampler left running."""
    site = jobmon_slurm_cluster
    site.install()
    site.write_config()
    with open(site.warnings, "w"):     # each test reads only its own jobs' warnings
        pass
    bad = site.cluster.drained_nodes()
    if bad:
        site.cluster.resume()
    yield site
    site.cluster.cancel_all()
    site.install()
    site.write_config()
    left = wait_no_samplers(site.cluster)
    drained = site.cluster.drained_nodes()
    if drained:
        site.cluster.resume()
    assert not drained, f"a node was drained: {drained}"
    assert not left, f"samplers still running after their jobs: {left}"
