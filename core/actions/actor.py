"""One pass of `jobmon act` (docs/actions.md): the running records' latest samples from
the store, the idle jobs among them, each scheduler asked once about those, a Decision
each (policy.py), then the warnings and actions, each recorded before it is carried out
and again with its outcome. A record that cannot be written stops the pass before
anything is done that would go unrecorded.

Runs beside `jobmon reconcile`, on one host that reads every node's samples and may act
on the schedulers' jobs; never inside a job or on the shipper's path."""
import time

from .. import schedulers as registry
from ..config.ownership import pilot_accounts
from ..stores.ids import JobRef, instance_in, instance_of
from . import ActionError
from . import policy as pol
from . import records, warning

FRESH_SECONDS = 600.0   # a record's latest sample must be this recent to count as running
SCHEDULERS = registry.tags()


class Pass:
    """What a pass decided (Decisions, in the order they were carried out), what it
    recorded, and what went wrong."""

    def __init__(self, policy):
        self.policy = policy
        self.decisions = []
        self.recorded = []      # the records as last written
        self.errors = []
        self.skipped = []       # records the pass could not weigh: each costs itself alone

    def counts(self):
        out = {}
        for d in self.decisions:
            out[d.kind] = out.get(d.kind, 0) + 1
        return out


def run_pass(cfg, store, schedulers, writer, now=None, dry_run=False,
             deliver=warning.deliver):
    """schedulers: {name: Scheduler} (a scheduler missing here: its jobs are left alone);
    writer: records.InfluxWriter or LocalWriter."""
    now = time.time() if now is None else now
    policy = pol.Policy(cfg["actions"], dry_run)
    out = Pass(policy)
    if policy.mode == "off":
        return out
    groups = {}
    for row in store.latest(now - FRESH_SECONDS):
        if row.get("scheduler") in SCHEDULERS and row.get("job") and _usable(row, out):
            groups.setdefault((row["scheduler"], str(row["job"])), []).append(row)
    idle = {k: g for k, g in groups.items() if any(policy.idle(r["sample"]) for r in g)}
    if not idle:
        return out
    _describe(store, idle)
    starts = [r["sample"]["time"] / 1e9 - (policy.idle(r["sample"]) or (0,))[0]
              for g in idle.values() for r in g]
    # (a stretch is within a run's wall time: the store's reads leave out any other)
    history = store.actions(since=max(min(starts + [now - pol.HOUR]) - pol.CLOCK_SLACK, 0))
    out.decisions = _decide(policy, idle, schedulers, history, pilot_accounts(cfg), out)
    _carry_out(out, cfg, schedulers, writer, history, now, deliver)
    return out


def _usable(row, out):
    """Can the pass weigh this record? One that cannot (a sample without a time, a figure
    of the wrong kind) costs that record alone, said once in out.skipped."""
    sample = row.get("sample")
    try:
        if not isinstance(sample.get("time"), int):
            raise ValueError("its latest sample has no time")
        out.policy.idle(sample)
        return True
    except Exception as e:
        out.skipped.append(f"record of job {row.get('job')} on {row.get('host')}: left out "
                           f"({type(e).__name__}: {e})"[:300])
        return False


def _describe(store, idle):
    """Each running record with its description (tags: the scheduler's own ids), matched by
    its series' tags (two instances' job of one id, user and node are two records)."""
    ids = sorted({job for _s, job in idle})
    described = {_key(r, instance_of(r)): r
                 for r in store.records(JobRef(ids[0] if len(ids) == 1 else "", ids))}
    for group in idle.values():
        for row in group:
            rec = described.get(_key(row, instance_in(row)))
            row["tags"] = (rec or {}).get("tags") or {}


def _key(record, instance):
    return (str(record.get("job")), record.get("host"), record.get("user"),
            str(record.get("run") or ""), instance or None)


def _decide(policy, idle, schedulers, history, accounts, out):
    decisions = []
    for name in SCHEDULERS:
        jobs = {job: g for (s, job), g in idle.items() if s == name}
        if not jobs:
            continue
        sched = schedulers.get(name)
        try:
            if sched is None:
                raise ActionError(f"no access to {name} here ({registry.get(name).actions_need})")
            lives = sched.jobs([r for g in jobs.values() for r in g])
        except ActionError as e:
            out.errors.append(str(e))
            decisions += [pol.Decision("unavailable", job, str(e)) for job in jobs]
            continue
        same = getattr(sched, "same_job", lambda _r, _l: True)
        for job, group in sorted(jobs.items()):
            mine = [a for a in history if str(a.get("job")) == job
                    and a.get("scheduler") == name]
            try:
                decisions.append(pol.decide(policy, job, group, lives.get(job), same, mine,
                                            accounts))
            except Exception as e:   # this job's records alone: the pass goes on
                out.skipped.append(f"job {job}: left out ({type(e).__name__}: {e})"[:300])
    # the longest idle first, where the hourly limit leaves room for some only
    return sorted(decisions, key=lambda d: -(d.stretch or 0))


def _carry_out(out, cfg, schedulers, writer, history, now, deliver):
    policy, who = out.policy, records.actor()
    acted = pol.acted_last_hour(history, now, policy.dry_run)
    for d in out.decisions:
        if d.kind == "act" and acted >= policy.max_per_hour:
            d.kind, d.why = "limited", (f"{acted} action(s) in the last hour, the site's "
                                        f"max_per_hour is {policy.max_per_hour}")
        if d.kind not in ("warn", "act"):
            continue
        sched = schedulers[d.records[0]["scheduler"]]
        action = "warn" if d.kind == "warn" else sched.action
        reason = (warning.reason_text if d.kind == "act" else warning.warn_reason)(
            d, policy, sched.action)
        rec = records.make(d, action, reason, policy, time.time_ns(), who)
        try:
            writer.write([rec])          # recorded before anything is done
        except Exception as e:
            out.errors.append(f"cannot record the {action} of job {d.job}: {e}; "
                              "nothing more is done this pass")
            d.kind, d.why = "unrecorded", str(e)
            return
        rec["outcome"] = _outcome(d, action, sched, policy, cfg, deliver, reason)
        acted += d.kind == "act"
        try:
            writer.write([rec])
        except Exception as e:
            out.errors.append(f"job {d.job}: {action} {rec['outcome']}, but its outcome "
                              f"is not recorded (it stays 'pending'): {e}")
        d.why = rec["outcome"]
        out.recorded.append(rec)


def _outcome(d, action, sched, policy, cfg, deliver, reason):
    """Carry out the warning or the action (a dry run: neither); what came of it."""
    section = cfg["actions"]
    if action == "warn":
        if policy.dry_run:
            return f"dry run: not sent ({section['warn']})"
        try:
            return deliver(d, warning.warning_text(d, policy, sched.action),
                           warning.subject(d, policy), section, cfg["report"])
        except Exception as e:     # the mailer, the directory: the record says so
            return f"failed: {type(e).__name__}: {e}"
    if policy.dry_run:
        return "dry run: not done"
    try:
        return "done: " + sched.act(d.live, reason)
    except ActionError as e:
        return f"failed: {e}"
