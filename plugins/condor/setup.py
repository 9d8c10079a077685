"""`jobmon-condor-setup`: install jobmon as an HTCondor execute node's job wrapper.

Writes the wrapper the starter runs (USER_JOB_WRAPPER) and the two configuration
snippets for /etc/condor/config.d, once it has checked they can work: the starter runs
the wrapper as the job's user, so its interpreter must start and import jobmon as an
unprivileged user (an interpreter under a private directory holds every job: the starter
cannot execute the wrapper), and the site file it names must exist and be readable by
every user (without it every job writes to its user's home store, and nothing to the
spool). Refused otherwise, with the reason and the fix.

The wrapper is a small script of its own rather than pip's console script: `python -IS`
skips the scan of site-packages and the user's site (a few to tens of ms at every job's
start), and finds jobmon only where it was installed; the site file's path is in it, so
no job's environment needs it (nor can choose another). Run outside jobs.
"""
import os
import sys

from jobmon import config
from jobmon.job import job_user_check

from .scheduler import SCHEDULER

WRAPPER = '''#!{python} {flags}
# jobmon's HTCondor job wrapper, written by `jobmon-condor-setup`: USER_JOB_WRAPPER =
# {target}. The starter runs it as the job's user; it starts the job, samples it
# and exits with the job's exact status (docs/htcondor.md).
import sys
{path_line}from jobmon.plugins.condor.wrapper import main
main(config={config!r})
'''
WRAPPER_CONF = """# jobmon on this HTCondor execute node (docs/htcondor.md); written by jobmon-condor-setup.
# Every job starts through jobmon's wrapper, which samples it and writes to the node's
# spool. condor_reconfig; jobs started from then on are monitored.
USER_JOB_WRAPPER = {wrapper}

# Advertise it, so that jobs can ask for monitored nodes while it is rolled out
# (requirements = HasJobMonitor):
HasJobMonitor = true
STARTD_ATTRS = $(STARTD_ATTRS) HasJobMonitor

# A job that cannot be executed: the wrapper tells the shadow through Chirp's delayed
# updates, and access points with jobmon-access-point.conf hold the job, as without a
# wrapper (only the HoldReasonCode differs: 26, not 6). Where that is not set up the job
# completes with exit status 126/127 and the reason in its stderr. Without Chirp the
# wrapper writes _CONDOR_WRAPPER_ERROR_FILE, which the starter cannot read with the
# default JOB_EXECDIR_PERMISSIONS = user (the same completion); with "world" it can, and
# requeues the job, again and again: keep the default.
"""
CRON_CONF = """# jobmon's node shipper, run by the startd every minute as HTCondor's service user
# (condor), who owns the spool ({spool}), the state directory
# ({state}) and the password or token file (mode 0600); job users never can
# read it. Written by jobmon-condor-setup (docs/htcondor.md).
STARTD_CRON_JOBLIST = $(STARTD_CRON_JOBLIST) JOBMON
STARTD_CRON_JOBMON_EXECUTABLE = {jobmon}
STARTD_CRON_JOBMON_ARGS = ship --timeout 50
# a startd cron job gets no environment but this
STARTD_CRON_JOBMON_ENV = "JOBMON_CONFIG={config}"
STARTD_CRON_JOBMON_PERIOD = 60s
STARTD_CRON_JOBMON_MODE = Periodic
STARTD_CRON_JOBMON_RECONFIG = false
# exit status 75 (server unreachable) only means: try again next period, data stays spooled

# Where a node rather than one central host settles its own runs with the schedd
# (`jobmon reconcile`, docs/accounting.md: the startd's condor user has the pool's
# credentials for the schedd; [condor] schedd in jobmon.toml names it). Every 5 minutes:
# one schedd query per pass for this node's ended runs. Leave it out where one host runs
# deploy/jobmon-reconcile.timer for all nodes.
#STARTD_CRON_JOBLIST = $(STARTD_CRON_JOBLIST) JOBMONRECONCILE
#STARTD_CRON_JOBMONRECONCILE_EXECUTABLE = {jobmon}
#STARTD_CRON_JOBMONRECONCILE_ARGS = reconcile --since 14d
#STARTD_CRON_JOBMONRECONCILE_ENV = "JOBMON_CONFIG={config}"
#STARTD_CRON_JOBMONRECONCILE_PERIOD = 300s
#STARTD_CRON_JOBMONRECONCILE_MODE = Periodic
#STARTD_CRON_JOBMONRECONCILE_RECONFIG = false
"""
OPTIONS = ("bin-dir", "condor-config-dir", "config", "python", "check-user")
USAGE = ("usage: jobmon-condor-setup [--bin-dir=/usr/local/bin] "
         "[--condor-config-dir=/etc/condor/config.d] [--config=FILE] [--python=EXE] "
         "[--check-user=NAME] [--no-shipper-cron]\n")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    opts, cron = {}, True
    for a in argv:
        key, sep, value = a[2:].partition("=")
        if a == "--no-shipper-cron":
            cron = False
        elif a.startswith("--") and sep and key in OPTIONS:
            opts[key] = value
        else:
            sys.stderr.write(USAGE)
            return 2
    python = opts.get("python", sys.executable)
    site_file = opts.get("config", config.DEFAULT_PATH)
    bin_dir = opts.get("bin-dir", "/usr/local/bin")
    conf_dir = opts.get("condor-config-dir", "/etc/condor/config.d")
    try:
        text = wrapper_text(python, os.path.join(bin_dir, "jobmon-condor-wrapper"), site_file,
                            opts.get("check-user", job_user_check.CHECK_USER))
        jobmon = os.path.join(os.path.dirname(python), "jobmon")
        if cron and not os.access(jobmon, os.X_OK):
            raise job_user_check.Problem(f"no {jobmon} for the shipper cron", "give --python "
                                         "the virtualenv's python (its bin/ holds jobmon)")
    except job_user_check.Problem as e:
        sys.stderr.write(f"jobmon-condor-setup: not installed: {e.reason}\n  fix: {e.fix}\n")
        return 1
    target = os.path.join(bin_dir, "jobmon-condor-wrapper")
    write(target, text, 0o755)
    write(os.path.join(conf_dir, "50-jobmon-wrapper.conf"), WRAPPER_CONF.format(wrapper=target))
    written = [target, os.path.join(conf_dir, "50-jobmon-wrapper.conf")]
    if cron:
        cfg = config.load(site_file)
        written.append(os.path.join(conf_dir, "51-jobmon-shipper-cron.conf"))
        write(written[-1], CRON_CONF.format(jobmon=jobmon, config=site_file,
                                            spool=cfg["spool"]["dir"],
                                            state=cfg["shipper"]["state_dir"]))
    print("\n".join(written))
    return 0


def wrapper_text(python, target, site_file, user):
    """The wrapper script, once `python` is known to import jobmon as `user` the way the
    script will; raises job_user_check.Problem."""
    job_user_check.check_site_file(site_file)
    said = job_user_check.check(python, SCHEDULER.per_job_modules, flags=("-I", "-S"),
                                site=True, user=user)
    package = said.split(" ", 1)[1]
    if os.path.basename(package) == "jobmon":    # a regular install: -IS and its path
        path = os.path.dirname(package)
        job_user_check.check(python, SCHEDULER.per_job_modules, flags=("-I", "-S"),
                             path=[path], user=user)
        return WRAPPER.format(python=python, flags="-IS", target=target, config=site_file,
                              path_line=f"sys.path.append({path!r})\n")
    # an editable install finds jobmon through site-packages' hooks only
    return WRAPPER.format(python=python, flags="-I", target=target, config=site_file,
                          path_line="")


def write(target, text, mode=0o644):
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.rename(tmp, target)


if __name__ == "__main__":
    sys.exit(main())
