"""Attach mode: sample a job in a cgroup someone else made (a scheduler), from beside it.

A scheduler's sampler uses it, started by its job-start hook: it starts before the job has
a cgroup, waits for the cgroup to appear (bounded), samples it through the cgroup probes,
and ends when the job is over -- its processes all gone, its cgroup removed, or told so
(the job-end hook). The end
comes fast: the sampler holds a pidfd for each of the job's oldest processes (and, on v2,
polls cgroup.events), so the final read happens right after the last process exits and
before the scheduler removes the cgroup. Standard library only.

A job that ended before its cgroup was ever seen still gets a record, with no figures
(none is guessed) and the tag `measured=none`; one whose cgroup was removed before the
final read gets the last read's totals and `measured=job-cgroup-last-read`, with what is
missing in the tag `missing`.
"""
import os
import select
import time

from ..cgroups import search as cgroup_search
from ..summary.efficiency import sizing_basis, sizing_peak
from ..job.session import Session, describe_job, open_probe, open_sinks
from ..probes import NoProbe
from .probe import Excluding, Held, OwnLeaves
from .ends import EndKills
from .steps import Steps, started
from .wait import Stop, proc_environ, wait, wait_for_cgroup

MAX_PIDFDS = 32          # the job's oldest processes; its end is theirs
LOOK = 0.1               # seconds between looks for new steps (one directory listing)
# seconds between looks for the job's new processes (pidfds for them): each exit of a
# process that lived longer than this wakes the sampler for a read, so a cgroup removed
# right after the job's end misses at most what was used since the last exit seen
HOLD_LOOK = 0.5


class Options:
    interval = 10.0          # seconds between samples
    cgroup_wait = 300.0      # seconds to wait for the job's cgroup to appear
    # seconds to wait for a process that names the job: a batch step may start well
    # after the job's cgroup appears (other Prologs, a loaded node); the figures are read
    # meanwhile, only the live series starts later
    refine_wait = 30.0
    end_wait = 0.0           # after the job ended: seconds to wait to be told its status
    rerun_wait = 0.0         # then: seconds to wait for its next run (a requeue)
    record_unseen = True     # a job whose cgroup never appears gets a record saying so
    store = None             # as `jobmon run --store`
    out = None
    format = "jsonl"

    def __init__(self, **kw):
        for k, v in kw.items():
            if not hasattr(Options, k):
                raise TypeError(f"unknown option {k}")
            setattr(self, k, v)


