"""`jobmon doctor` on an HTCondor execute node: USER_JOB_WRAPPER and the shipper's startd
cron as HTCondor's configuration has them (`condor_config_val`), the wrapper that names
and what it runs with (its interpreter, as an unprivileged user; its site file), the
cron's user owning the spool and state, where its warnings go, and whether HTCondor can
give jobs cgroups of their own.
Run outside jobs."""
import grp
import os
import pwd
import shlex
import sys

from jobmon import cgroups, config
from jobmon.job import job_user_check
from jobmon.doctor import FAIL, OK, WARN, Check, interpreter, warnings_to

from .scheduler import SCHEDULER

KNOBS = ("USER_JOB_WRAPPER", "STARTER_JOB_ENVIRONMENT", "STARTD_CRON_JOBLIST",
         "STARTD_CRON_JOBMON_EXECUTABLE", "STARTD_CRON_JOBMON_ARGS", "STARTD_CRON_JOBMON_ENV",
         "CONDOR_IDS")
# this jobmon's own installer, beside the interpreter running the doctor
SETUP = (os.path.join(os.path.dirname(sys.executable), "jobmon-condor-setup") +
         " (docs/htcondor.md), then condor_reconfig")


def knobs(node):
    """{knob: value, or None where it is not defined} from condor_config_val; raises
    RuntimeError where there is no HTCondor configuration to ask (no condor_config_val,
    or it finds no configuration): nothing is then known about any knob."""
    tool = node.tool("condor_config_val")
    if not tool:
        raise RuntimeError("HTCondor's condor_config_val is not on PATH")
    out = {}
    for k in KNOBS:
        code, value, err = node.run([tool, k])
        if code == 0:
            out[k] = value.strip()
        elif f"Not defined: {k}" in err:    # what condor_config_val says of an unset knob
            out[k] = None
        else:
            lines = (err or value).strip().splitlines()
            raise RuntimeError(f"`condor_config_val {k}` failed: "
                               f"{lines[-1] if lines else f'exit status {code}'}")
    return out


def checks(node):
    try:
        k = knobs(node)
    except RuntimeError as e:
        return [Check("htcondor", FAIL, f"{e}: no HTCondor configuration to check here",
                      "run the doctor where HTCondor runs jobs, with its tools on PATH and "
                      "CONDOR_CONFIG as its daemons have it (--scheduler=auto checks the "
                      "schedulers that run jobs here)")]
    return evaluate(k, node)


def read_wrapper(path):
    """What a wrapper script runs with: {"python", "flags", "path", "config", "ours"}."""
    with open(path, errors="replace") as f:
        text = f.read(8192)
    first = text.splitlines()[0] if text.startswith("#!") else ""
    words = first[2:].split()
    out = {"python": words[0] if words else "", "flags": tuple(words[1:]), "path": [],
           "config": None, "ours": "jobmon.plugins.condor.wrapper" in text}
    for line in text.splitlines():
        if line.startswith("sys.path.append("):
            out["path"].append(line[len("sys.path.append("):-1].strip("'\""))
        if line.startswith("main(config="):
            out["config"] = line[len("main(config="):-1].strip("'\"")
    return out


def job_environment(value):
    """{name: value} of STARTER_JOB_ENVIRONMENT or a cron's _ENV (new syntax: in double
    quotes, space-separated)."""
    if not value:
        return {}
    text = value.strip()
    if text.startswith('"') and text.endswith('"'):
        text = text[1:-1]
    return dict(w.split("=", 1) for w in shlex.split(text) if "=" in w)


def evaluate(k, node):
    """The checks from the knobs' values (k: {knob: value or None})."""
    wrapper = k.get("USER_JOB_WRAPPER")
    if not wrapper:
        return [Check("htcondor", FAIL, "USER_JOB_WRAPPER is not set: jobs run without jobmon",
                      SETUP)]
    try:
        w = read_wrapper(wrapper)
    except OSError as e:
        return [Check("htcondor", FAIL, f"USER_JOB_WRAPPER = {wrapper}: {e.strerror}: every "
                                        "job goes on hold", SETUP)]
    if not w["ours"]:
        return [Check("htcondor", FAIL, f"USER_JOB_WRAPPER = {wrapper} is not jobmon's", SETUP)]
    out = [Check("htcondor", OK, f"USER_JOB_WRAPPER = {wrapper}")]
    site = w["config"] or job_environment(k.get("STARTER_JOB_ENVIRONMENT")).get(
        "JOBMON_CONFIG") or config.DEFAULT_PATH
    out.append(_site_file("site file", site, node, "the wrapper"))
    flags = w["flags"][0] if w["flags"] else ""
    out.append(interpreter("interpreter", w["python"], SCHEDULER.per_job_modules, node,
                           flags=tuple(f"-{c}" for c in flags.lstrip("-")),
                           path=w["path"]))
    out.append(shipper_cron(k, node))
    where = node.cfg["condor"]["warnings"] if node.cfg is not None else "syslog"
    out.append(warnings_to("warnings", where, node, section=SCHEDULER.config_section))
    out.append(job_cgroups())
    return out


