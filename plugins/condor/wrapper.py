"""jobmon-condor-wrapper: HTCondor's USER_JOB_WRAPPER, run inside every job.

The starter runs `wrapper /full/path/to/job ARGS...` as the job's user, in the scratch
directory, with the job's environment. The wrapper stays the job's top process: the
starter SIGKILLs the rest of a job the moment its top process exits, so a sampler left
beside an exec'd job would lose its last sample. It forks the job, forwards every signal,
takes the last sample once the job has ended, and exits with the job's exact status (the
lifecycle of `jobmon run`, jobmon.job.runner).

It never harms the job. If anything about monitoring fails, the job runs unmonitored; only
a job that cannot be executed makes it tell the shadow (Chirp) or write
_CONDOR_WRAPPER_ERROR_FILE. Its own warnings
go to syslog (condor.warnings), not into the job's stderr. The job's stdio, cwd,
environment and argv are passed on untouched. Standard library only; every jobmon module
is imported inside a guard, so even a broken installation still runs the job.
"""
import io
import os
import sys

ERROR_FILE_ENV = "_CONDOR_WRAPPER_ERROR_FILE"
PROG = "jobmon-condor-wrapper"
# job ad attributes a job may set in its submit file (+JobMonitor = false ...)
OPT_OUT_ATTR = "JobMonitor"
INTERVAL_ATTR = "JobMonitorInterval"
SUMMARY_ATTR = "JobMonitorSummary"
# what the wrapper tells the shadow of a job it cannot execute (Chirp delayed updates)
EXEC_ERRNO, EXEC_REASON = "ChirpJobmonExecErrno", "ChirpJobmonExecReason"
EXEC_RUN = "ChirpJobmonExecShadowBday"
_DEFAULTS = {"enabled": True, "allow_opt_out": True, "interval": 10.0, "min_interval": 1.0,
             "max_interval": 300.0, "warnings": "syslog"}


