"""`jobmon run`: run one command under the sampler. Standard library only.

Order matters for start-up time: block signals, make the cgroup, start the command, and
only then set up the probe, the store and the other sinks.  Every step after the command
has started fails open: the command keeps running, unmonitored if need be, and jobmon
exits with its status.
"""
import os
import sys
import time

from .. import cgroups
from . import launcher, trampoline

USAGE = "jobmon run [OPTIONS] -- CMD [ARGS...]"
MAX_INTERVAL = 86400.0   # s: a sample a day at least (no run outlives shipper.max_job_days)


class Args:
    """`jobmon run`'s options (its help is the CLI's: `jobmon run --help`)."""
    interval = 1.0
    job_id = out = summary = store = cgroup_version = None
    format, cgroup, wait = "jsonl", "auto", True

    def __init__(self, **kw):
        self.tags, self.cmd = {}, []
        for k, v in kw.items():
            setattr(self, k, v)


# option -> (attribute, conversion, allowed values); parsed by hand: argparse would cost
# every job ~30 ms of CPU at its start
OPTIONS = {"--interval": ("interval", float, None), "--job-id": ("job_id", str, None),
           "--tag": ("tag", str, None), "--format": ("format", str, ("jsonl", "csv")),
           "--out": ("out", str, None), "--summary": ("summary", str, None),
           "--store": ("store", str, None),
           "--cgroup": ("cgroup", str, ("auto", "create", "existing", "none")),
           "--cgroup-version": ("cgroup_version", int, (1, 2))}


class UsageError(Exception):
    pass


def argv_text(value):
    """An argument as it is stored: bytes that were not UTF-8 (kept by Python as lone
    surrogates, which no store can encode) become U+FFFD; `jobmon query` does the same."""
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def parse_tags(items):
    tags = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k or not all(c.isalnum() or c in "_.-" for c in k):
            raise ValueError(f"bad --tag {item!r}: expected KEY=VALUE, KEY of letters, digits, _ . -")
        tags[k] = argv_text(v)
    return tags


def parse(argv):
    """Args from `jobmon run`'s arguments; UsageError says what is wrong."""
    args, tags, i = Args(), [], 0
    while i < len(argv) and argv[i].startswith("--") and argv[i] != "--":
        name, sep, value = argv[i].partition("=")
        if name == "--no-wait" and not sep:
            args.wait = False
            i += 1
            continue
        if name not in OPTIONS:
            raise UsageError(f"unknown option {name}")
        if not sep:
            if i + 1 >= len(argv):
                raise UsageError(f"{name} needs a value")
            value, i = argv[i + 1], i + 1
        i += 1
        attr, convert, allowed = OPTIONS[name]
        try:
            value = convert(value)
        except ValueError:
            raise UsageError(f"{name}: not a number: {value!r}")
        if allowed and value not in allowed:
            raise UsageError(f"{name} must be one of {', '.join(map(str, allowed))}")
        if attr == "tag":
            tags.append(value)
        else:
            setattr(args, attr, value)
    args.cmd = argv[i + 1:] if argv[i:i + 1] == ["--"] else argv[i:]
    if not args.cmd:
        raise UsageError("no command given")
    if not 0 < args.interval <= MAX_INTERVAL:   # (NaN and inf are not)
        raise UsageError(f"--interval must be > 0 and at most {MAX_INTERVAL:.0f} (a day)")
    args.tags = parse_tags(tags)
    if args.job_id is not None:
        args.job_id = argv_text(args.job_id)
        if not args.job_id.strip():
            raise UsageError("--job-id must not be empty (leave it out for a generated one)")
    return args


def warn(msg):
    try:
        sys.stderr.write(f"jobmon: {msg}\n")
        sys.stderr.flush()
    except (OSError, ValueError):   # stderr a closed pipe: never a reason to stop
        pass


def main(argv):
    try:
        args = parse(argv)
    except (UsageError, ValueError) as e:   # ValueError: a bad --tag
        sys.stderr.write(f"usage: {USAGE}\njobmon run: error: {e} (see jobmon run --help)\n")
        sys.exit(2)
    run(args)


def run(args, identity=None, choose_cgroup=None, start_failed=None, on_end=None, batches=None):
    """One command's whole life under the sampler, for `jobmon run` and the scheduler
    wrappers. identity: the scheduler plugin's Identity (job id, scheduler, run, tags);
    batches: what the batch its job is in takes of its scheduler (jobmon.summary.batches.
    Known: the plugin's own, so that its summary does not load every scheduler's);
    choose_cgroup(name): the wrapper's own cgroup policy; start_failed(StartError): told
    before jobmon exits because the command could not be started; on_end(summary): told
    once the job has ended and been recorded (the wrapper's report card); its failures
    never change the exit status."""
    start = time.time()
    t0 = time.monotonic()
    launcher.block_signals()
    launcher.set_subreaper()
    name = f"jobmon-{os.getpid()}"
    cg = choose_cgroup(name) if choose_cgroup else \
        cgroups.for_job(args.cgroup, args.cgroup_version, name)
    if cg is None and args.cgroup in ("create", "existing"):
        warn(f"no usable cgroup ({args.cgroup}); measuring through /proc")
    base = counters_now(cg) if cg is not None and not cg.created else None
    kmsg = _kernel_log(cg)
    tramp = trampoline.load()
    overhead = {}
    try:
        pid = launcher.spawn(args.cmd, cg, tramp, overhead)
    except launcher.StartError as e:
        if kmsg is not None:
            os.close(kmsg)
        if cg:
            cg.remove()
        warn(str(e))
        record_failed_start(args, identity, e, start, batches)
        if start_failed:
            start_failed(e)
        sys.exit(e.status)
    finally:
        if tramp is not None:
            os.close(tramp)
    sup = launcher.Supervisor(pid, wait_leftovers=args.wait,
                              on_command_exit=lambda n: n and args.wait and warn(
                                  f"command exited; waiting for {n} process(es) it left "
                                  "running (part of the job's cost; --no-wait ends here)"))
    job = None
    try:
        job = start_session(args, cg, start, t0, sup.reaped_peak, identity, command=pid,
                            base=base, overhead=overhead, kmsg=kmsg, batches=batches)
        sup.on_tick, sup.interval = job.tick, args.interval
        sup.on_reap = getattr(job.probe, "reaping", None)   # procfs: its census
    except Exception as e:  # monitoring could not start: the command runs all the same
        warn(f"monitoring disabled: {e}")
    sup.run(time.monotonic)
    summary = None
    if job:
        try:
            summary = finish(job, sup, cg, args)
        except Exception as e:
            warn(f"could not record the end of the job: {e}")
    if cg:
        cg.remove()
    if on_end and summary is not None:
        try:
            on_end(summary)
        except Exception as e:
            warn(f"after the job: {e}")
    launcher.exit_like(sup.status)


