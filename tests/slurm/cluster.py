"""A real single-node Slurm cluster (Debian 12's Slurm 22.05): munged, MariaDB, slurmdbd,
slurmctld and slurmd started by hand below one temp dir, all on 127.0.0.1.

    c = Cluster().start()        # ~5 s to an idle node
    jid = c.submit("#!/bin/sh\\nsleep 1\\n", user="jobmon-test")
    c.wait(jid)                  # the job as `sacct --json` has it once it is over
    c.stop()                     # every process stopped by pid, cgroups removed

Commands run with a clean environment holding SLURM_CONF, so neither /etc/slurm nor a
Slurm job the tests themselves might run inside leaks into the cluster.
"""
import os
import pwd
import shutil
import subprocess
import tempfile
import time

from . import cgroups
from .config import (ACCOUNT, CLUSTER_NAME, ClusterSpec, Layout, hardware,
                     install_mysql_db, script_name, write_configs)
from .common import SBIN_PATH, TEST_USER, ClusterError, which as _which
from .jobs import JobCommands
from .processes import NodeLock, Supervisor, free_port, lock_free_node, tcp_open, wait_until

# node states that mean "this node will not run jobs": a failed Prolog drains it
BAD_NODE_STATES = ("DRAIN", "DOWN", "FAIL", "NOT_RESPONDING", "INVAL")

# What the harness' own Prolog/Epilog do: record the environment and cgroup Slurm runs
# them in. Slurm gives them no PATH, so every command is an absolute path.
RECORD_SCRIPT = """#!/bin/sh
r={records}/{kind}.$SLURM_JOB_ID
/bin/cat /proc/$$/cgroup > "$r.cgroup"
/usr/bin/id -u > "$r.uid"
/usr/bin/env > "$r.env.tmp" && /bin/mv -f "$r.env.tmp" "$r.env"
exit 0
"""


def have_slurm():
    """Why this machine cannot run the cluster, or None when it can."""
    if os.geteuid() != 0:
        return "needs root (Slurm daemons, cgroups, jobs as another user)"
    for exe in ("slurmctld", "slurmd", "slurmdbd", "sbatch", "sacct", "munged", "mariadbd",
                "mariadb-install-db", "setpriv"):
        if not shutil.which(exe, path=SBIN_PATH):
            return f"{exe} not installed (tests/setup.sh installs Debian's Slurm)"
    try:
        pwd.getpwnam(TEST_USER)
    except KeyError:
        return f"user {TEST_USER} missing (tests/setup.sh creates it)"
    return None


