"""jobmon's Slurm Prolog and Epilog, and the per-job sampler the Prolog starts.

Prolog (root, no PATH, before the job starts): forks the job's sampler and exits 0 as
soon as the sampler has confirmed it is in a session of its own -- Slurm kills the
Prolog's process group when the Prolog exits, so a child that had not yet called
setsid() would die with it. A Prolog that fails or is slow drains the node and requeues
the job held; this one exits 0 whatever happens, and before the fork it runs nothing but
the interpreter (`python -I -S hooks.py prolog`: no site-packages, no jobmon import).

Sampler (the forked child): writes its pid file, drops to the job's user (its spool
files are then the user's, as the shipper expects, and it can do no more than the job
could), identifies the job from the Prolog environment, waits for the job's cgroup and
samples it until the job is over (jobmon.watch).

Epilog (root, after the job): tells the job's sampler the job's exit status and to
finish, waits for it (bounded), kills it if it will not end -- no sampler outlives its
job -- and leaves the spool to the node's shipper. It too exits 0 whatever happens.

Only os and sys are imported at the top: the Prolog's wall time is the interpreter's
start-up plus a fork.
"""
import os
import sys

RUN_DIR = "/run/jobmon-slurm"      # pid files: one per job on this node
# where this file lives in the example installation of deploy/slurm
DEPLOY_HOOKS = "/opt/jobmon/lib/python3.11/site-packages/jobmon/plugins/slurm/hooks.py"
HANDSHAKE_SECONDS = 1.5            # the Prolog's longest wait for its sampler's word
EPILOG_WAIT = 5.0                  # the Epilog's longest wait for the sampler to end
SIGTERM, SIGKILL = 15, 9           # Linux numbers (the signal module costs an import)
STOP_SIGNALS = {1, 2, 15}          # SIGHUP, SIGINT, SIGTERM: "the job is over, finish"


def main(argv=None):
    """python -I -S hooks.py prolog|epilog [--run-dir=DIR] [--wait=S]"""
    argv = sys.argv[1:] if argv is None else argv
    kind = argv[0] if argv else ""
    if kind == "prolog":
        prolog(argv[1:])
    elif kind == "epilog":
        epilog(argv[1:])
    elif kind == "install":
        sys.exit(install_main(argv[1:]))
    elif kind == "deploy" and len(argv) == 2:   # the examples in deploy/slurm
        for k in ("prolog", "epilog"):
            write_wrapper(os.path.join(argv[1], f"jobmon-{k}"),
                          wrapper(k, f"/etc/slurm/jobmon-{k}", "/opt/jobmon/bin/python3",
                                  DEPLOY_HOOKS, "/etc/jobmon/jobmon.toml"))
        sys.exit(0)
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
    """Fork the sampler; return once it is in a session of its own (or dead, or after
    HANDSHAKE_SECONDS). Never raises."""
    try:
        r, w = os.pipe()
        pid = os.fork()
    except BaseException:
        return
    if pid == 0:
        _sampler_child(r, w, argv)      # never returns
    try:
        os.close(w)
        import select
        select.select([r], [], [], HANDSHAKE_SECONDS)   # its word, or its death (EOF)
        os.close(r)
    except BaseException:
        pass


def _sampler_child(r, w, argv):
    try:
        import _signal                  # built in, already loaded: costs nothing
        # the Epilog may say "finish" before the sampler can listen (a job cancelled
        # in its Prolog): held until then, not fatal
        _signal.pthread_sigmask(_signal.SIG_BLOCK, STOP_SIGNALS)
        os.close(r)
        os.setsid()                     # out of the Prolog's process group
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):            # a child holding the Prolog's output blocks it
            os.dup2(null, fd)
        os.closerange(3, w)
        os.closerange(w + 1, 1 << 20)
        opts = options(argv)
        path = pid_file(opts.get("run-dir", RUN_DIR), os.environ)
        if path:
            _write_pid_file(path)
        os.write(w, b"1")
        os.close(w)
    except BaseException as e:
        _syslog(f"sampler not started: {type(e).__name__}: {e}")
        os._exit(0)
    code = 0
    try:
        code = sample(opts, path)
    except BaseException as e:    # before jobmon's own log was set up (site, imports)
        _syslog(f"sampler failed: {type(e).__name__}: {e}")
        code = 1
    os._exit(code)


def _syslog(message):
    try:
        import syslog
        syslog.openlog("jobmon-slurm", syslog.LOG_PID, syslog.LOG_DAEMON)
        syslog.syslog(syslog.LOG_WARNING,
                      f"job {os.environ.get('SLURM_JOB_ID', '?')}: {message}")
    except BaseException:
        pass


