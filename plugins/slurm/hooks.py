"""jobmon's Slurm Prolog and Epilog, and the start of the per-job sampler.

Prolog (root, no PATH, before the job starts): starts the job's sampler outside its own
process group and exits 0. Slurm kills the Prolog's process group when the Prolog exits,
so the Prolog forks the sampler and waits until the sampler has started a session of its
own (the sampler closes a pipe then): no deadline, nothing to race. Then the Prolog names
the sampler in its pid file for the Epilog, and tells the sampler so on a pipe. A Prolog
that fails or is slow drains the node and requeues the job held; this one exits 0
whatever happens, and runs nothing but the interpreter (`python -I -S`: no site-packages,
no jobmon import) and one fork.

Sampler (the Prolog's child, detached, a fork of the interpreter that is already
running): finds jobmon (site-packages), drops to the job's user, identifies the job,
waits for its cgroup and samples it until the job is over (jobmon.plugins.slurm.sampler,
jobmon.attach.watch). What fails before its own warnings are set up is said in syslog, or where
syslog receives nothing in the run directory's warnings.log.

Epilog (root, after the job): tells the job's sampler the job's exit status and to
finish, waits for it (bounded), kills it if it will not end -- no sampler outlives its
job -- and leaves the spool to the node's shipper. It too exits 0 whatever happens.

Only os and sys are imported at the top: the Prolog's wall time is the interpreter's
start-up plus one fork. The wrappers slurm.conf names are written by
`jobmon-slurm-hooks install` (jobmon.plugins.slurm.install); they import this file
rather than run it (its compiled form is then used) and name it on the command line.
"""
import os
import sys

RUN_DIR = "/run/jobmon-slurm"      # pid files: one per job on this node
EPILOG_WAIT = 5.0                  # the Epilog's longest wait for the sampler to end
SIGTERM, SIGKILL = 15, 9           # Linux numbers (the signal module costs an import)
STOP_SIGNALS = {1, 2, 15}          # SIGHUP, SIGINT, SIGTERM: "the job is over, finish"
SYSLOG_SOCKET = "/dev/log"
WARNINGS_FILE = "warnings.log"     # in the run directory, where syslog receives nothing


def main(argv=None):
    """python -I -S hooks.py prolog|epilog [--run-dir=DIR] [--wait=S]"""
    argv = sys.argv[1:] if argv is None else argv
    kind = argv[0] if argv else ""
    if kind == "prolog":
        prolog(argv[1:])
    elif kind == "epilog":
        epilog(argv[1:])
    elif kind in ("install", "deploy"):
        import importlib   # by name: install.py reads this file, never the other way round
        sys.exit(importlib.import_module("jobmon.plugins.slurm.install").main(argv))
    sys.stderr.write("usage: hooks.py prolog|epilog [--run-dir=DIR] | install DIR\n")
    os._exit(0)    # a mistaken Prolog= line must not drain the node either


def prolog_main():
    prolog(sys.argv[1:])


def epilog_main():
    epilog(sys.argv[1:])


def options(argv):
    """--key=value arguments as {key: value} (argparse costs the Prolog milliseconds)."""
    out = {}
    for a in argv:
        if a.startswith("--") and "=" in a:
            k, v = a[2:].split("=", 1)
            out[k] = v
    return out


def pid_file(run_dir, environ):
    """<run dir>/<node>.<job id>.pid: several slurmd may share a host, and a job spans
    nodes under one id."""
    node = environ.get("SLURMD_NODENAME", "") or "node"
    job = environ.get("SLURM_JOB_ID", "")
    if not job.isdigit() or "/" in node or node.startswith("."):
        return None
    return os.path.join(run_dir, f"{node}.{job}.pid")


# --- Prolog ---------------------------------------------------------------------------

def prolog(argv):
    """Start the job's sampler, detached; exit 0 whatever happens."""
    try:
        if os.environ.get("SLURM_JOB_ID"):      # else not run by slurmd: nothing to do
            start_sampler(argv)
    finally:
        os._exit(0)