class Cluster(JobCommands):
    def __init__(self, root=None, *, node=None, cgroup="auto", prologs=(), epilogs=(),
                 influx_url=None, influx_db="slurm", users=None, keep=None, nodes=1,
                 mysql_seed=None):
        """node: the node's name (fixtures carry it); default: the first of node01,
        node02 ... no other cluster on this machine uses; cgroup: "v1", "v2" or "auto"
        (the host's); prologs/epilogs: absolute paths of extra programs Slurm runs, after
        the harness' own recorders; influx_url: turns on Slurm's acct_gather_profile/
        influxdb writing to that InfluxDB 1.x (database influx_db must exist); users: who
        gets an association (default: the test users that exist, and root); keep: leave
        the temp dir after stop() (default: env JOBMON_SLURM_KEEP); nodes: how many slurmd
        (more than one: <node>, <node>b, ... on cgroup v1, for multi-node jobs);
        mysql_seed: a MariaDB datadir install_mysql_db() made, copied rather than made."""
        self.root = root or tempfile.mkdtemp(prefix="jobmon-slurm-")
        self.lay = Layout(self.root)
        if users is None:
            users = [u for u in (TEST_USER, "jobmon-test2", "root") if _user_exists(u)]
        for p in list(prologs) + list(epilogs):
            if not os.path.isabs(p):
                raise ValueError(f"Prolog/Epilog must be an absolute path: {p}")
        self.spec = ClusterSpec(root=self.root, node=node or "",
                                cgroup=cgroups.version() if cgroup == "auto" else cgroup,
                                prologs=list(prologs), epilogs=list(epilogs),
                                influx_url=influx_url, influx_db=influx_db, users=users)
        self.keep = bool(os.environ.get("JOBMON_SLURM_KEEP")) if keep is None else keep
        self.nodes_wanted, self.mysql_seed = nodes, mysql_seed
        self.lock = None
        self.more_locks = []
        self.cg = None
        self.more_cgs = []
        self.sup = None
        self.pids = {}
        self.timings = {}
        self.leftovers = []         # [(pid, comm, signal)] stopped at teardown beyond the daemons
        self.cgroups_left = []      # cgroups that could not be removed
        self._seq = 0

    @property
    def node(self):
        return self.spec.node

    # ---- paths -----------------------------------------------------------------------
    @property
    def logs(self):
        """{daemon: log path}: munged, mysqld, slurmdbd, slurmctld, slurmd."""
        return dict(self.lay.logs)

    @property
    def conf(self):
        return self.lay.slurm_conf

    @property
    def jobs_dir(self):
        """Where submit() writes job scripts and the jobs write their output."""
        return self.lay.jobs

    @property
    def records_dir(self):
        """Where the harness' Prolog/Epilog record their environment and cgroup."""
        return self.lay.records

    def env(self, **extra):
        """The environment every Slurm command here runs with."""
        e = {"PATH": SBIN_PATH, "SLURM_CONF": self.lay.slurm_conf, "LANG": "C.UTF-8",
             "HOME": "/"}
        e.update(extra)
        return e

    # ---- start -----------------------------------------------------------------------
    def start(self, timeout=180):
        """Brings the cluster up; returns self once the node is idle. The timeout is per
        daemon and generous: under emulation (the cgroup v2 guest) MariaDB alone takes
        ~30 s. On failure everything started is stopped and ClusterError carries the
        tails of the daemons' logs."""
        t0 = time.monotonic()
        try:
            self._start(timeout)
        except BaseException as e:
            detail = self.log_tails()
            self.stop()
            if isinstance(e, (ClusterError, TimeoutError, RuntimeError)):
                raise ClusterError(f"Slurm test cluster did not start: {e}\n{detail}") from None
            raise
        self.timings["start_to_idle"] = time.monotonic() - t0
        return self

    def _lap(self, name, t):
        now = time.monotonic()
        self.timings[name] = now - t
        return now

    def _start(self, timeout):
        lay, spec = self.lay, self.spec
        t = time.monotonic()
        if self.spec.node:
            self.lock = NodeLock(self.spec.node)
            self.lock.acquire(timeout)
        else:
            self.lock = lock_free_node()
            self.spec.node = self.lock.node
        self._more_nodes(timeout)
        self.cg = cgroups.for_version(self.spec.cgroup, self.node)
        lay.make_dirs()
        for n in spec.more_nodes and spec.nodes:     # SlurmdSpoolDir=.../%n
            os.makedirs(os.path.join(lay.slurmd_spool, n), mode=0o755, exist_ok=True)
        for cg in [self.cg] + self.more_cgs:
            cg.prepare()
        spec.hardware = hardware()
        spec.ports = {k: free_port() for k in ["ctld", "slurmd", "dbd", "mysql"] +
                      [f"slurmd:{n}" for n in spec.more_nodes]}
        self._install_scripts()
        write_configs(spec, lay)
        self.sup = Supervisor(os.path.join(lay.log, "supervisor.log"))
        t = self._lap("configure", t)

        self._start_munge()
        self._start_mysql(timeout)
        t = self._lap("munge_mysql", t)
        self._spawn("slurmdbd", [_which("slurmdbd"), "-D"])
        wait_until("slurmdbd listening", lambda: tcp_open(spec.ports["dbd"]), timeout,
                   self._alive("slurmdbd"))
        t = self._lap("slurmdbd", t)
        self._add_associations()
        t = self._lap("sacctmgr", t)
        self._spawn("slurmctld", [_which("slurmctld"), "-D", "-i", "-f", lay.slurm_conf])
        wait_until("slurmctld answering", self._ctld_up, timeout, self._alive("slurmctld"))
        t = self._lap("slurmctld", t)
        self._spawn("slurmd", [_which("slurmd"), "-D", "-N", self.node, "-f", lay.slurm_conf])
        for n in spec.more_nodes:
            self._spawn(f"slurmd:{n}", [_which("slurmd"), "-D", "-N", n, "-f", lay.slurm_conf])
        self.wait_idle(timeout)
        self._lap("slurmd_idle", t)

    def _more_nodes(self, timeout):
        """The names and cgroups of the further slurmd: <node>b, <node>c ... (locked, as
        the first; they share its fate). Their logs join the daemons' logs."""
        if self.nodes_wanted > 1 and self.spec.cgroup != "v1":
            raise ClusterError("several slurmd on one machine: cgroup v1 only here")
        for i in range(1, self.nodes_wanted):
            lock = NodeLock(f"{self.node}{chr(ord('a') + i)}")
            lock.acquire(timeout)
            self.more_locks.append(lock)
            self.spec.more_nodes.append(lock.node)
            self.more_cgs.append(cgroups.for_version("v1", lock.node))
        if self.spec.more_nodes:
            for n in self.spec.nodes:
                self.lay.logs[f"slurmd-{n}"] = os.path.join(self.lay.log, f"slurmd-{n}.log")

    def _spawn(self, name, argv, env=None):
        # stdout/stderr apart from the daemon's own log: with -D Slurm writes both.
        # cwd: the daemons' children (Prolog, Epilog) inherit it
        self.pids[name] = self.sup.spawn(name, argv, env or self.env(),
                                         os.path.join(self.lay.log, name + ".stderr"),
                                         cwd=self.root)
        return self.pids[name]

    def _alive(self, name):
        return lambda: self.sup.alive(self.pids[name])

    def _install_scripts(self):
        """prolog.d/ and epilog.d/ (Prolog=prolog.d/* runs them in name order): the
        harness' recorder first, then the programs asked for, linked by absolute path."""
        for kind, d, extra in (("prolog", self.lay.prolog_dir, self.spec.prologs),
                               ("epilog", self.lay.epilog_dir, self.spec.epilogs)):
            path = os.path.join(d, f"00-record-{kind}")
            with open(path, "w") as f:
                f.write(RECORD_SCRIPT.format(records=self.lay.records, kind=kind))
            os.chmod(path, 0o755)
            for i, prog in enumerate(extra):
                os.symlink(prog, os.path.join(d, script_name(prog, i)))

    def _start_munge(self):
        lay = self.lay
        with open(lay.munge_key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(lay.munge_key, 0o400)
        self._spawn("munged", [_which("munged"), "--foreground", "--force",
                               f"--socket={lay.munge_socket}", f"--key-file={lay.munge_key}",
                               f"--pid-file={lay.run}/munged.pid",
                               f"--seed-file={lay.munge_dir}/munged.seed",
                               f"--log-file={lay.logs['munged']}"])

        def answers():
            return subprocess.run([_which("munge"), "-n", "-S", lay.munge_socket],
                                  capture_output=True).returncode == 0
        wait_until("munged answering", answers, 60, self._alive("munged"))

    def _start_mysql(self, timeout):
        lay, port = self.lay, self.spec.ports["mysql"]
        if self.mysql_seed:     # made beforehand: minutes saved under emulation
            shutil.copytree(self.mysql_seed, lay.db_dir, dirs_exist_ok=True)
        else:
            install_mysql_db(lay.db_dir, self.env())
        self._spawn("mysqld", [
            _which("mariadbd"), "--no-defaults", "--user=root", f"--datadir={lay.db_dir}",
            f"--socket={lay.mysql_socket}", f"--port={port}", "--bind-address=127.0.0.1",
            f"--pid-file={lay.run}/mysqld.pid", f"--log-error={lay.logs['mysqld']}",
            "--skip-name-resolve", "--skip-log-bin",
            # a throw-away database: small, and no fsync per commit
            "--innodb-buffer-pool-size=64M", "--innodb-flush-log-at-trx-commit=0",
            # slurmdbd's own recommendation (it warns below these)
            "--innodb-lock-wait-timeout=900", "--max-allowed-packet=16M"])
        wait_until("MariaDB listening", lambda: tcp_open(port), timeout, self._alive("mysqld"))

    def _add_associations(self):
        """The cluster, an account and the users, in one sacctmgr run (each run costs
        a connection to slurmdbd; commands on stdin share one)."""
        cmds = [f"add cluster {CLUSTER_NAME}",
                f"add account {ACCOUNT} Cluster={CLUSTER_NAME} Description=jobmon-tests "
                f"Organization=jobmon"]
        if self.spec.users:
            cmds.append(f"add user {','.join(self.spec.users)} Account={ACCOUNT} "
                        f"DefaultAccount={ACCOUNT} Cluster={CLUSTER_NAME}")
        self.run([_which("sacctmgr"), "-i"], input="\n".join(cmds) + "\n")

    def _ctld_up(self):
        r = subprocess.run([_which("scontrol"), "ping"], capture_output=True, text=True,
                           env=self.env())
        return r.returncode == 0 and "UP" in r.stdout

    # ---- node health -----------------------------------------------------------------
    def node_info(self, node=None):
        """{key: value} of `scontrol show node` for the node (State, Reason, ...)."""
        out = self.scontrol("show", "node", node or self.node, "--oneliner")
        info = {}
        for tok in out.split():
            if "=" in tok:
                k, v = tok.split("=", 1)
                info[k] = v
        # Reason may hold spaces: take it whole from the text
        if "Reason=" in out:
            info["Reason"] = out.split("Reason=", 1)[1].strip()
        return info

    def node_state(self, node=None):
        return self.node_info(node).get("State", "")

    def drained_nodes(self):
        """[(node, state, reason)] for every node that will not run jobs (drained by a
        failed Prolog, down, not responding); [] on a healthy cluster."""
        out = self.run([_which("sinfo"), "-h", "-N", "-o", "%N|%T|%E"]).stdout
        bad = []
        for line in out.splitlines():
            node, state, reason = line.split("|", 2)
            # sinfo marks a node that does not answer with a trailing '*' (idle*)
            if state.endswith("*") or any(s in state.upper() for s in BAD_NODE_STATES):
                bad.append((node, state, reason))
        return bad

    def wait_idle(self, timeout=60):
        """Until every node is IDLE (no flags); a drained node is reported at once."""
        for node in self.spec.nodes:
            def idle(node=node):
                state = self.node_state(node)
                if "DRAIN" in state:
                    raise ClusterError(f"node {node} is {state}: "
                                       f"{self.node_info(node).get('Reason')}")
                return state == "IDLE"
            name = "slurmd" if node == self.node else f"slurmd:{node}"
            alive = self._alive(name) if name in self.pids else None
            wait_until(f"node {node} idle", idle, timeout, alive, poll=0.1)

    def resume(self, timeout=60):
        """Brings every drained or down node back (a failing Prolog drains it), then waits
        until all are idle. A node set DOWN may come back by itself between the look and
        the update (ReturnToService=2: when it next registers), and Slurm refuses RESUME
        for a node that is neither: that node is left as it is."""
        for node, _state, _reason in self.drained_nodes():
            r = self.run([_which("scontrol"), "update", f"NodeName={node}", "State=RESUME"],
                         check=False)
            if r.returncode and any(s in self.node_state(node) for s in ("DRAIN", "DOWN", "FAIL")):
                raise ClusterError(f"RESUME of {node} exited {r.returncode}: {r.stderr}")
        self.wait_idle(timeout)

    def processes(self):
        """[(pid, ppid, comm)] of every process the cluster runs now."""
        return self.sup.descendants() if self.sup else []

    # ---- stop ------------------------------------------------------------------------
    def cancel_all(self, timeout=20):
        """Cancels every job and waits until the node has none (Epilogs done)."""
        if "slurmctld" not in self.pids or not self.sup.alive(self.pids["slurmctld"]):
            return
        ids = self.run([_which("squeue"), "-h", "-o", "%A"], check=False).stdout.split()
        if ids:
            self.run([_which("scancel")] + ids, check=False)
        try:
            wait_until("jobs gone", lambda: not self.run(
                [_which("squeue"), "-h", "-o", "%A"], check=False).stdout.split(), timeout)
        except TimeoutError:
            pass

    def stop(self):
        """Cancels the jobs, stops the daemons (slurmd first, munged last) and every process
        left below them, all by pid; removes the cluster's cgroups and temp dir. Records
        what it had to kill beyond the daemons in `leftovers`."""
        if self.sup is not None:
            try:
                self.cancel_all()
            except Exception:
                pass
            killed = self.sup.stop()
            daemons = set(self.pids.values())
            self.leftovers = [k for k in killed if k[0] not in daemons]
            self.sup = None
        if self.cg is not None:
            self.cgroups_left = [d for cg in [self.cg] + self.more_cgs for d in cg.cleanup()]
        for lock in [self.lock] + self.more_locks:
            if lock is not None:
                lock.release()
        self.lock, self.more_locks = None, []
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
        return self

    def log_tails(self, lines=15):
        """The last lines of every daemon's log and non-empty stderr, for error reports."""
        out = []
        paths = list(self.lay.logs.values())
        paths += [os.path.join(self.lay.log, n + ".stderr") for n in self.lay.logs]
        for path in paths:
            try:
                with open(path, errors="replace") as f:
                    tail = f.read().splitlines()[-lines:]
            except OSError:
                continue
            if not tail:
                continue
            out.append(f"--- {path} (last {len(tail)} lines)\n" + "\n".join(tail))
        return "\n".join(out)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _user_exists(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False
