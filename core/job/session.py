"""One monitored job: description -> probe -> sampler -> sinks -> end record.

Shared by `jobmon run` and a scheduler's job wrapper (runner.py), the library API
(jobmon.api) and the attach mode for jobs someone else started (jobmon.attach.watch). Standard library only.
"""
import os

from .sampler import Sampler, reaped_peak
from ..summary import exit_fields


def user_name(uid=None):
    try:
        import pwd
        return pwd.getpwuid(os.getuid() if uid is None else uid).pw_name
    except (KeyError, ImportError):
        return str(os.getuid() if uid is None else uid)


def describe_job(job_id, method, start, tags, command, interval, scheduler="local", run=None,
                 hashed=True):
    """What a sink is told about the job when it opens. run: which run of a job that the
    scheduler ran more than once (evicted, held and released: 1, 2, ...), else None.
    The tags get the command line's hash (jobmon.stores.fingerprint), never its text there;
    hashed False: the command is a name for it, not what ran (the library API)."""
    tags = dict(tags or {})
    if hashed and command and "command_hash" not in tags:   # a plugin's own (from its job ad) first
        from ..stores.fingerprint import digest
        tags["command_hash"] = digest(command)
    return {"job": job_id or f"local-{int(start)}-{os.getpid()}",
            "host": os.uname().nodename, "user": user_name(), "method": method,
            "start_time": round(start, 3), "tags": tags, "command": list(command),
            "interval": interval, "scheduler": scheduler, "run": run}


def open_probe(cg, warn, root=None, include_root=False, command=None):
    """The job's probe: its cgroup's if it has one that works, else its process tree
    below `root` (default: this process, which started `command`); plus what the node
    reader publishes for it (GPUs, energy, network) where it runs."""
    from ..probes import select, with_node
    probe = None
    if cg is not None:
        try:
            probe = select(cgroups=cg)
        except OSError as e:
            warn(f"cgroup probe failed ({e}); measuring through /proc")
    if probe is None:
        probe = select(root=root or os.getpid(), include_root=include_root, command=command)
    return with_node(probe, warn, cg if probe.method.startswith("cgroup") else None)


def open_sinks(store, out, fmt, warn):
    """Where samples go: the site's InfluxDB spool when the config says so (and no
    --store was given), else the embedded store (unless store == "none"); plus --out."""
    sinks = []
    spool = None
    if store is None:
        try:
            from .. import config
            cfg = config.load()
            if cfg.uses_influxdb:
                from ..sinks.spool import SpoolSink
                spool = SpoolSink(cfg["spool"]["dir"])
        except Exception as e:  # fail open: the embedded store keeps the samples
            warn(f"InfluxDB spool unusable ({e}); using the embedded store")
    if spool is not None:
        sinks.append(spool)
    elif store != "none":
        from ..stores import store_path
        from ..stores.local import LocalStore
        try:
            sinks.append(LocalStore(store or store_path()))
        except Exception as e:
            warn(f"store not writable ({e}); samples not stored")
    if out:
        from ..sinks.textfile import TextSink
        try:
            sinks.append(TextSink(out, fmt))
        except OSError as e:
            warn(f"cannot write {out}: {e}")
    return sinks


