"""Run the install section of docs/slurm.md or docs/htcondor.md exactly as written, in a
fresh clone, on a fresh machine: a private mount, network and process namespace (tests/
test_docs_install.py starts this under `unshare --mount --net --pid`) with fresh /etc, /opt,
/var, /run, /usr/local, /root and /dev (overlays: nothing written reaches the host), a
syslog daemon on /dev/log, and an InfluxDB 1.6.7 at influxdb.example.org:8086, with
authentication or without. PyPI, which the namespace cannot reach, is a wheelhouse of
jobmon's dependencies downloaded before (pip's find-links, no index).

Every `sh` block of the section runs as written, in order, in the clone, with the form
the run asks for ("# without authentication" / "# with authentication" blocks). Three
commands are the host's services, done here the way they would be: `systemctl enable
--now jobmon-ship` runs the unit's commands as its user; `scontrol reconfigure` (the
slurm.conf lines of the section) starts the suite's Slurm cluster with those Prolog and
Epilog; `condor_reconfig` runs the shipper cron once as the startd would (HTCondor's
daemons are not installed). Then a job: a Slurm job, or one through the wrapper the way
the starter runs it; the job's record must reach InfluxDB through the shipper.

"again": the users HTCondor's and Slurm's packages (or an earlier install) make, `condor`
and `jobmon`, are there before the first step, and every step runs twice over (a node
installed before); the services the first pass started keep running, as they would.

    python docs_install.py slurm|htcondor auth|noauth CLONE NODE WHEELHOUSE RESULT.json [again]
"""
import json
import os
import pwd
import re
import shlex
import socket
import subprocess
import sys
import threading
import time

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)
SECTIONS = {"slurm": "## Install on a compute node", "htcondor": "## Install on an execute node"}
OVERLAID = ("/etc", "/opt", "/var", "/run", "/usr/local", "/root", "/dev")
INFLUX_HOST = "influxdb.example.org"
ADMIN_PASSWORD = "admin-secret"


def sh_blocks(doc_text, doc, auth):
    """The section's ```sh blocks, dedented, those of the other form left out."""
    start = doc_text.index(SECTIONS[doc])
    end = re.compile(r"^##+ ", re.M).search(doc_text, start + 3)
    section = doc_text[start:end.start() if end else None]
    out = []
    for m in re.finditer(r"^( *)```sh\n(.*?)^ *```", section, re.M | re.S):
        indent = len(m.group(1))
        block = "".join(line[indent:] if line.strip() else "\n"
                        for line in m.group(2).splitlines(True))
        first = block.splitlines()[0].strip()
        if first in ("# without authentication", "# with authentication") and \
                (first == "# with authentication") != (auth == "auth"):
            continue
        out.append(block)
    return out, section


def fresh_machine(base):
    for d in OVERLAID:
        upper, work = (os.path.join(base, "overlay", d.strip("/").replace("/", "_"), x)
                       for x in ("upper", "work"))
        os.makedirs(upper)
        os.makedirs(work)
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                        f"lowerdir={d},upperdir={upper},workdir={work}", d], check=True)
    for cmd in (["ip", "link", "set", "lo", "up"],      # and an ordinary IPv4 address:
                ["ip", "link", "add", "jobmon0", "type", "veth", "peer", "name", "jobmon1"],
                ["ip", "addr", "add", "10.251.0.1/24", "dev", "jobmon0"],   # Slurm ignores lo
                ["ip", "link", "set", "jobmon0", "up"], ["ip", "link", "set", "jobmon1", "up"]):
        subprocess.run(cmd, check=True)
    with open("/etc/hosts", "a") as f:
        f.write(f"127.0.0.1 {INFLUX_HOST}\n")
    return Syslog()


class Syslog:
    """A syslog daemon on /dev/log: keeps what it receives."""

    def __init__(self):
        if os.path.exists("/dev/log"):
            os.unlink("/dev/log")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("/dev/log")
        os.chmod("/dev/log", 0o666)
        self.lines = []
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            self.lines.append(self.sock.recv(65536).decode(errors="replace"))