def _kernel_log(cg):
    """The kernel's log, opened before the job starts (for the story of an OOM kill in its
    cgroup): a job killed for memory before the session is set up -- seconds under
    emulation -- is in it too. None without a cgroup, or where it is not ours to read."""
    if cg is None:
        return None
    try:   # here, not through jobmon.summary.oom: nothing more to import before the job
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        os.lseek(fd, 0, os.SEEK_END)
    except OSError:
        os.close(fd)
        return None
    return fd


def start_session(args, cg, start, t0, kernel_peak, identity=None, command=None, base=None,
                  overhead=None, kmsg=None, batches=None):
    from .session import Session, describe_job, open_probe, open_sinks
    probe = open_probe(cg, warn, command=command)
    if identity is None:
        job = describe_job(args.job_id, probe.method, start, args.tags, args.cmd, args.interval)
    else:
        job = describe_job(identity.job, probe.method, start, identity.tags, args.cmd,
                           args.interval, identity.scheduler, identity.run)
    session = Session(job, probe, open_sinks(args.store, args.out, args.format, warn),
                      args.interval, t0=t0, kernel_peak=kernel_peak, kmsg=kmsg, batches=batches)
    if base is not None:     # an existing cgroup: count from the command's start
        from ..metrics import COUNTERS
        session.sampler.base = {k: base[k] for k in COUNTERS if k in base}
    elif cg is not None and not cg.created:
        session.zero()
    # the trampoline's CPU is jobmon's: in a cgroup's counters with the cgroup's split of
    # user and system time (jobmon.job.sampler.take_off), in the procfs probe's (jobmon's
    # RUSAGE_CHILDREN) with the very split wait4 gave
    if probe.method.startswith("cgroup"):
        session.sampler.cpu_overhead = sum((overhead or {}).values())
    else:
        for k, v in (overhead or {}).items():
            session.sampler.base[k] = session.sampler.base.get(k, 0.0) + v
    session.trampoline_in_cgroup = bool(overhead) and cg is not None
    session.command_pid = command
    return session


def record_failed_start(args, identity, err, start, batches=None):
    """A command that could not be started still gets a record: the exit status a shell
    gives (126, 127), no figures, and why (tag `start_failed`)."""
    from .session import Session, describe_job, open_sinks
    from ..probes import NoProbe
    job_id, tags, scheduler, run = (args.job_id, args.tags, "local", None) if identity is None \
        else (identity.job, identity.tags, identity.scheduler, identity.run)
    try:
        tags = dict(tags or {}, measured="none", start_failed=str(err))
        job = describe_job(job_id, NoProbe.method, start, tags, args.cmd, args.interval,
                           scheduler, run)
        sinks = open_sinks(args.store, args.out, args.format, warn)
        Session(job, NoProbe(), sinks, args.interval, kernel_peak=None,
                batches=batches).finish(err.status << 8)
    except Exception as e:   # the exit status is what matters now
        warn(f"could not record the failed start: {e}")


def counters_now(cg):
    """An existing cgroup's figures just before the command starts, or None: the counters
    among them (jobmon.metrics.COUNTERS, picked once the command runs: that table's import
    would delay its start) are its base. They run from the cgroup's creation; subtracted at
    the first sample instead, they would lose what the command used while jobmon set the
    sampler up."""
    from ..probes import select
    try:
        probe = select(cgroups=cg)
        try:
            return probe.read()
        finally:
            probe.close()
    except Exception:
        return None


def finish(job, sup, cg, args):
    """Final read after the job's last process is gone: exact totals, not the last sample."""
    from ..probes.procfs import reaped_io
    extra = {}
    if cg is not None and sup.status is not None:
        try:  # jobmon reaped the whole job: the kernel's per-task I/O totals are complete
            extra = reaped_io()
        except OSError:
            pass
    # what is left when the command ends: the scheduler kills it (a scheduler's job
    # wrapper, the job's top process, exits then), jobmon waits for it, or no one knows (--no-wait)
    killed = sup.leftovers if getattr(args, "leftovers_killed", False) else \
        0 if args.wait else None
    summary = job.finish(sup.status, sup.leftovers, extra, killed=killed)
    if args.summary:
        write_json(args.summary, summary)
    return summary


def write_json(path, obj):
    from ..sinks.jsontext import dumps
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(dumps(obj, indent=1) + "\n")
    os.replace(tmp, path)
