"""`jobmon doctor`: check a node end to end, one line per check (ok / warn / fail) with
the fix. Run as root on an execute or compute node (it runs jobmon's interpreter as an
unprivileged user and reads the shipper's state), outside any job.

The checks that hold for every node are here and in site.py (the site file, the store,
the spool and state directories, the shipper, how jobs would be measured, the GPU
reader); each scheduler's own (its daemons' knobs as they see them, its entry points'
interpreter, where its warnings go) are in its plugin's doctor module, named in
SCHEDULERS. A scheduler's checks run where it runs jobs (its execute daemon is running,
or the doctor runs inside one of its jobs), or when asked for: never because its tools
or a configuration file are here (a node may keep another scheduler's leftovers).
"""
import os
import shutil
import subprocess

from ..job import job_user_check

SCHEDULERS = {"htcondor": ("jobmon.plugins.condor.doctor", "condor_config_val"),
              "slurm": ("jobmon.plugins.slurm.doctor", "scontrol")}
# what shows a scheduler runs jobs here: its daemons (by process name), or a job's
# environment variable
DAEMONS = {"htcondor": ("condor_master", "condor_startd", "condor_starter"),
           "slurm": ("slurmd", "slurmstepd")}
JOB_ENV = {"htcondor": "_CONDOR_JOB_AD", "slurm": "SLURM_JOB_ID"}
OK, WARN, FAIL = "ok", "warn", "fail"


class Check:
    """One line of the doctor's answer."""

    __slots__ = ("name", "status", "message", "fix")

    def __init__(self, name, status, message, fix=""):
        self.name, self.status, self.message, self.fix = name, status, message, fix

    def as_dict(self):
        return {"check": self.name, "status": self.status, "message": self.message,
                "fix": self.fix}

    def line(self):
        fix = f" -- fix: {self.fix}" if self.fix and self.status != OK else ""
        return f"{self.status:4}  {self.name:12} {self.message}{fix}"


class Node:
    """What the checks share: the site file (once read), who to check as, and how to run
    the node's tools."""

    def __init__(self, config_path=None, check_user=job_user_check.CHECK_USER,
                 shipper_user=None, env=None, timeout=30):
        from .. import config
        self.env = os.environ if env is None else env
        self.config_path = config.path_from(config_path, self.env)
        self.cfg = None                 # set by the config check when the file loads
        self.check_user = check_user
        self.shipper_user = shipper_user
        self.timeout = timeout
        self.auto = False               # the schedulers were found, not named

    def tool(self, name):
        return shutil.which(name, path=self.env.get("PATH") or os.defpath)

    def run(self, argv, env=None):
        """(exit status, stdout, stderr) of one of the node's tools."""
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout,
                               env=self.env if env is None else env)
        except (OSError, subprocess.TimeoutExpired) as e:
            return 127, "", str(e)
        return r.returncode, r.stdout, r.stderr


def running(proc="/proc"):
    """The names of the processes running here (as /proc/PID/comm has them)."""
    names = set()
    for pid in os.listdir(proc):
        if pid.isdigit():
            try:
                with open(os.path.join(proc, pid, "comm")) as f:
                    names.add(f.read().strip())
            except OSError:     # gone meanwhile
                pass
    return names


def found(node, proc="/proc"):
    """{scheduler: why it is taken to run jobs here} for the schedulers that do."""
    here = running(proc)
    out = {}
    for name, daemons in DAEMONS.items():
        seen = [d for d in daemons if d in here]
        if seen:
            out[name] = f"{', '.join(seen)} running"
        elif node.env.get(JOB_ENV[name]):
            out[name] = f"inside a job ({JOB_ENV[name]})"
    return out


def schedulers(node, asked="auto"):
    """The schedulers to check: those asked for, or ("auto") those that run jobs here."""
    if asked == "none":
        return []
    if asked != "auto":
        return [s.strip() for s in asked.split(",")]
    return list(found(node))