def start_influx(auth):
    from servers import Influx
    srv = Influx(auth=auth == "auth", port=8086).start()
    if auth == "auth":      # the server's admin, as its DBA set it up
        srv.query(f"CREATE USER admin WITH PASSWORD '{ADMIN_PASSWORD}' WITH ALL PRIVILEGES")
        with open("/root/influxdb-admin-password", "w") as f:
            f.write(ADMIN_PASSWORD + "\n")
        os.chmod("/root/influxdb-admin-password", 0o600)
    return srv


class Services:
    """What the host's service manager and daemons would do for the doc's commands."""

    def __init__(self, doc, node, result):
        self.doc, self.node, self.result = doc, node, result
        self.procs, self.cluster, self.env, self.started = [], None, {}, set()

    def systemctl_enable_now(self, unit):
        """systemd: ExecStartPre (+: as root), then ExecStart as User=, kept running (a
        unit already running is left as it is)."""
        if unit in self.started:
            return
        self.started.add(unit)
        conf = {}
        with open(f"/etc/systemd/system/{unit}.service") as f:
            for line in f:
                k, sep, v = line.strip().partition("=")
                if sep and not k.startswith("#"):
                    conf.setdefault(k, []).append(v)
        user = conf["User"][0]
        for pre in conf.get("ExecStartPre", []):
            subprocess.run(shlex.split(pre.lstrip("+")), check=True)
        self.procs.append(subprocess.Popen(shlex.split(conf["ExecStart"][0]), user=user,
                                           group=user, extra_groups=[], env=clean_env(),
                                           cwd="/"))
        time.sleep(2)     # its first pass

    def slurm_reconfigure(self, section):
        """The section's slurm.conf lines, on the suite's cluster (Prolog=prolog.d/*, the
        wrappers linked there: what the section says a site with Prologs of its own does)."""
        from slurm import Cluster
        if self.cluster:        # running: reconfigured with the same lines
            return
        lines = set(re.findall(r"^ *((?:Prolog|Epilog|PrologFlags)=\S+)$", section, re.M))
        assert lines >= {"Prolog=/etc/slurm/jobmon-prolog", "Epilog=/etc/slurm/jobmon-epilog",
                         "PrologFlags=Contain"}, lines
        self.cluster = Cluster(node=self.node, prologs=["/etc/slurm/jobmon-prolog"],
                               epilogs=["/etc/slurm/jobmon-epilog"]).start()
        self.env = {"SLURM_CONF": self.cluster.env()["SLURM_CONF"]}

    def condor_reconfig(self):
        """The startd takes up the snippets: its cron runs the shipper (first period)."""
        self.result["cron"] = run_cron()

    def close(self):
        for p in self.procs:
            p.terminate()
            p.wait(30)
        if self.cluster:
            self.cluster.stop()


def clean_env(**extra):
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME": "/root", "LANG": "C.UTF-8"}
    env.update(extra)
    return env


def condor_knobs():
    """The knobs the snippets set, as condor_config_val would print them (a macro of
    the knob itself, $(STARTD_CRON_JOBLIST), is empty: nothing else sets them here)."""
    k = {}
    for name in sorted(os.listdir("/etc/condor/config.d")):
        with open(os.path.join("/etc/condor/config.d", name)) as f:
            for line in f:
                key, sep, value = line.partition("=")
                if sep and not line.startswith("#"):
                    k[key.strip()] = re.sub(r"\$\([A-Z_]+\)", "", value).strip()
    return k


def run_cron():
    """STARTD_CRON_JOBMON as the startd runs it: as condor, its environment only _ENV."""
    from jobmon.plugins.condor.doctor import job_environment
    k = condor_knobs()
    r = subprocess.run([k["STARTD_CRON_JOBMON_EXECUTABLE"]] +
                       shlex.split(k["STARTD_CRON_JOBMON_ARGS"]), user="condor",
                       group="condor", extra_groups=[], cwd="/", capture_output=True, text=True,
                       env=job_environment(k.get("STARTD_CRON_JOBMON_ENV")), timeout=120)
    return {"exit": r.returncode, "stderr": r.stderr[-2000:]}


