"""What the test cluster looks like (ClusterSpec) and the config files written from it.

Every path is below one temp dir and every daemon listens on 127.0.0.1 only, so a cluster
never touches /etc/slurm, /etc/munge, /var/lib/mysql or the packaged daemons' ports.
"""
import dataclasses
import os
import re
import subprocess
from typing import List, Optional

from .common import ClusterError, which

# `slurmd -N` lets the machine pose as a node of another name, so recorded fixtures carry
# this one instead of the machine's hostname
DEFAULT_NODE = "node01"
CLUSTER_NAME = "jobmon"
PARTITION = "debug"
ACCOUNT = "jobmon"


@dataclasses.dataclass
class ClusterSpec:
    """Everything a cluster is made from. Paths are filled in by `Layout`."""
    root: str                             # the temp dir holding everything
    node: str = DEFAULT_NODE
    cgroup: str = "v1"                    # "v1" or "v2"
    prologs: List[str] = dataclasses.field(default_factory=list)   # absolute paths
    epilogs: List[str] = dataclasses.field(default_factory=list)
    influx_url: Optional[str] = None      # e.g. http://127.0.0.1:8086: enables Slurm's profile plugin
    influx_db: str = "slurm"
    influx_default: str = "Task"          # ProfileInfluxDBDefault: profile every job's tasks
    ports: dict = dataclasses.field(default_factory=dict)  # ctld, slurmd, dbd, mysql
    hardware: dict = dataclasses.field(default_factory=dict)  # from `slurmd -C`
    users: List[str] = dataclasses.field(default_factory=list)  # given associations
    # more slurmd on this machine, each a node of its own (Debian builds Slurm with
    # multiple-slurmd support): multi-node and heterogeneous jobs on one machine
    more_nodes: List[str] = dataclasses.field(default_factory=list)

    @property
    def nodes(self):
        return [self.node] + list(self.more_nodes)


class Layout:
    """Where each file of a cluster lives, below spec.root."""

    def __init__(self, root):
        self.root = root
        self.etc = os.path.join(root, "etc")          # slurm.conf, cgroup.conf, ...
        self.run = os.path.join(root, "run")          # sockets and pid files (mode 755)
        self.log = os.path.join(root, "log")
        self.munge_dir = os.path.join(root, "munge")  # key and seed (mode 700)
        self.db_dir = os.path.join(root, "mysql")
        self.ctld_state = os.path.join(root, "state", "slurmctld")
        self.slurmd_spool = os.path.join(root, "state", "slurmd")
        self.prolog_dir = os.path.join(root, "prolog.d")
        self.epilog_dir = os.path.join(root, "epilog.d")
        self.records = os.path.join(root, "records")  # what the harness' Prolog/Epilog write
        self.jobs = os.path.join(root, "jobs")        # job scripts and outputs (mode 1777)
        self.slurm_conf = os.path.join(self.etc, "slurm.conf")
        self.cgroup_conf = os.path.join(self.etc, "cgroup.conf")
        self.dbd_conf = os.path.join(self.etc, "slurmdbd.conf")
        self.acct_gather_conf = os.path.join(self.etc, "acct_gather.conf")
        self.munge_key = os.path.join(self.munge_dir, "munge.key")
        self.munge_socket = os.path.join(self.run, "munge.sock")
        self.mysql_socket = os.path.join(self.run, "mysqld.sock")
        self.logs = {name: os.path.join(self.log, name + ".log")
                     for name in ("munged", "mysqld", "slurmdbd", "slurmctld", "slurmd")}

    def make_dirs(self):
        for d, mode in ((self.root, 0o755), (self.etc, 0o755), (self.run, 0o755),
                        (self.log, 0o755), (self.munge_dir, 0o700), (self.db_dir, 0o700),
                        (self.ctld_state, 0o700), (self.slurmd_spool, 0o755),
                        (self.prolog_dir, 0o755), (self.epilog_dir, 0o755),
                        (self.records, 0o755), (self.jobs, 0o1777)):
            os.makedirs(d, exist_ok=True)
            os.chmod(d, mode)