def _write_pid_file(path):
    """Names this sampler for the Epilog. A sampler of the job's previous run still
    there (a requeued job, back on this node) is told to finish: this one takes over."""
    try:
        pid, ticks, _run = read_pid_file(path)
        if pid != os.getpid() and _start_ticks(pid) == ticks:
            os.kill(pid, SIGTERM)
    except (OSError, ValueError):
        pass
    try:
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        restarts = os.environ.get("SLURM_JOB_RESTART_COUNT", "0")
        with open(tmp, "w") as f:
            f.write(f"{os.getpid()} {_start_ticks(os.getpid())} "
                    f"{restarts if restarts.isdigit() else 0}\n")
        os.rename(tmp, path)
    except OSError:     # no pid file: the sampler still ends with the job, by itself
        pass


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


# --- the sampler (the Prolog's child, detached) -----------------------------------------

def sample(opts, pid_path):
    """Sample the job until it is over; returns the exit code for the log."""
    if sys.flags.no_site:          # started with -S for speed: now find jobmon
        import site
        site.main()
    from jobmon.plugins.slurm import sampler
    return sampler.run(opts, pid_path, os.environ)


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


# --- the wrappers slurm.conf names ------------------------------------------------------

WRAPPER = """#!/bin/sh
# jobmon's Slurm {kind} (slurm.conf: {conf_key}={target}).
# Written by `jobmon-slurm-hooks install`. Slurm runs it as root with no PATH, so every
# path here is absolute. It exits 0 whatever happens -- a failing {kind} drains the node --
# and quickly: {what}
PYTHON={python}
HOOKS={hooks}
JOBMON_CONFIG={config}
export JOBMON_CONFIG
if [ -x /usr/bin/timeout ]; then set -- /usr/bin/timeout -s KILL {limit}; fi
[ -x "$PYTHON" ] && [ -r "$HOOKS" ] && \\
    "$@" "$PYTHON" -I -S "$HOOKS" {entry} --run-dir={run_dir}{extra} </dev/null >/dev/null 2>&1
exit 0
"""
WHAT = {"prolog": "it only starts the job's sampler, detached.",
        "epilog": "it stops the job's sampler (waiting {wait:g} s at most)."}


PROLOG_LIMIT = 3     # seconds before the wrapper kills a Prolog that hangs


def wrapper(kind, target, python, hooks, config, run_dir=RUN_DIR, wait=EPILOG_WAIT,
            prolog_limit=PROLOG_LIMIT):
    """The text of the sh wrapper slurm.conf's Prolog= or Epilog= names."""
    limit = prolog_limit if kind == "prolog" else int(wait) + 5
    extra = "" if kind == "prolog" else f" --wait={wait:g}"
    return WRAPPER.format(kind=kind.capitalize(), conf_key=kind.capitalize(), target=target,
                          what=WHAT[kind].format(wait=wait), python=python, hooks=hooks,
                          config=config, limit=limit, entry=kind, run_dir=run_dir,
                          extra=extra)


def install_main(argv=None):
    """jobmon-slurm-hooks install DIR [--config=FILE] [--run-dir=DIR] [--python=EXE]
    [--prolog-limit=S]: write DIR/jobmon-prolog and DIR/jobmon-epilog for slurm.conf."""
    argv = sys.argv[1:] if argv is None else argv
    args = [a for a in argv if not a.startswith("--")]
    if args[:1] == ["install"]:
        args = args[1:]
    if len(args) != 1:
        sys.stderr.write("usage: jobmon-slurm-hooks install DIR [--config=FILE] "
                         "[--run-dir=DIR] [--python=EXE] [--prolog-limit=S]\n")
        return 2
    opts = options(argv)
    python = opts.get("python", sys.executable)
    config = opts.get("config", "/etc/jobmon/jobmon.toml")
    for kind in ("prolog", "epilog"):
        target = os.path.join(os.path.abspath(args[0]), f"jobmon-{kind}")
        limit = opts.get("prolog-limit", "")
        write_wrapper(target, wrapper(kind, target, python, os.path.abspath(__file__),
                                      config, opts.get("run-dir", RUN_DIR),
                                      prolog_limit=int(limit) if limit.isdigit() else
                                      PROLOG_LIMIT))
        print(target)
    return 0


def write_wrapper(target, text):
    tmp = target + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o755)
    os.rename(tmp, target)


if __name__ == "__main__":
    main()