def start_sampler(argv):
    """Start the job's sampler outside the Prolog's process group and name it in its pid
    file. Never raises."""
    opts = options(argv)
    run_dir = opts.get("run-dir", RUN_DIR)
    try:
        os.closerange(3, 1 << 20)       # nothing slurmd left open may reach the sampler
        path = pid_file(run_dir, os.environ)
        r, w = os.pipe()
        pid = detach(list(argv) + [f"--prolog-fd={r}"], r, w)
        os.close(r)
        # the sampler waits for this word before it counts on the Epilog
        os.write(w, b"1" if path and _write_pid_file(path, pid) else b"0")
        os.close(w)
    except BaseException as e:
        warn(fallback_fd(run_dir), f"sampler not started: {type(e).__name__}: {e}")


def detach(argv, r, w):
    """Fork the sampler and let it start a session of its own; return its pid once it has
    (the Prolog's group is killed when the Prolog exits). The sampler has its stdio on
    /dev/null and the Epilog's signals held until it listens; it never returns from here
    (sampler_main)."""
    pr, pw = os.pipe()
    sampler = os.fork()
    if sampler == 0:
        try:
            import _signal                  # built in, already loaded: costs nothing
            _signal.pthread_sigmask(_signal.SIG_BLOCK, STOP_SIGNALS)
            os.setsid()                     # out of the Prolog's process group
            os.close(pr)
            os.close(pw)                    # the Prolog goes on
            os.close(w)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):            # a child holding the Prolog's output blocks it
                os.dup2(null, fd)
            os.close(null)
            sampler_main(argv)
        finally:
            os._exit(0)
    os.close(pw)
    os.read(pr, 1)                          # EOF: the sampler has its own session
    os.close(pr)
    return sampler


def _write_pid_file(path, pid):
    """Name the sampler for the Epilog: its pid, start time and the run it is for. A
    sampler of the job's previous run still there (a requeued job, back on this node) is
    told to finish: the new one takes over. True once written."""
    try:
        old, ticks, _run = read_pid_file(path)
        if old != pid and _start_ticks(old) == ticks:
            os.kill(old, SIGTERM)
    except (OSError, ValueError, IndexError):
        pass
    try:
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        restarts = os.environ.get("SLURM_JOB_RESTART_COUNT", "0")
        with open(tmp, "w") as f:
            f.write(f"{pid} {_start_ticks(pid)} {restarts if restarts.isdigit() else 0}\n")
        os.rename(tmp, path)
        return True
    except OSError:     # no pid file: the sampler still ends with the job, by itself
        return False


def read_pid_file(path):
    """(pid, start ticks, restart count of the run it was started for)."""
    with open(path) as f:
        fields = [int(x) for x in f.read().split()[:3]]
    return fields[0], fields[1], fields[2] if len(fields) > 2 else 0


def _start_ticks(pid):
    """A process's start time in clock ticks since boot: with the pid, it names the
    process (a pid alone may have been reused)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read()
    return int(data[data.rindex(b")") + 2:].split()[19])


# --- the sampler (the Prolog's child, detached) ------------------------------------------

def sampler_main(argv):
    """Sample the job until it is over; exit with 0, or 1 if it could not (said where
    the site looks)."""
    opts = options(argv)
    run_dir = opts.get("run-dir", RUN_DIR)
    fallback = fallback_fd(run_dir)
    code = 1
    try:
        if sys.flags.no_site:          # started with -S for speed: now find jobmon
            import site
            site.main()
        from jobmon.plugins.slurm import sampler
        code = sampler.run(opts, pid_file(run_dir, os.environ), os.environ, fallback)
    except BaseException as e:   # before jobmon's own warnings were set up
        warn(fallback, f"sampler failed: {type(e).__name__}: {e}")
    os._exit(code)


def syslog_receives(path=SYSLOG_SOCKET):
    """Whether something listens on the syslog socket (a node without a syslog daemon
    has none, and Python's syslog then drops every message without a word)."""
    try:
        import _socket
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM)
        try:
            s.connect(path)
        finally:
            s.close()
        return True
    except OSError:
        return False