def hardware():
    """The node line `slurmd -C` prints, as a dict (CPUs, Boards, ..., RealMemory)."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("NodeName="))
    hw = dict(kv.split("=", 1) for kv in line.split())
    hw.pop("NodeName")
    return hw


def install_mysql_db(datadir, env):
    """A fresh MariaDB datadir (mariadb-install-db: seconds here, minutes in the guest)."""
    r = subprocess.run([which("mariadb-install-db"), "--no-defaults", f"--datadir={datadir}",
                        "--user=root", "--auth-root-authentication-method=normal",
                        "--skip-test-db", "--skip-name-resolve"],
                       capture_output=True, text=True, env=env)
    if r.returncode:
        raise ClusterError(f"mariadb-install-db failed:\n{r.stdout}{r.stderr}")


def slurm_conf(spec, lay):
    hw = " ".join(f"{k}={v}" for k, v in spec.hardware.items())
    # several slurmd: each its own port, spool, pid file and log (%n: the node's name)
    per_node = "/%n" if spec.more_nodes else ""
    lines = [
        f"ClusterName={CLUSTER_NAME}",
        # slurmctld accepts 'localhost' as its own name, whatever the machine is called
        "SlurmctldHost=localhost(127.0.0.1)",
        f"SlurmctldPort={spec.ports['ctld']}",
        f"SlurmdPort={spec.ports['slurmd']}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={lay.munge_socket}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={lay.ctld_state}",
        f"SlurmdSpoolDir={lay.slurmd_spool}{per_node}",
        f"SlurmctldPidFile={lay.run}/slurmctld.pid",
        f"SlurmdPidFile={lay.run}/slurmd{per_node.replace('/', '-')}.pid",
        f"SlurmctldLogFile={lay.logs['slurmctld']}",
        f"SlurmdLogFile={lay.log}/slurmd{per_node.replace('/', '-')}.log",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        "MpiDefault=none",
        "ProctrackType=proctrack/cgroup",
        "TaskPlugin=task/cgroup",
        "JobAcctGatherType=jobacct_gather/cgroup",
        # short test jobs need samples every second to get any accounting at all
        "JobAcctGatherFrequency=task=1",
        "AccountingStorageType=accounting_storage/slurmdbd",
        "AccountingStorageHost=127.0.0.1",
        f"AccountingStoragePort={spec.ports['dbd']}",
        # with slurmdbd this is the munge socket for talking to it, not a password
        f"AccountingStoragePass={lay.munge_socket}",
        "JobCompType=jobcomp/none",
        "SchedulerType=sched/backfill",
        # schedule a batch job when it is submitted, not up to 3 s later
        "SchedulerParameters=batch_sched_delay=0",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        # without it a job takes the whole node's memory and jobs run one at a time
        "DefMemPerCPU=500",
        # Contain: an extern step per job, and the Prolog runs at allocation time
        "PrologFlags=Contain",
        f"Prolog={lay.prolog_dir}/*",
        f"Epilog={lay.epilog_dir}/*",
        "PrologEpilogTimeout=60",
        # a node that was down (e.g. slurmd restarted) comes back by itself
        "ReturnToService=2",
        # short waits so a test session does not idle: cancel -> SIGKILL, job end -> gone
        "KillWait=2",
        "MinJobAge=300",
        "InactiveLimit=0",
        "MessageTimeout=20",
        "SlurmdTimeout=300",
        "SlurmctldTimeout=300",
        f"TmpFS={lay.root}/tmp",
    ] + [f"NodeName={n} NodeAddr=127.0.0.1 NodeHostname={n} Port={slurmd_port(spec, n)} "
         f"{hw} State=UNKNOWN" for n in spec.nodes] + [
        f"PartitionName={PARTITION} Nodes={','.join(spec.nodes)} Default=YES "
        "MaxTime=INFINITE State=UP",
    ]
    if spec.influx_url:
        lines += ["AcctGatherProfileType=acct_gather_profile/influxdb"]
    return "\n".join(lines) + "\n"


def slurmd_port(spec, node):
    return spec.ports["slurmd" if node == spec.node else f"slurmd:{node}"]


def cgroup_conf(spec):
    lines = ["CgroupAutomount=no", "CgroupMountpoint=/sys/fs/cgroup",
             "ConstrainCores=yes", "ConstrainRAMSpace=yes"]
    if spec.cgroup == "v2":
        # no systemd to ask for the scope: slurmd makes its own below system.slice
        lines += ["CgroupPlugin=cgroup/v2", "IgnoreSystemd=yes"]
    else:
        lines += ["CgroupPlugin=cgroup/v1"]
    return "\n".join(lines) + "\n"


def acct_gather_conf(spec):
    return "\n".join([
        f"ProfileInfluxDBHost={spec.influx_url.rstrip('/')}",
        f"ProfileInfluxDBDatabase={spec.influx_db}",
        "ProfileInfluxDBRTPolicy=autogen",
        f"ProfileInfluxDBDefault={spec.influx_default}",
    ]) + "\n"


def slurmdbd_conf(spec, lay):
    return "\n".join([
        "AuthType=auth/munge",
        f"AuthInfo=socket={lay.munge_socket}",
        "DbdAddr=127.0.0.1",
        "DbdHost=localhost",
        f"DbdPort={spec.ports['dbd']}",
        "SlurmUser=root",
        "DebugLevel=info",
        f"LogFile={lay.logs['slurmdbd']}",
        f"PidFile={lay.run}/slurmdbd.pid",
        "StorageType=accounting_storage/mysql",
        "StorageHost=127.0.0.1",
        f"StoragePort={spec.ports['mysql']}",
        "StorageUser=root",
        "StorageLoc=slurm_acct_db",
    ]) + "\n"


def write_configs(spec, lay):
    """Write slurm.conf, cgroup.conf, slurmdbd.conf (mode 600, as slurmdbd demands) and,
    with an InfluxDB URL, acct_gather.conf into lay.etc."""
    files = {lay.slurm_conf: slurm_conf(spec, lay), lay.cgroup_conf: cgroup_conf(spec),
             lay.dbd_conf: slurmdbd_conf(spec, lay)}
    if spec.influx_url:
        files[lay.acct_gather_conf] = acct_gather_conf(spec)
    for path, text in files.items():
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o600 if path == lay.dbd_conf else 0o644)
    os.makedirs(os.path.join(lay.root, "tmp"), exist_ok=True)


def script_name(path, index):
    """The name a Prolog/Epilog gets in prolog.d (Slurm runs the glob in sorted order)."""
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(path))
    return f"{50 + index:02d}-{base}"