class Watch:
    """One attached job. run() does it all and returns the summary of each run."""

    def __init__(self, identity, find, opts, warn, stop=None, refine=None,
                 step_name=None, tags_ready=None, next_run=None, own_leaves=(),
                 task_parent=None, fingerprint=None):
        """find() -> JobCgroups or None; refine(identity, environ) -> identity or None
        (None: that process tells nothing); tags_ready(identity) -> True when refining
        is not needed; step_name(dir name) -> step id or None (not a step);
        next_run(identity) -> the identity of the job's next run on this node;
        own_leaves: names of the leaves below each step that hold the scheduler's own
        processes (probe.py); task_parent: the command name of the process that
        starts a step's tasks (ends.py: what it kills when they end);
        fingerprint(identity, pids) -> tags that say what the job ran ({} while none of
        `pids` tells: looked for again at each sample for refine_wait seconds)."""
        self.identity, self.find, self.opts, self.warn = identity, find, opts, warn
        self.own_leaves, self.task_parent = own_leaves, task_parent
        self.stop = stop or Stop()
        self.refine, self.tags_ready, self.step_name = refine, tags_ready, step_name
        self.next_run = next_run
        self.fingerprint = fingerprint
        self.unprinted = None     # (identity, deadline) while fingerprint() said nothing
        self.next_cg = None       # the cgroup of the job's next run, seen early
        self.session = None
        self.pidfds = {}          # pid -> pidfd
        self.seen_procs = False
        self.steps = None
        self.ends = None          # ends.EndKills of the run being sampled

    def run(self):
        """Sample the job's runs on this node until told it is over. A requeued job may
        run again here without a new start hook (a scheduler may run one per job id until
        the job's end hook): after a run the sampler waits up to rerun_wait for the next one."""
        start = time.time()
        cg = wait_for_cgroup(self.find, self.opts.cgroup_wait, self.stop)
        if cg is None:
            return [self._unseen(start)] if self.opts.record_unseen else []
        summaries, ident, first = [], self.identity, True
        try:
            while True:
                summaries.append(self._sample(cg, ident, first))
                if self.stop.asked or not self.opts.rerun_wait or not self.next_run:
                    return summaries
                cg, self.next_cg = self.next_cg, None
                cg = cg or wait_for_cgroup(self.find, self.opts.rerun_wait, self.stop)
                if cg is None:
                    return summaries
                ident, first = self.next_run(ident), False
                self.seen_procs, self.steps = False, None
        finally:
            for fd in self.pidfds.values():
                os.close(fd)
            self.pidfds = {}
            if self.ends is not None:
                self.ends.close()

    # --- a job never seen ---
    def _unseen(self, start):
        why = "told to stop" if self.stop.asked else \
            f"not there within {self.opts.cgroup_wait:g} s"
        tags = dict(self.identity.tags, measured="none",
                    missing=f"all figures: the job's cgroup was never seen ({why}); the "
                            "job may have ended before the sampler looked")
        job = describe_job(self.identity.job, NoProbe.method, start, tags, [],
                           self.opts.interval, self.identity.scheduler, self.identity.run)
        session = Session(job, NoProbe(), self._sinks(), self.opts.interval,
                          kernel_peak=None)
        return session.finish(self.stop.status())

    # --- a job seen ---
    def _sample(self, cg, ident, first):
        first_seen, mono = time.time(), time.monotonic()
        own = OwnLeaves(cg, self.own_leaves)
        probe = Held(Excluding(open_probe(cg, self.warn), own))
        probe.read()                        # at once: a short job's cgroup goes soon
        if self.step_name is not None:
            if self.ends is not None:
                self.ends.close()      # the run before's
            self.ends = EndKills(self.task_parent) if self.task_parent else None
            self.steps = Steps(cg, self.step_name, own, self.ends)
            self.steps.update()
        pids = probe.pids()
        start = started(pids, first_seen)   # seen late: count from its first process
        identity = self._identify(ident, first, pids, cg, probe)
        printed = self.fingerprint(identity, pids) if self.fingerprint else {}
        job = describe_job(identity.job, probe.method, start,
                           dict(identity.tags, measured="job-cgroup", **printed), [],
                           self.opts.interval, identity.scheduler, identity.run)
        tags = job["tags"]                  # the summary and the end point carry these
        self.unprinted = (identity, time.monotonic() + self.opts.refine_wait) \
            if self.fingerprint and not printed else None
        # kernel_peak=None: it reaps none of the job's processes, so no per-process
        # high-water mark backs the sampled footprint (the cgroup's own peak sizes the job)
        self.session = Session(job, probe, self._sinks(), self.opts.interval,
                               t0=mono - (first_seen - start), kernel_peak=None)
        events = self._events_fd(cg)
        try:
            ended = self._loop(cg, probe, events)
        finally:
            if events is not None:
                os.close(events)
        end = ended or time.monotonic()
        probe.freeze()                 # before the scheduler removes the cgroup
        if self.steps is not None:
            self.steps.update(final=True)
            self.steps.reconcile(probe.last)
        if probe.last is None:
            tags["measured"] = "none"
            tags["missing"] = "all figures: the job's cgroup was removed before its first read"
        elif ended is None:
            tags["measured"] = "job-cgroup-last-read"
            tags["missing"] = "the end: sampling stopped while the job still ran"
        elif probe.gone and not probe.complete() and not (self.steps and self.steps.complete()):
            unread = max(end - probe.last_t, 0)
            tags["measured"] = "job-cgroup-last-read"
            tags["unread_seconds"] = f"{unread:.3f}"
            tags["missing"] = (f"what the job used in its last {unread:.3f} s: its cgroup "
                               "was removed before the final read")
        status = self._await_status()
        self.session.sampler.clock = lambda: end   # the job's end, not the Epilog's word
        leftovers, killed = self.ends.totals() if self.ends is not None else (None, None)
        summary = self.session.finish(status, leftovers, killed=killed)
        if self.steps is not None:
            summary["steps"] = self.steps.records(job)
            self._emit_steps(job, summary["steps"])
        return summary

    def _emit_steps(self, job, steps):
        """Each step as a record of its own (job id `<job>.<step>`, as schedulers' accounting names steps):
        its description and end-of-step figures, no samples."""
        for rec in steps:
            tags = dict(job["tags"], step=rec["step"], parent_job=job["job"],
                        measured="step-cgroup" if rec["complete"] else "step-cgroup-last-read")
            tags.pop("missing", None)
            tags.pop("unread_seconds", None)
            desc = dict(job, job=rec["job"], tags=tags, start_time=rec["start_time"])
            summary = {k: desc.get(k) for k in ("job", "host", "user", "method", "tags")}
            summary.update({k: v for k, v in rec.items() if k not in ("job", "step")})
            summary["samples"] = 0
            summary["mem_sizing_basis"] = sizing_basis(summary, reaped=False)
            summary["mem_sizing_peak_bytes"] = sizing_peak(summary)[0]
            for sink in self._sinks():
                try:
                    sink.open(desc)
                    sink.close(summary)
                except Exception as e:   # one step's record lost, not the job's
                    self.warn(f"step {rec['step']}: {e}")

    def _identify(self, ident, first, pids, cg, probe):
        """The identity, completed from the job's processes where the scheduler's
        environment lacks something, or for a later run (bounded by refine_wait)."""
        if not self.refine or (first and self.tags_ready and self.tags_ready(ident)):
            return ident
        deadline = time.monotonic() + self.opts.refine_wait
        tried = set()
        while True:
            for pid in sorted(pids):
                if pid not in tried:
                    tried.add(pid)
                    better = self.refine(ident, proc_environ(pid))
                    if better is not None:
                        return better
            if time.monotonic() >= deadline or self.stop.asked or cgroup_search.gone(cg):
                return ident
            if wait([self.stop.fd], 0.05):
                self.stop.drain()
            probe.read()                    # keeps the latest figures meanwhile
            if self.steps is not None:
                self.steps.update()
            pids = probe.pids()
            if not pids and tried:          # over before it said who it is
                return ident

    def _look_for_print(self, probe, now):
        """What the job ran, where its first look did not tell (its script's process
        started later): into its tags, which the end-of-job record carries."""
        if self.unprinted is None:
            return
        identity, deadline = self.unprinted
        printed = self.fingerprint(identity, probe.pids())
        self.session.job["tags"].update(printed)
        if printed or now >= deadline:
            self.unprinted = None

    def _sinks(self):
        o = self.opts
        return open_sinks(o.store, o.out, o.format, self.warn)

    def _events_fd(self, cg):
        """cgroup.events of a v2 job cgroup: the kernel signals POLLPRI when "populated"
        changes, so the sampler wakes when the job's last process is gone."""
        if cg.version != 2:
            return None
        try:
            return os.open(os.path.join(cg.dirs["v2"], "cgroup.events"),
                           os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None

    def _loop(self, cg, probe, events):
        """Sample until the job is over: its cgroup removed, or told so. Returns the
        monotonic time it ended (its last process gone), or None if told to stop while
        it still ran. A job with no process left is not yet over: another step may
        start (an allocation without an extern step); it is read once more then.
        Between samples it looks for new steps every LOOK seconds (one directory
        listing), so that a short step is read, and held by pidfds, while it runs."""
        session, interval = self.session, self.opts.interval
        next_tick = next_hold = time.monotonic()
        empty_since = None
        refresh = True
        while True:
            now = time.monotonic()
            if now >= next_tick:
                sample = session.tick()
                self._look_for_print(probe, now)
                next_tick = max(next_tick + interval, now)
                if self.steps is not None:
                    self.steps.update()
                if sample.get("procs"):
                    self.seen_procs = True
                refresh = True
            if now >= next_hold:
                next_hold = now + HOLD_LOOK
                refresh = refresh or len(self.pidfds) < MAX_PIDFDS
            if probe.gone or cgroup_search.gone(cg):
                return empty_since or time.monotonic()
            if refresh:
                if self._refresh(probe):
                    empty_since = None
                elif self.seen_procs and empty_since is None:
                    empty_since = time.monotonic()
                    self._read_now(probe)   # its final figures, before the cgroup goes
            if self.stop.asked:
                return empty_since
            timeout = min(next_tick, next_hold) - time.monotonic()
            if self.steps is not None or empty_since is not None:
                timeout = min(timeout, LOOK)   # v1 says nothing when a cgroup comes or goes
            ends = self.ends.poll_fds() if self.ends is not None else []
            fired = wait([self.stop.fd] + list(self.pidfds.values()) + ends, timeout,
                         {events: select.POLLPRI} if events is not None else None)
            if self.stop.fd in fired:
                self.stop.drain()
            refresh = False
            if self.ends is not None and self.ends.fired(fired):
                self.steps.look_procs()   # tasks just ended: before leftovers are killed
                refresh = True
            for pid, fd in list(self.pidfds.items()):
                if fd in fired:   # that process has exited
                    os.close(fd)
                    del self.pidfds[pid]
                    refresh = True
            if events is not None and events in fired:
                refresh = True
            if self.steps is not None and self.steps.appeared():
                refresh = True
            if refresh:   # a step began or ended: read now, its cgroup may soon go
                self._read_now(probe)

    def _read_now(self, probe):
        """A read outside the sample schedule (the job's first: it holds every step)."""
        probe.read()
        if self.steps is not None:
            self.steps.update()

    def _refresh(self, probe):
        """True while the job has processes; holds pidfds for the oldest of them."""
        pids = probe.pids()
        if pids:
            self.seen_procs = True
        for pid in pids:
            if len(self.pidfds) >= MAX_PIDFDS:
                break
            if pid not in self.pidfds:
                try:
                    self.pidfds[pid] = os.pidfd_open(pid)
                except OSError:    # gone already, or no pidfds (kernel < 5.3)
                    pass
        return bool(pids)

    def _await_status(self):
        """After the job's end: the status the Epilog brings, waited for up to end_wait;
        None if it does not come, or if the job's next run begins meanwhile (this one was
        requeued: no Epilog ran for it)."""
        deadline = time.monotonic() + self.opts.end_wait
        while not self.stop.asked and self.stop.fd is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if wait([self.stop.fd], min(left, LOOK) if self.next_run else left):
                self.stop.drain()
            if self.next_run and not self.stop.asked:
                try:
                    self.next_cg = self.find()
                except OSError:
                    pass
                if self.next_cg is not None:
                    return None
        return self.stop.status() if self.stop.asked else None
