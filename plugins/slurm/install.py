"""`jobmon-slurm-hooks install DIR`: the sh wrappers slurm.conf's Prolog= and Epilog= name,
written once jobmon has checked they can work: the interpreter they run must start and
import jobmon as an unprivileged user (the sampler drops to the job's user), and the
site file they name must exist and be readable by every user (the samplers read it as
the job's user; without it they write to the users' home stores, not to the spool). Refused otherwise, with the reason and the fix:
a Prolog that cannot work loses every job's record without a word.

Run outside jobs (an admin's command); hooks.py is what slurmd runs.
"""
import os
import sys

from jobmon import config
from jobmon.job import job_user_check

from . import hooks
from .scheduler import SCHEDULER

# where hooks.py lives in the example installation of deploy/slurm
DEPLOY_HOOKS = "/opt/jobmon/lib/python3.11/site-packages/jobmon/plugins/slurm/hooks.py"
PROLOG_LIMIT = 3     # seconds before the wrapper kills a Prolog that hangs
USAGE = ("usage: jobmon-slurm-hooks install DIR [--config=FILE] [--run-dir=DIR] "
         "[--python=EXE] [--prolog-limit=S] [--check-user=NAME]\n")

WRAPPER = """#!/bin/sh
# jobmon's Slurm {kind} (slurm.conf: {conf_key}={target}).
# Written by `jobmon-slurm-hooks install`. Slurm runs it as root with no PATH, so every
# path here is absolute. It exits 0 whatever happens -- a failing {kind} drains the node --
# and quickly: {what}
PYTHON={python}
HOOKS={hooks}
JOBMON_CONFIG={config}
export JOBMON_CONFIG
RUN="{run}"
if [ -x /usr/bin/timeout ]; then set -- /usr/bin/timeout -s KILL {limit}; fi
# hooks.py imported, not run as a script: its compiled form is then used, not compiled anew
[ -x "$PYTHON" ] && [ -r "$HOOKS" ] && "$@" "$PYTHON" -I -S -c "$RUN" "$HOOKS" \\
    {entry} --run-dir={run_dir}{extra} </dev/null >/dev/null 2>&1
exit 0
"""
# `python -c RUN HOOKS ARGS`: the samplers show HOOKS on their command line
RUN_HOOKS = ("import sys; sys.path[:0] = [sys.argv[1].rpartition('/')[0]]; import hooks; "
             "hooks.main(sys.argv[2:])")
WHAT = {"prolog": "it only starts the job's sampler, detached.",
        "epilog": "it stops the job's sampler (waiting {wait:g} s at most)."}


def wrapper(kind, target, python, hooks_path, config_path, run_dir=hooks.RUN_DIR,
            wait=hooks.EPILOG_WAIT, prolog_limit=PROLOG_LIMIT):
    """The text of the sh wrapper slurm.conf's Prolog= or Epilog= names."""
    limit = prolog_limit if kind == "prolog" else int(wait) + 5
    extra = "" if kind == "prolog" else f" --wait={wait:g}"
    return WRAPPER.format(kind=kind.capitalize(), conf_key=kind.capitalize(), target=target,
                          what=WHAT[kind].format(wait=wait), python=python, hooks=hooks_path,
                          config=config_path, limit=limit, entry=kind, run_dir=run_dir,
                          extra=extra, run=RUN_HOOKS)


def parse_wrapper(text):
    """{"PYTHON": ..., "HOOKS": ..., "JOBMON_CONFIG": ..., "run_dir": ...} of a wrapper
    this module wrote (for `jobmon doctor`), or None for any other file."""
    if "Written by `jobmon-slurm-hooks install`" not in text:
        return None
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key in ("PYTHON", "HOOKS", "JOBMON_CONFIG"):
            out[key] = value
        if "--run-dir=" in line:
            out["run_dir"] = line.split("--run-dir=", 1)[1].split()[0]
    return out


def main(argv=None):
    """jobmon-slurm-hooks install DIR [...]: write DIR/jobmon-prolog and DIR/jobmon-epilog
    for slurm.conf, once they are known to work; 1 (and nothing written) if they cannot."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["deploy"] and len(argv) == 2:   # the examples in deploy/slurm
        for kind in ("prolog", "epilog"):
            write_wrapper(os.path.join(argv[1], f"jobmon-{kind}"),
                          wrapper(kind, f"/etc/slurm/jobmon-{kind}", "/opt/jobmon/bin/python3",
                                  DEPLOY_HOOKS, config.DEFAULT_PATH))
        return 0
    args = [a for a in argv if not a.startswith("--")]
    if args[:1] == ["install"]:
        args = args[1:]
    opts = hooks.options(argv)
    limit = opts.get("prolog-limit", str(PROLOG_LIMIT))
    if len(args) != 1 or not limit.isdigit() or int(limit) < 1:
        sys.stderr.write(USAGE)
        return 2
    python = opts.get("python", sys.executable)
    config_path = opts.get("config", config.DEFAULT_PATH)
    hooks_path = os.path.abspath(hooks.__file__)
    try:
        problems(python, config_path, opts.get("check-user", job_user_check.CHECK_USER))
    except job_user_check.Problem as e:
        sys.stderr.write(f"jobmon-slurm-hooks: not installed: {e.reason}\n  fix: {e.fix}\n")
        return 1
    for kind in ("prolog", "epilog"):
        target = os.path.join(os.path.abspath(args[0]), f"jobmon-{kind}")
        write_wrapper(target, wrapper(kind, target, python, hooks_path, config_path,
                                      opts.get("run-dir", hooks.RUN_DIR),
                                      prolog_limit=int(limit)))
        print(target)
    return 0


def problems(python, config_path, user):
    """Raise job_user_check.Problem for what would keep the wrappers from working."""
    job_user_check.check_site_file(config_path)
    # the sampler's own start: -I -S, then site-packages, as the job's user
    job_user_check.check(python, SCHEDULER.per_job_modules, flags=("-I", "-S"), site=True,
                         user=user)


def write_wrapper(target, text):
    tmp = target + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o755)
    os.rename(tmp, target)


if __name__ == "__main__":
    sys.exit(main())
