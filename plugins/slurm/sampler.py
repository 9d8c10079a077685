"""The per-job sampler the Slurm Prolog starts (hooks.py forks it, detached): the site's
settings, the job's user, the job's identity, the Epilog's word -- then jobmon.attach.watch.

Standard library only; it runs beside every job. Its warnings go to syslog (or where
`slurm.warnings` says), tagged with the job, never to the job's output; where syslog
receives nothing (no /dev/log), to the run directory's warnings.log, which hooks.py
opened while still root.
"""
import io
import os
import signal
import sys
import time

from . import cgroup_names
from .job import identify, needs_refining, next_run, refine

PROG = "jobmon-slurm"
DEFAULTS = {"enabled": True, "interval": 10.0, "cgroup_wait_seconds": 300.0,
            "end_wait_seconds": 10.0, "warnings": "syslog"}


class Warnings(io.TextIOBase):
    """Stands in for sys.stderr: whole lines to syslog (or, where it receives nothing,
    the fallback file's descriptor), a file, or nowhere."""

    def __init__(self, where, job, fallback=None):
        super().__init__()
        self.where, self.job, self.fallback, self._line = where, job, fallback, ""

    def prepare(self):
        """What writing a line will need, loaded while still root: once the sampler is
        the job's user, an interpreter the user cannot read could import nothing more."""
        if self.where == "syslog" and self.fallback is None:
            import syslog
            syslog.openlog(PROG, syslog.LOG_PID, syslog.LOG_DAEMON)

    def write(self, text):
        self._line += text
        while "\n" in self._line:
            line, self._line = self._line.split("\n", 1)
            self._emit(line)
        return len(text)

    def _emit(self, line):
        if self.where == "none":
            return
        try:
            if self.where == "syslog" and self.fallback is not None:
                os.write(self.fallback, f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {PROG}"
                                        f"[{os.getpid()}] job {self.job}: {line}\n".encode())
            elif self.where == "syslog":
                import syslog
                syslog.openlog(PROG, syslog.LOG_PID, syslog.LOG_DAEMON)
                syslog.syslog(syslog.LOG_WARNING, f"job {self.job}: {line}")
            else:
                with open(self.where, "a") as f:
                    f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {PROG}[{os.getpid()}] "
                            f"job {self.job}: {line}\n")
        except Exception:
            pass


def settings(warn):
    """The [slurm] section of the site configuration; defaults if it cannot be read."""
    try:
        from jobmon import config
        return config.load()["slurm"]
    except Exception as e:
        warn(f"site configuration unusable ({e}); Slurm sampler defaults used")
        return dict(DEFAULTS)


def drop_privileges(environ):
    """Become the job's user: the spool files are then the user's (the shipper tags
    samples with their owner) and the sampler can do nothing the job could not."""
    uid = int(environ["SLURM_JOB_UID"])
    gid = int(environ.get("SLURM_JOB_GID") or uid)
    if os.geteuid() == 0 and uid != 0:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    if os.geteuid() != uid:
        raise PermissionError(f"running as uid {os.geteuid()}, not the job's {uid}")
    try:
        import pwd
        pw = pwd.getpwuid(uid)
        os.environ.update(HOME=pw.pw_dir, USER=pw.pw_name, LOGNAME=pw.pw_name)
    except (KeyError, ImportError):
        pass
    os.environ.pop("XDG_DATA_HOME", None)
    os.umask(0o077)
    os.chdir("/")


def sweep(run_dir, keep):
    """Pid files of samplers that ended without an Epilog (none configured, or it
    failed): removed, so the run directory does not grow."""
    try:
        names = os.listdir(run_dir)
    except OSError:
        return
    for name in names:
        path = os.path.join(run_dir, name)
        if path == keep or not name.endswith((".pid", ".exit")):
            continue
        pid_path = path if name.endswith(".pid") else path[:-5] + ".pid"
        try:
            with open(pid_path) as f:
                pid, ticks = (int(x) for x in f.read().split()[:2])
            with open(f"/proc/{pid}/stat", "rb") as f:
                data = f.read()
            if int(data[data.rindex(b")") + 2:].split()[19]) == ticks:
                continue            # that sampler still runs
        except (OSError, ValueError):
            pass
        try:
            os.unlink(path)
        except OSError:
            pass


