"""`jobmon run`: run one command under the sampler. Standard library only.

Order matters for start-up time: block signals, make the cgroup, start the command, and
only then set up the probe, the store and the other sinks.  Every step after the command
has started fails open: the command keeps running, unmonitored if need be, and jobmon
exits with its status.
"""
import argparse
import os
import sys
import time

from . import cgroups, launcher, trampoline

USAGE = "jobmon run [OPTIONS] -- CMD [ARGS...]"


def parser():
    p = argparse.ArgumentParser(prog="jobmon run", usage=USAGE,
                                description="Run CMD and sample its resource use.")
    p.add_argument("--interval", type=float, default=1.0, metavar="S",
                   help="seconds between samples (default 1)")
    p.add_argument("--job-id", metavar="ID", help="job id to store the run under "
                   "(default: local-<start time>-<pid>)")
    p.add_argument("--tag", action="append", default=[], metavar="K=V",
                   help="tag every sample with K=V (repeatable)")
    p.add_argument("--format", choices=("jsonl", "csv"), default="jsonl",
                   help="format of --out (default jsonl)")
    p.add_argument("--out", metavar="FILE|-", help="also write samples to FILE or stdout (-)")
    p.add_argument("--summary", metavar="FILE", help="write the end-of-job summary (JSON) here")
    p.add_argument("--store", metavar="PATH", help="embedded store file, or 'none' "
                   "(default: $JOBMON_STORE or $XDG_DATA_HOME/jobmon/jobmon.db)")
    p.add_argument("--cgroup", choices=("auto", "create", "existing", "none"), default="auto",
                   help="auto: a transient cgroup when root, else procfs; create / existing: "
                   "insist on a new / the current cgroup; none: procfs only")
    p.add_argument("--cgroup-version", type=int, choices=(1, 2), default=None,
                   help="prefer cgroup v1 or v2 (default: v2 where it has memory accounting)")
    p.add_argument("--no-wait", dest="wait", action="store_false",
                   help="end when the command exits; do not wait for processes it left running")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD")
    return p


def parse_tags(items):
    tags = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k or not all(c.isalnum() or c in "_.-" for c in k):
            raise ValueError(f"bad --tag {item!r}: expected KEY=VALUE, KEY of letters, digits, _ . -")
        tags[k] = v
    return tags


def parse(argv):
    args = parser().parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        parser().error("no command given (jobmon run [OPTIONS] -- CMD [ARGS...])")
    if args.interval <= 0:
        parser().error("--interval must be > 0")
    try:
        args.tags = parse_tags(args.tag)
    except ValueError as e:
        parser().error(str(e))
    args.cmd = cmd
    return args


def warn(msg):
    sys.stderr.write(f"jobmon: {msg}\n")
    sys.stderr.flush()


def main(argv):
    args = parse(argv)
    start = time.time()
    t0 = time.monotonic()
    launcher.block_signals()
    launcher.set_subreaper()
    cg = cgroups.for_job(args.cgroup, args.cgroup_version, f"jobmon-{os.getpid()}")
    if cg is None and args.cgroup in ("create", "existing"):
        warn(f"no usable cgroup ({args.cgroup}); measuring through /proc")
    tramp = trampoline.load()
    try:
        pid = launcher.spawn(args.cmd, cg, tramp)
    except launcher.StartError as e:
        if cg:
            cg.remove()
        warn(str(e))
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
        job = start_session(args, cg, start, t0, sup.reaped_peak)
        sup.on_tick, sup.interval = job.tick, args.interval
    except Exception as e:  # monitoring could not start: the command runs all the same
        warn(f"monitoring disabled: {e}")
    sup.run(time.monotonic)
    if job:
        try:
            finish(job, sup, cg, args)
        except Exception as e:
            warn(f"could not record the end of the job: {e}")
    if cg:
        cg.remove()
    launcher.exit_like(sup.status)


def start_session(args, cg, start, t0, kernel_peak):
    from .session import Session, describe_job, open_probe, open_sinks
    probe = open_probe(cg, warn)
    job = describe_job(args.job_id, probe.method, start, args.tags, args.cmd, args.interval)
    session = Session(job, probe, open_sinks(args.store, args.out, args.format, warn),
                      args.interval, t0=t0, kernel_peak=kernel_peak)
    if cg is not None and not cg.created:
        session.zero()  # an existing cgroup counts from its own creation
    return session


def finish(job, sup, cg, args):
    """Final read after the job's last process is gone: exact totals, not the last sample."""
    from .probes.procfs import reaped_io
    extra = {}
    if cg is not None and sup.status is not None:
        try:  # jobmon reaped the whole job: the kernel's per-task I/O totals are complete
            extra = reaped_io()
        except OSError:
            pass
    summary = job.finish(sup.status, sup.leftovers, extra)
    if args.summary:
        write_json(args.summary, summary)


def write_json(path, obj):
    import json
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
