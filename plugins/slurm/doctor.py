"""`jobmon doctor` on a Slurm node: Prolog= and Epilog= as slurmctld has them (`scontrol
show config`), the wrappers they run and what those name (the interpreter, the site
file, the run directory), that interpreter as an unprivileged user, where the samplers'
warnings go, and whether Slurm makes the job cgroups the samplers look for.
Run outside jobs."""
import glob
import os
import sys

from jobmon.cgroups import search as cgroup_search
from jobmon import config
from jobmon.job import job_user_check
from jobmon.doctor import FAIL, OK, WARN, Check, interpreter, warnings_to

from . import hooks, install
from .scheduler import SCHEDULER

# this jobmon's own installer, beside the interpreter running the doctor
HOOKS_INSTALL = os.path.join(os.path.dirname(sys.executable), "jobmon-slurm-hooks") + " install"
INSTALL = (f"{HOOKS_INSTALL} /etc/slurm, then Prolog=/etc/slurm/jobmon-prolog and "
           "Epilog=/etc/slurm/jobmon-epilog in slurm.conf; scontrol reconfigure")


def slurmd_conf(proc="/proc"):
    """The slurm.conf a running slurmd reads (its -f, or its SLURM_CONF), or None."""
    for pid in os.listdir(proc):
        try:
            with open(os.path.join(proc, pid, "comm")) as f:
                if f.read().strip() != "slurmd":
                    continue
            with open(os.path.join(proc, pid, "cmdline"), "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
            with open(os.path.join(proc, pid, "environ"), "rb") as f:
                env = dict(v.partition("=")[::2] for v in
                           f.read().decode(errors="replace").split("\0") if "=" in v)
        except OSError:     # not a process, or gone meanwhile
            continue
        for i, a in enumerate(args):
            if a == "-f" and i + 1 < len(args):
                return args[i + 1]
            if a.startswith("-f") and len(a) > 2:
                return a[2:]
        if env.get("SLURM_CONF"):
            return env["SLURM_CONF"]
    return None


def show_config(node):
    """{key: value} of `scontrol show config` (with the slurm.conf the node's slurmd
    reads, where this environment names none); raises RuntimeError."""
    env = None
    if not node.env.get("SLURM_CONF"):
        conf = slurmd_conf()
        if conf:
            env = dict(node.env, SLURM_CONF=conf)
    code, out, err = node.run([node.tool("scontrol") or "scontrol", "show", "config"], env=env)
    if code != 0:
        lines = (err or out).strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"exit status {code}")
    conf = {}
    for line in out.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            conf[key.strip()] = value.strip()
    return conf


def scripts(value):
    """The files a Prolog= or Epilog= value runs: comma-separated, each a path or glob."""
    if not value or value == "(null)":
        return []
    out = []
    for part in value.split(","):
        out += sorted(glob.glob(part.strip())) if any(c in part for c in "*?[") \
            else [part.strip()]
    return out


def jobmon_wrapper(value):
    """(path, parsed wrapper) of the first of jobmon's wrappers a Prolog=/Epilog= runs."""
    for path in scripts(value):
        try:
            with open(path, errors="replace") as f:
                parsed = install.parse_wrapper(f.read(8192))
        except OSError:
            continue
        if parsed:
            return path, parsed
    return None, None


def _shown(path):
    real = os.path.realpath(path)
    return path if real == path else f"{path} (-> {real})"


def checks(node):
    try:
        conf = show_config(node)
    except RuntimeError as e:
        return [Check("slurm", FAIL, f"`scontrol show config` failed: {e}",
                      "is slurmctld up, and SLURM_CONF the slurm.conf slurmd reads?")]
    out = []
    prolog, wrapper = jobmon_wrapper(conf.get("Prolog"))
    epilog, _ = jobmon_wrapper(conf.get("Epilog"))
    if prolog is None or epilog is None:
        missing = " and ".join(k for k, v in (("Prolog", prolog), ("Epilog", epilog)) if not v)
        out.append(Check("slurm", FAIL, f"{missing} ({conf.get('Prolog')!s} / "
                                        f"{conf.get('Epilog')!s}) run(s) none of jobmon's "
                                        "wrappers", INSTALL))
    else:
        flags = conf.get("PrologFlags", "")
        contain = "Contain" in flags
        out.append(Check("slurm", OK if contain else WARN,
                         f"Prolog runs {_shown(prolog)}, Epilog runs {_shown(epilog)}; "
                         f"PrologFlags={flags}",
                         "PrologFlags=Contain (an allocation's cgroup then lives from its "
                         "start to its end)"))
    out.append(job_cgroups(conf))
    if wrapper is None:
        return out
    out += wrapper_checks(node, wrapper)
    return out


def wrapper_checks(node, wrapper):
    out = []
    site = wrapper.get("JOBMON_CONFIG", "") or config.DEFAULT_PATH
    problem = job_user_check.site_file_problem(site, f"rerun {HOOKS_INSTALL} DIR "
                                                     "--config=THE_SITE_FILE")
    if problem:
        out.append(Check("site file", FAIL, f"the Prolog names JOBMON_CONFIG={problem.reason}",
                         problem.fix))
    elif os.path.realpath(site) != os.path.realpath(node.config_path):
        out.append(Check("site file", WARN, f"the samplers read {site}, this doctor "
                                            f"{node.config_path}", f"jobmon doctor --config={site}"))
    else:
        out.append(Check("site file", OK, f"the samplers read {site}"))
    if not os.access(wrapper.get("HOOKS", ""), os.R_OK):
        out.append(Check("interpreter", FAIL, f"{wrapper.get('HOOKS')} (HOOKS) is missing",
                         INSTALL))
    else:
        out.append(interpreter("interpreter", wrapper.get("PYTHON", ""), SCHEDULER.per_job_modules,
                               node,
                               flags=("-I", "-S"), site=True))
    run_dir = wrapper.get("run_dir", hooks.RUN_DIR)
    where = node.cfg["slurm"]["warnings"] if node.cfg is not None else "syslog"
    out.append(warnings_to("warnings", where, node, section=SCHEDULER.config_section,
                           fallback=os.path.join(run_dir, hooks.WARNINGS_FILE)))
    return out


def job_cgroups(conf):
    """Whether Slurm puts jobs in cgroups (proctrack/cgroup, task/cgroup) and where the
    samplers will find them."""
    track, task = conf.get("ProctrackType", ""), conf.get("TaskPlugin", "")
    if "cgroup" not in track:
        return Check("job cgroups", FAIL, f"ProctrackType={track}: Slurm makes no job cgroup, "
                                          "and the samplers measure nothing",
                     "ProctrackType=proctrack/cgroup and TaskPlugin=task/cgroup in slurm.conf")
    roots = cgroup_search.roots()
    trees = []
    for top in sorted(set(roots.values())):
        for d in (top, os.path.join(top, "system.slice")):
            try:
                trees += [os.path.join(d, n) for n in os.listdir(d)
                          if n.startswith("slurm") or n.endswith("slurmstepd.scope")]
            except OSError:
                pass
    where = ", ".join(trees) if trees else "none yet (made with the first job)"
    return Check("job cgroups", OK if "cgroup" in task else WARN,
                 f"ProctrackType={track}, TaskPlugin={task}; cgroup "
                 f"{'v2' if 'v2' in roots else 'v1'}; Slurm's trees: {where}",
                 "TaskPlugin=task/cgroup (with it each step's tasks are in their cgroup)")