def run_steps(doc, auth, clone, services, result, wheelhouse, passes=1):
    with open(os.path.join(clone, "docs", f"{doc}.md")) as f:
        blocks, section = sh_blocks(f.read(), doc, auth)
    result["steps"] = []
    for block in blocks * passes:
        if "systemctl enable --now jobmon-ship" in block:
            block = block.replace("systemctl enable --now jobmon-ship", "")
            run_block(block, clone, result)
            services.systemctl_enable_now("jobmon-ship")
            continue
        if block.strip() == "condor_reconfig":
            services.condor_reconfig()
            result["steps"].append({"block": block, "exit": 0, "done": "as the startd would"})
            continue
        if "jobmon doctor" in block and doc == "slurm":
            services.slurm_reconfigure(section)
        env = dict(services.env, PIP_FIND_LINKS=wheelhouse, PIP_NO_INDEX="1")
        if not run_block(block, clone, result, env):
            return False
    return True


def run_block(block, clone, result, extra_env=None):
    r = subprocess.run(["sh", "-e", "-c", block], cwd=clone, capture_output=True, text=True,
                       env=clean_env(**(extra_env or {})), timeout=900)
    result["steps"].append({"block": block, "exit": r.returncode,
                            "stdout": r.stdout[-4000:], "stderr": r.stderr[-4000:]})
    return r.returncode == 0


def query(job, tries=120):
    """`jobmon query JOB --json` on the installed jobmon until the job's record, with its
    end, is in InfluxDB."""
    for _ in range(tries):
        r = subprocess.run(["/opt/jobmon/bin/jobmon", "query", job, "--json",
                            "--no-scheduler"], capture_output=True, text=True,
                           env=clean_env(), timeout=120)
        if r.returncode == 0:
            try:
                rep = json.loads(r.stdout)
            except ValueError:
                rep = None
            if rep and '"exit_code"' in r.stdout:
                return rep
        time.sleep(1)
    return {"error": r.stderr[-2000:]}


def slurm_job(services, result):
    c = services.cluster
    jid = c.submit("/usr/bin/python3 -c 'import time\nt = time.process_time()\n"
                   "while time.process_time() - t < 1: pass'\necho done\n")
    [rec] = c.wait_done(jid, timeout=180)
    result["job_state"] = rec["JobState"]
    result["query"] = query(str(jid))


def condor_job(result):
    from test_condor_wrapper import Starter, py
    wrapper = condor_knobs()["USER_JOB_WRAPPER"]
    s = Starter(site="")
    rc, out, err = s.run(py("import time, sys\nt = time.process_time()\n"
                            "while time.process_time() - t < 1: pass\nsys.exit(3)"),
                         wrapper=[wrapper])
    result["job"] = {"exit": rc, "stderr": err.decode(errors="replace")}
    result["cron_after_job"] = run_cron()
    result["query"] = query("5.0")
    from jobmon import doctor
    from jobmon.doctor import site
    from jobmon.plugins.condor import doctor as condor_doctor
    node = doctor.Node()
    site.site_file(node)
    result["condor_checks"] = [c.as_dict() for c in condor_doctor.evaluate(condor_knobs(), node)]


def service_user(name):
    """The user as HTCondor's or Slurm's packages make it, where it is not there yet."""
    if subprocess.run(["id", name], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", name], check=True)


def main():
    doc, auth, clone, node, wheelhouse, out = sys.argv[1:7]
    again = sys.argv[7:8] == ["again"]
    result = {"doc": doc, "auth": auth, "again": again}
    # the overlays' upper layers, beside the result: the caller removes them, unmounted
    base = os.path.join(os.path.dirname(os.path.abspath(out)), "machine")
    os.makedirs(base)
    syslog = fresh_machine(base)
    influx = start_influx(auth)
    for name in (("condor", "jobmon") if again else ("condor",) if doc == "htcondor" else ()):
        service_user(name)     # an execute node: HTCondor's service user exists
    services = Services(doc, node, result)
    try:
        result["steps_ok"] = run_steps(doc, auth, clone, services, result, wheelhouse,
                                       passes=2 if again else 1)
        if result["steps_ok"]:
            if doc == "slurm":
                slurm_job(services, result)
            else:
                condor_job(result)
    except Exception as e:
        import traceback
        result["error"] = traceback.format_exc()
        raise
    finally:
        result["syslog"] = syslog.lines[-50:]
        services.close()
        influx.close()
        with open(out, "w") as f:
            json.dump(result, f, indent=1, default=str)


if __name__ == "__main__":
    main()