def scheduler_line(node):
    """Check: which schedulers run jobs here, and why they are taken to."""
    why = found(node)
    if not why:
        return Check("scheduler", WARN, "no scheduler runs jobs here (no "
                     f"{', '.join(d for ds in DAEMONS.values() for d in ds)} running): no "
                     "scheduler's checks", "start the node's scheduler, or name it: "
                     f"--scheduler={'|'.join(SCHEDULERS)}")
    return Check("scheduler", OK, "; ".join(f"{n}: {w}" for n, w in why.items()))


def run(node, asked="auto"):
    """Every check, in order: [Check]."""
    from importlib import import_module
    from . import site
    node.auto = asked == "auto"
    checks = site.checks(node)
    if node.auto:
        checks.append(scheduler_line(node))
    for name in schedulers(node, asked):
        if name not in SCHEDULERS:
            checks.append(Check(name, FAIL, f"no such scheduler (known: "
                                            f"{', '.join(SCHEDULERS)})", "--scheduler=auto"))
            continue
        try:
            checks += import_module(SCHEDULERS[name][0]).checks(node)
        except Exception as e:     # a doctor's bug must not hide the other checks
            checks.append(Check(name, FAIL, f"checks failed: {type(e).__name__}: {e}",
                                "report this as a jobmon bug"))
    return checks


def interpreter(name, python, kind, node, **how):
    """Check: `python` (with the flags and path the entry point uses) starts and imports
    jobmon's per-job code as an unprivileged user."""
    try:
        said = job_user_check.check(python, kind, user=node.check_user, **how)
    except job_user_check.Problem as e:
        return Check(name, FAIL, e.reason, e.fix)
    return Check(name, OK, f"{python} imports jobmon ({said.split(' ', 1)[1]}) as "
                           f"{node.check_user if os.geteuid() == 0 else 'this user'}")


def syslog_receives(path="/dev/log"):
    """Whether a syslog daemon listens on `path` (without one, Python's syslog drops
    every message without a word)."""
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


# where else a scheduler entry point's warnings may go, as its section accepts it
WARNINGS_ELSEWHERE = {
    "condor": '[condor] warnings = "stderr" (into each job\'s own stderr)',
    "slurm": '[slurm] warnings = "/var/log/jobmon-warnings.log", a file job users append to '
             '(touch /var/log/jobmon-warnings.log; chmod 622 /var/log/jobmon-warnings.log)'}


def warnings_to(name, where, node, fallback=None, syslog="/dev/log", section="slurm"):
    """Check: where a scheduler entry point's warnings go, and whether anything gets
    them. fallback: where they go instead when syslog receives nothing, if anywhere;
    section: the site file's section that says where ("condor" or "slurm")."""
    elsewhere = WARNINGS_ELSEWHERE[section]
    if where == "none":
        return Check(name, WARN, "warnings are dropped (warnings = \"none\"): a job that "
                                 "runs unmonitored says so nowhere",
                     f"[{section}] warnings = \"syslog\" with a syslog daemon running, or "
                     f"{elsewhere}")
    if where == "stderr":
        return Check(name, OK, "warnings go to the job's own stderr")
    if where == "syslog":
        if syslog_receives(syslog):
            return Check(name, OK, f"warnings go to syslog ({syslog} receives)")
        also = f"; the samplers write them to {fallback} instead" if fallback else ""
        return Check(name, FAIL, f"warnings go to syslog, and nothing receives syslog here "
                                 f"({syslog}: no listener){also}",
                     f"start a syslog daemon (rsyslog, systemd-journald), or {elsewhere}")
    blocked = _unwritable_by_users(where)
    if blocked:
        return Check(name, FAIL, f"warnings go to {where}, which job users cannot write "
                                 f"({blocked})", f"touch {where}; chmod 622 {where}")
    return Check(name, OK, f"warnings go to {where} (each job's user appends to it)")


def _unwritable_by_users(path):
    """Why other users cannot append to `path` (or create it), or None."""
    try:
        st = os.stat(path)
        return None if st.st_mode & 0o002 else f"mode {st.st_mode & 0o7777:04o}"
    except FileNotFoundError:
        d = os.path.dirname(path) or "."
        try:
            st = os.stat(d)
        except OSError:
            return f"{d} does not exist"
        return None if st.st_mode & 0o002 else f"it does not exist and {d} is not " \
                                                "writable by them"
    except OSError as e:
        return e.strerror