def stop_channel(pid_path):
    """A Stop the Epilog's SIGTERM fires (through a self-pipe), with the exit status it
    left beside the pid file."""
    from jobmon.attach.watch import Stop
    r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(w)
    stops = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    for s in stops:
        signal.signal(s, lambda *_: None)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)   # held since the fork
    exit_path = pid_path[:-len(".pid")] + ".exit" if pid_path else None

    def status():
        if exit_path is None:
            return None
        try:
            with open(exit_path) as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None
    return Stop(r, status)


def pid_file_written(opts, pid_path):
    """Whether the Prolog named this sampler in its pid file, so that an Epilog can reach
    it: the Prolog's word on the pipe it handed over (written right after the spawn:
    waited for, never raced), or, started otherwise, whether the file is there."""
    fd = opts.get("prolog-fd", "")
    if fd.isdigit():
        said = b""
        try:
            while True:
                chunk = os.read(int(fd), 8)
                if not chunk:
                    break
                said += chunk
            os.close(int(fd))
            return said == b"1"
        except OSError:
            pass
    return pid_path is not None and os.path.exists(pid_path)


def run(opts, pid_path, environ, fallback=None):
    """The sampler's life. Returns 0, or 1 if it could not sample (said in the log).
    fallback: a descriptor for the warnings where syslog receives nothing."""
    epilog = pid_file_written(opts, pid_path)
    ident = identify(environ)
    warnings = Warnings("syslog", ident.job, fallback)
    sys.stderr = warnings
    try:
        return _run(ident, warnings, opts, pid_path, environ, epilog)
    except Exception:   # a jobmon bug: said where the site looks, never to the job
        import traceback
        warnings.write("jobmon: sampler failed: " + traceback.format_exc().replace("\n", " | ")
                       + "\n")
        return 1


def _run(ident, warnings, opts, pid_path, environ, epilog):
    if pid_path:
        sweep(os.path.dirname(pid_path), pid_path)
    warn = lambda msg: warnings.write(f"jobmon: {msg}\n")   # noqa: E731
    site = settings(warn)            # world-readable: read before the drop, as root
    warnings.where = site["warnings"]
    warnings.prepare()
    try:
        drop_privileges(environ)
    except Exception as e:   # never sample as root: the spool would say root's job
        warnings.write(f"jobmon: not monitored: cannot become the job's user: {e}\n")
        return 1
    if not site["enabled"]:
        return 0
    from jobmon.cgroups import search as cgroup_search
    from jobmon.attach.watch import Options, Watch
    from .script import script_tags
    where = cgroup_search.roots()
    wanted = cgroup_names.wanted(environ)
    skip, choose = cgroup_names.skipper(environ), cgroup_names.chooser(environ)
    stop = stop_channel(pid_path)
    # without a pid file no Epilog can reach this sampler: it ends with the job's cgroup
    # started by an Epilog for a requeued job's next run, which may run elsewhere: no
    # record unless that run comes here
    rerun = opts.get("rerun") == "1"
    o = Options(interval=site["interval"], cgroup_wait=site["cgroup_wait_seconds"],
                end_wait=site["end_wait_seconds"] if epilog else 0.0,
                rerun_wait=site["cgroup_wait_seconds"] if epilog else 0.0,
                record_unseen=not rerun)
    watch = Watch(ident, lambda: cgroup_search.find(wanted, skip, choose, where), o, warn,
                  stop=stop, refine=refine, tags_ready=lambda i: not needs_refining(i),
                  step_name=cgroup_names.step_name, next_run=next_run,
                  own_leaves=cgroup_names.OWN_LEAVES, task_parent=cgroup_names.TASK_PARENT,
                  fingerprint=script_tags)
    summaries = watch.run()
    from .card import after_job   # the job is over: its report card
    after_job(summaries, environ, warn)
    return 0