def main(argv=None, config=None):
    """config: the site configuration's path, as `jobmon-condor-setup` wrote it into the
    wrapper (else $JOBMON_CONFIG or the default path)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        job_cannot_start("no job given (the starter runs: wrapper /path/to/job ARGS...)", 1)
    warnings = Warnings("syslog")
    sys.stderr = warnings    # the job's fd 2 stays the job's: only Python's writes move
    try:
        plan = Plan(argv, os.environ, warnings, config)
        if not plan.monitor:   # opted out: exec'd before the runner is even loaded
            exec_job(argv)
        from jobmon.job import runner
    except Exception as e:   # fail open: the job runs, unmonitored
        warnings.write(f"jobmon: monitoring disabled: {type(e).__name__}: {e}\n")
        exec_job(argv)
    try:
        from jobmon.summary.batches import Known
        from jobmon.plugins.condor.job import QUALIFIER_TAGS, SCHEDULER
        runner.run(plan.args(argv), identity=plan.identity, choose_cgroup=plan.choose_cgroup,
                   start_failed=lambda e: job_cannot_start(str(e), e.status, e.errno, argv),
                   on_end=plan.report_card,
                   # its batches without loading every scheduler: its ids' members
                   # (4711.3 of 4711) are a cluster's (the object's id_members)
                   batches=Known(QUALIFIER_TAGS, (SCHEDULER,)))
    except Exception as e:   # a jobmon bug before the job started: run it all the same
        if _has_children():
            raise
        warnings.write(f"jobmon: monitoring failed: {type(e).__name__}: {e}\n")
        _undo_runner_setup()
        exec_job(argv)


class Plan:
    """What the job's ads and the site's configuration say about monitoring this job.

    The site configuration is read once the job has started (tomllib alone costs more CPU
    than the rest of the start-up), unless the job opts out: then it decides whether the
    job runs unmonitored (exec'd, as without a wrapper)."""

    def __init__(self, argv, environ, warnings, config=None):
        from jobmon.plugins.condor import job as condor
        self.warnings, self.config = warnings, config
        self.job_ad, machine_ad = condor.read_ads(environ)
        self.identity = condor.identity(self.job_ad, machine_ad, environ)
        warnings.job = self.identity.job
        summary = self.job_ad.get(SUMMARY_ATTR)
        self.summary = summary if isinstance(summary, str) and summary else None
        self._site = self._interval = None
        self.monitor = True
        if opted_out(self.job_ad):
            site = defaults() if defaults_decide_opt_out(environ, config) else self.site()
            self.monitor = site["enabled"] and not site["allow_opt_out"]

    def site(self):
        if self._site is None:
            self._site = site_settings(self.warnings, self.config)
            self.warnings.where = self._site["warnings"]
        return self._site

    def interval(self):
        """The sampling interval, first asked for once the job runs. A site that switched
        monitoring off stops it here: the job runs on, unmonitored."""
        if self._interval is None:
            site = self.site()
            if self.config:   # the job runs (with its own environment): from here on the
                os.environ["JOBMON_CONFIG"] = self.config   # sinks and card read this file
            if not site["enabled"]:
                raise MonitoringOff("condor.enabled = false in the site configuration")
            self._interval, requested = interval(self.job_ad.get(INTERVAL_ATTR), site)
            if requested is not None:
                self.identity.tags["interval_requested"] = str(requested)
        return self._interval

    def args(self, argv):
        return Args(self, argv)

    def report_card(self, summary):
        """After the job ended: its report card, where the site and the job ask for one
        (docs/reports.md), appended to the job's stderr (fd 2: the job's own)."""
        from . import card
        card.after_job(summary, self.job_ad, os.environ,
                       lambda msg: self.warnings.write(f"jobmon: {msg}\n"))

    def choose_cgroup(self, name):
        """A cgroup of the job's own below HTCondor's (where it was delegated to the job's
        user), else HTCondor's cgroup for the job with jobmon inside it, else procfs.
        The `measured` tag says which: what the figures include."""
        from jobmon import cgroups
        tags = self.identity.tags
        tags["measured"] = "process-tree"
        try:
            cg = cgroups.for_job("auto", None, name)
            if cg is not None:
                tags["measured"] = "job-cgroup"
                return cg
            cg = own_job_cgroup(cgroups)
        except Exception:   # procfs measures all the same
            return None
        if cg is not None:
            tags["measured"] = "job-cgroup-with-jobmon"
            tags["monitor_rss_bytes"] = str(own_rss())
        return cg


class MonitoringOff(Exception):
    pass


class Args:
    """`jobmon run`'s options for jobmon.job.runner.run, as the wrapper sets them; the interval
    is read (with the site configuration) only when the runner first needs it."""

    def __init__(self, plan, argv):
        self._plan = plan
        self.cmd, self.summary = argv, plan.summary
        self.job_id, self.tags = plan.identity.job, plan.identity.tags
        self.store = self.out = self.cgroup_version = None
        self.format, self.cgroup = "jsonl", "auto"
        self.wait = False   # the job ends with its top process: the starter kills the rest
        self.leftovers_killed = True

    @property
    def interval(self):
        return self._plan.interval()


def site_settings(warnings, path=None):
    """The [condor] section of the site configuration; defaults if it cannot be read.
    path: the file the wrapper was installed with (else $JOBMON_CONFIG or the default)."""
    try:
        from jobmon import config
        return config.load(path)["condor"]
    except Exception as e:
        warnings.write(f"jobmon: site configuration unusable ({e}); condor defaults used\n")
        return defaults()


def defaults():
    """The [condor] defaults: the configuration schema's, or these if it cannot be had."""
    try:
        from jobmon import config
        return {k: d for k, (_t, d) in config.SCHEMA["condor"].items()}
    except Exception:
        return dict(_DEFAULTS)


def defaults_decide_opt_out(environ=os.environ, path=None):
    """True when the site configuration cannot change the two settings that decide an
    opted-out job's start (neither name appears in the file or the environment): the job
    is exec'd at once, without parsing TOML."""
    from jobmon import config
    if any(f"JOBMON_CONDOR_{k}" in environ for k in ("ENABLED", "ALLOW_OPT_OUT")):
        return False
    try:
        with open(config.path_from(path, env=environ), "rb") as f:
            text = f.read()
    except OSError:
        return True   # config.load() would fail too: the defaults apply
    return b"enabled" not in text and b"allow_opt_out" not in text


def opted_out(job_ad):
    v = job_ad.get(OPT_OUT_ATTR)
    return v is False or (isinstance(v, str) and v.strip().lower() in ("false", "no", "0"))


def interval(requested, site):
    """(seconds between samples, what the job asked for or None): a request is clamped to
    the site's bounds."""
    lo, hi = site["min_interval"], max(site["min_interval"], site["max_interval"])
    try:
        asked = float(requested) if not isinstance(requested, bool) else None
    except (TypeError, ValueError):
        asked = None
    if asked is None or not asked > 0 or asked != asked or asked == float("inf"):
        return min(max(site["interval"], lo), hi), None
    return min(max(asked, lo), hi), requested


def own_job_cgroup(cgroups):
    """The cgroup this process is in, if it is the job's own: worth measuring (not the
    root) and holding nothing but the wrapper, which the starter has just put there. A
    node without job cgroups (procd tracking) puts jobs in the daemons' cgroup, which
    holds the startd and every other job."""
    cg = cgroups.existing()
    if cg is None:
        return None
    me = str(os.getpid())
    for d in set(cg.dirs.values()):
        with open(os.path.join(d, "cgroup.procs")) as f:
            if f.read().split() != [me]:
                return None
    return cg


def _has_children():
    try:
        os.waitpid(-1, os.WNOHANG)
        return True
    except ChildProcessError:
        return False


def _undo_runner_setup():
    """What jobmon.job.runner changed in this process that an exec would pass on to the job:
    the blocked signals and the child subreaper flag."""
    import signal
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    try:
        from jobmon.job import launcher
        launcher.prctl(launcher.PR_SET_CHILD_SUBREAPER, 0)
    except (OSError, AttributeError, ImportError):
        pass


def own_rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def exec_job(argv):
    """Become the job, unmonitored, as the starter would have run it."""
    import signal
    for s in (signal.SIGPIPE, signal.SIGXFSZ):   # Python ignores these; the job must not
        signal.signal(s, signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)   # a path is run as is; a bare name (PreserveRelative-
    except OSError as e:           # Executable) is looked up in PATH
        import errno
        job_cannot_start(f"{argv[0]}: {e.strerror}", 127 if e.errno == errno.ENOENT else 126,
                         e.errno, argv)


def job_cannot_start(reason, status, err=None, argv=None):
    """The job itself cannot run (err: the kernel's errno). Where the starter runs a Chirp
    server, tell the shadow why, as job attributes: an access point with jobmon's policy
    (deploy/condor/jobmon-access-point.conf) then holds the job, as the starter holds one
    it cannot execute without a wrapper. Else write the error file (the starter requeues
    the job when it can read it). The job's stderr gets the same line either way; the
    wrapper exits non-zero (126, 127): where neither works, the job completes with that."""
    msg = (f"{PROG}: cannot execute the job: {reason} (uid {os.getuid()}, "
           f"cwd {_cwd()})\n")
    path = os.environ.get(ERROR_FILE_ENV)
    if path and not (err and argv and tell_the_shadow(argv, err)):
        try:
            with open(path, "w") as f:
                f.write(msg)
        except OSError:
            pass
    try:
        os.write(2, msg.encode(errors="replace"))
    except OSError:
        pass
    os._exit(status)


def tell_the_shadow(argv, err):
    """The exec failure as Chirp delayed job attributes: the reason and subcode the starter
    would have held the job with, and this run's ShadowBday (so that a job released and
    run again is not held for it). True once the starter has them."""
    try:
        from jobmon.plugins.condor import chirp
        from jobmon.plugins.condor.job import read_ads
        bday = read_ads(os.environ)[0].get("ShadowBday")
        if not isinstance(bday, int) or isinstance(bday, bool):
            return False
        args = f" with arguments {' '.join(argv[1:])}" if len(argv) > 1 else ""
        why = f"Failed to execute '{argv[0]}'{args}: (errno={err}: '{os.strerror(err)}')"
        return chirp.set_delayed({EXEC_REASON: chirp.classad_string(why[:chirp.EXPR_MAX - 10]),
                                  EXEC_ERRNO: str(err), EXEC_RUN: str(bday)})
    except Exception:   # the error file, then
        return False


def _cwd():
    try:
        return os.getcwd()
    except OSError:
        return "?"


class Warnings(io.TextIOBase):
    """Stands in for sys.stderr in the wrapper: jobmon's warnings go to syslog (default),
    the job's stderr, or nowhere, one line at a time, tagged with the job id."""

    def __init__(self, where):
        super().__init__()
        self.where, self.job, self._line = where, None, ""

    def write(self, text):
        if self.where == "stderr":
            return sys.__stderr__.write(text)
        if self.where == "syslog":
            self._line += text
            while "\n" in self._line:
                line, self._line = self._line.split("\n", 1)
                _syslog(f"{self.job or '-'}: {line}")
        return len(text)

    def flush(self):
        if self.where == "stderr":
            sys.__stderr__.flush()


def _syslog(line):
    try:
        import syslog
        syslog.openlog(PROG, syslog.LOG_PID, syslog.LOG_USER)
        syslog.syslog(syslog.LOG_WARNING, line)
    except Exception:
        pass


if __name__ == "__main__":
    main()