def fallback_fd(run_dir):
    """Where syslog receives nothing: the run directory's warnings file, opened for
    appending while still root (the sampler writes to it as the job's user); else None."""
    if syslog_receives():
        return None
    try:
        os.makedirs(run_dir, mode=0o755, exist_ok=True)
        return os.open(os.path.join(run_dir, WARNINGS_FILE),
                       os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                       0o644)
    except OSError:
        return None


def warn(fallback, message, job=None):
    """One warning line: to syslog, or to the fallback file where syslog receives
    nothing. Never raises."""
    line = f"job {job or os.environ.get('SLURM_JOB_ID', '?')}: {message}"
    try:
        if fallback is not None:
            import time
            os.write(fallback, f"{time.strftime('%Y-%m-%dT%H:%M:%S')} jobmon-slurm"
                               f"[{os.getpid()}] {line}\n".encode(errors="replace"))
            return
        import syslog
        syslog.openlog("jobmon-slurm", syslog.LOG_PID, syslog.LOG_DAEMON)
        syslog.syslog(syslog.LOG_WARNING, line)
    except BaseException:
        pass


# --- Epilog ---------------------------------------------------------------------------

def epilog(argv):
    """Stop the job's sampler (bounded); exit 0 whatever happens. An Epilog that ends a
    run the job was requeued from (its restart count is past the sampler's) starts a
    sampler for the next run: slurmd may run that one here without a Prolog."""
    try:
        opts = options(argv)
        result, requeued = stop_sampler(opts.get("run-dir", RUN_DIR), os.environ,
                                        float(opts.get("wait", EPILOG_WAIT)))
        if requeued:
            start_sampler(list(argv) + ["--rerun=1"])
    except BaseException:
        pass
    os._exit(0)


def stop_sampler(run_dir, environ, wait):
    """Hand the sampler the job's exit status and SIGTERM; wait up to `wait` s for it to
    end, then SIGKILL it. Returns ("none" | "ended" | "killed", requeued)."""
    path = pid_file(run_dir, environ)
    if path is None:
        return "none", False
    try:
        pid, ticks, run_restarts = read_pid_file(path)
    except (OSError, ValueError, IndexError):
        return "none", False
    restarts = environ.get("SLURM_JOB_RESTART_COUNT", "")
    requeued = restarts.isdigit() and int(restarts) > run_restarts
    result = "none"
    try:
        if _start_ticks(pid) == ticks:     # still the sampler, not a reused pid
            status = environ.get("SLURM_JOB_EXIT_CODE")
            if status is not None and status.isdigit():
                _write_status(path[:-len(".pid")] + ".exit", status)
            result = _terminate(pid, wait)
    except (OSError, ValueError):
        pass
    for p in (path, path[:-len(".pid")] + ".exit"):
        try:
            os.unlink(p)
        except OSError:
            pass
    return result, requeued


def _write_status(path, status):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(status + "\n")
    os.chmod(tmp, 0o644)                   # the sampler runs as the job's user
    os.rename(tmp, path)


def _terminate(pid, wait):
    """SIGTERM, then SIGKILL after `wait` s. The wait is on a pidfd (Linux 5.3), else a
    poll of the pid."""
    import select
    import time
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    try:
        os.kill(pid, SIGTERM)
        if fd is not None:
            if select.select([fd], [], [], wait)[0]:
                return "ended"
        else:
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                if not _alive(pid):
                    return "ended"
                time.sleep(0.02)
        os.kill(pid, SIGKILL)              # a sampler must never outlive its job
        if fd is not None:
            select.select([fd], [], [], 1.0)
        return "killed"
    finally:
        if fd is not None:
            os.close(fd)


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


if __name__ == "__main__":
    main()
