"""Which schedulers run jobs on this node: their daemons running, or the doctor inside one
of their jobs (never their tools or a configuration file, which a node may keep from
another scheduler); each one's checks are its registered object's (jobmon.schedulers)."""
import os

from .. import schedulers as registry
from .check import OK, WARN, Check

# the registered schedulers' tags (jobmon.schedulers: each one's checks are its object's);
# what shows one runs jobs here: its daemons (by process name), or a job's environment
# variable
SCHEDULERS = registry.tags()
DAEMONS = {s.tag: s.daemons for s in registry.all()}
JOB_ENV = {s.tag: s.job_env for s in registry.all()}


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