class Session:
    """A job being sampled: tick() while it runs, finish() once it is over."""

    def __init__(self, job, probe, sinks, interval, t0=None, own_process=True,
                 kernel_peak=reaped_peak, kmsg=None, batches=None):
        self.job = job
        self.batches = batches   # its scheduler's jobmon.summary.batches.Known, if given
        self.sampler = Sampler(probe, sinks, job, interval, own_process=own_process,
                               kernel_peak=kernel_peak)
        if t0 is not None:   # the job started before the sampler was set up
            self.sampler.t0 = self.sampler.last_t = t0
            started = getattr(probe, "job_started", None)   # its GPUs' energy from there
            if started is not None:
                started(t0)
        self.limits = None   # what the kernel holds the job to, read while it runs
        # the exec trampoline started the job from inside its cgroup: for a moment the
        # cgroup held two tasks, the trampoline and the job's first process
        self.trampoline_in_cgroup = False
        self.command_pid = None   # the job's command, where jobmon started (and reaps) it
        self.oom = _oom_watch(probe, kmsg)   # kmsg: the kernel's log, opened at the job's start

    @property
    def probe(self):
        return self.sampler.probe

    def zero(self):
        """Count from now: the cgroup or process existed before the job began."""
        self.sampler.zero()

    def tick(self):
        sample = self.sampler.tick()
        if not self.limits and self.sampler.fold.samples <= 3:   # its processes may come late
            self.limits = self._limits()
            if self.limits.get("memory_bytes"):
                self.sampler.fixed["mem_limit_bytes"] = self.limits["memory_bytes"]
        self._oom_check(sample)
        return sample

    def _oom_check(self, sample):
        if self.oom is not None:
            try:
                self.oom.check(sample, (self.limits or {}).get("memory_bytes"))
            except Exception as e:   # the story is worth less than the sample
                self.sampler._warn(f"out-of-memory record: {e}")
                self.oom = None

    def _limits(self):
        try:
            return self.sampler.probe.limits()
        except Exception:   # a figure for the report: never worth failing the sampler
            return {}

    def finish(self, status=None, leftovers=0, extra=None, killed=None):
        """The final read (after the job's last process is gone, with `extra` holding
        exact totals the probe cannot see), the summary, and the sinks closed. leftovers:
        processes still running when the command ended; killed: those of them the
        scheduler killed (None: not known)."""
        sampler = self.sampler
        self._oom_check(sampler.tick(extra=extra, final=True))
        tasks_peak = getattr(sampler.probe, "tasks_peak", lambda: None)()
        if tasks_peak == 2 and self.trampoline_in_cgroup:
            tasks_peak = None   # that moment, not the job's: the samples say what it had
        s = {k: self.job.get(k) for k in ("job", "host", "user", "method", "start_time", "tags")}
        procs_peak = getattr(sampler.probe, "procs_peak", lambda: None)()
        from ..config import report_section
        report = report_section(sampler._warn)
        s.update(sampler.fold.totals(tasks_peak, procs_peak, report["idle_allocation_seconds"]))
        s["end_time"] = round(self.job["start_time"] + s["wall_seconds"], 3)
        s.update(exit_fields(status))
        # a scheduler's job waits for its record of the run (`jobmon reconcile`)
        s.update(cut_short=0, missing_seconds_max=_unread(self.job),
                 reconciled=int(self.job.get("scheduler") in (None, "local")))
        s["leftover_procs"], s["procs_killed_at_end"] = leftovers, killed
        s["interval_seconds"] = sampler.interval
        s.update(sampler.self_metrics())
        # the node reader's figures: samples without GPU figures, energy to the job's end
        node = getattr(sampler.probe, "node_summary", None) or \
            getattr(sampler.probe, "gpu_summary", None)
        s.update(node() if node else {"gpu_samples_missing": None})
        from ..summary.efficiency import allocation, figures, sizing_basis
        s["mem_sizing_basis"] = sizing_basis(s, reaped=sampler.kernel_peak is not None)
        alloc = allocation(self.job.get("tags"), self.limits or self._limits(), s.get("gpu_count"))
        s.update(figures(s, alloc))
        from ..probes.pressure import psi_state
        s["network_fs"] = sampler.netfs.text() if sampler.netfs else None
        s["pressure_source"] = getattr(sampler.probe, "pressure_source", None)
        s["psi"] = psi_state()
        if self.oom is not None:
            killed = self.command_pid and s.get("signal") == 9   # SIGKILL: maybe the victim
            s.update(self.oom.fields((self.command_pid, os.path.basename(
                str(self.job["command"][0]))) if killed and self.job.get("command") else None,
                end=s["end_time"]))
            self.oom.close()
        from ..summary.completeness import fields as completeness
        s.update(completeness(s))
        s["command"] = self.job.get("command")
        from ..summary.batches import batch_text
        s["batch"] = batch_text(self.job, self.batches)
        if any(getattr(x, "ships", False) for x in sampler.sinks):   # ~2 ms: where it is read
            s["advice"] = _advice(dict(s, scheduler=self.job.get("scheduler")))
        s["lost_points"] = 0
        sampler.close(s)
        # the points the spool could not take, as its end-of-job line counts them
        s["lost_points"] = sum(x.lost for x in sampler.sinks
                               if isinstance(getattr(x, "lost", None), int))
        return s


def _oom_watch(probe, kmsg=None):
    """An OomWatch of the job's memory cgroup (cgroup probes), or None. kmsg: a descriptor
    of the kernel's log opened before the job started, if there is one (it is the
    watch's, or closed here)."""
    cg = getattr(probe, "cg", None)
    d = cg and (cg.dirs.get("memory") or cg.dirs.get("v2"))
    if d:
        from ..summary.oom import KMSG, OomWatch
        try:
            return OomWatch(d, kmsg=KMSG if kmsg is None else kmsg)
        except Exception:
            pass
    if kmsg is not None:
        os.close(kmsg)
    return None


def _advice(summary):
    """The advice on the run by the site's thresholds (its [report], else the defaults),
    for the summary's `advice`; None where it fails (never the job's end)."""
    from ..config.report import defaults
    try:
        from .. import config
        cfg = config.load()["report"]
    except Exception:   # the job's end goes on: the defaults
        cfg = defaults()
    try:
        from ..summary.advice import summary_text
        return summary_text(summary, cfg)
    except Exception:
        return None


def _unread(job):
    """Seconds after the last read that the figures lack: those of a cgroup removed
    before the final read (the attach mode's `unread_seconds` tag), else 0."""
    tags = job.get("tags") or {}
    if tags.get("measured") != "job-cgroup-last-read":
        return 0.0
    try:
        return float(tags.get("unread_seconds") or 0)
    except ValueError:
        return 0.0