def _site_file(name, site, node, who):
    problem = job_user_check.site_file_problem(site, f"rerun {SETUP.split()[0]} "
                                                     "--config=THE_SITE_FILE")
    if problem:
        return Check(name, FAIL, f"{who} reads {problem.reason}", problem.fix)
    if os.path.realpath(site) != os.path.realpath(node.config_path):
        return Check(name, WARN, f"{who} reads {site}, this doctor {node.config_path}",
                     f"jobmon doctor --config={site}")
    return Check(name, OK, f"{who} reads {site}")


def shipper_cron(k, node):
    """The startd's cron job that runs the shipper (or a note that none is configured)."""
    if node.cfg is not None and not node.cfg.uses_influxdb:
        return Check("shipper cron", OK, "nothing to ship (the embedded store)")
    if "JOBMON" not in (k.get("STARTD_CRON_JOBLIST") or "").split():
        return Check("shipper cron", WARN, "no JOBMON in STARTD_CRON_JOBLIST: the shipper "
                                           "must run as a service (deploy/jobmon-ship.service)",
                     SETUP)
    exe = k.get("STARTD_CRON_JOBMON_EXECUTABLE") or ""
    if not os.access(exe, os.X_OK):
        return Check("shipper cron", FAIL, f"STARTD_CRON_JOBMON_EXECUTABLE = {exe}: not an "
                                           "executable", SETUP)
    # a startd cron job gets no environment but its _ENV
    site = job_environment(k.get("STARTD_CRON_JOBMON_ENV")).get("JOBMON_CONFIG")
    if site is None and node.config_path != config.DEFAULT_PATH:
        return Check("shipper cron", FAIL, "STARTD_CRON_JOBMON_ENV has no JOBMON_CONFIG, so "
                                           f"the shipper reads {config.DEFAULT_PATH}, not "
                                           f"{node.config_path}: it ships nothing",
                     f'STARTD_CRON_JOBMON_ENV = "JOBMON_CONFIG={node.config_path}"')
    return cron_owns(k, node) or _site_file(
        "shipper cron", site or config.DEFAULT_PATH, node,
        f"the shipper cron ({exe} {k.get('STARTD_CRON_JOBMON_ARGS') or ''})")


def cron_user(k):
    """(uid, user, group) HTCondor runs its startd cron jobs as: CONDOR_IDS, else the
    `condor` user; None when neither is known."""
    ids = (k.get("CONDOR_IDS") or "").strip()
    try:
        if ids:
            uid, gid = (int(x) for x in ids.split("."))
        else:
            p = pwd.getpwnam("condor")
            uid, gid = p.pw_uid, p.pw_gid
        return uid, pwd.getpwuid(uid).pw_name, grp.getgrgid(gid).gr_name
    except (ValueError, KeyError):
        return None


def cron_owns(k, node):
    """Check, or None: the spool and state directories that are there belong to the
    cron's user (it lists the spool and keeps its state; a directory left to root is
    closed to it, whoever the site checks take for the shipper)."""
    who = cron_user(k)
    if who is None or node.cfg is None:
        return None
    uid, user, group = who
    wrong = []
    for d in (node.cfg["spool"]["dir"], node.cfg["shipper"]["state_dir"]):
        try:
            if os.stat(d).st_uid != uid:
                wrong.append(d)
        except OSError:      # missing: the spool and state checks say so
            pass
    if not wrong:
        return None
    return Check("shipper cron", FAIL, f"the shipper cron runs as {user}, and "
                                       f"{' and '.join(wrong)} are not {user}'s: it cannot "
                                       "ship the spool or keep its state",
                 f"chown {user}:{group} {' '.join(wrong)}")


def job_cgroups(mountinfo=None):
    """Whether the starter can put jobs in cgroups of their own here: cgroup v2 with
    controllers, or v1 with cpu and cpuacct mounted together (HTCondor falls back to its
    procd otherwise, and the wrapper measures the job's process tree)."""
    if mountinfo is None:
        with open("/proc/self/mountinfo") as f:
            mountinfo = f.read()
    mounts = cgroups.parse_mountinfo(mountinfo)
    if "memory" not in mounts and "v2" in mounts:
        return Check("job cgroups", OK, "cgroup v2: the starter gives each job a cgroup; "
                                        "the wrapper measures it (job-cgroup)")
    if mounts.get("cpu") and mounts.get("cpu") == mounts.get("cpuacct"):
        return Check("job cgroups", OK, "cgroup v1 with cpu,cpuacct together: the starter "
                                        "gives each job a cgroup")
    return Check("job cgroups", WARN, "cgroup v1 with cpu and cpuacct mounted apart: "
                                      "HTCondor cannot use cgroups and tracks jobs with its "
                                      "procd; jobmon measures each job's process tree",
                 "mount cpu,cpuacct together, or use cgroup v2")
