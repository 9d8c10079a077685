"""What `jobmon act` does to one job, by the site's [actions] policy (docs/actions.md):
decide() from the job's running records (their latest samples), the scheduler's word on
it (a LiveJob), and the warnings and actions already recorded. Pure: no store, no
scheduler, no clock of its own.

A job is idle when each of its records the scheduler confirms as its owner's (the
ownership verdict of jobmon.report.ownership.judge: own) says in its latest sample that
one of the policy's resources has been unused at least idle_seconds at a stretch
(cpu_idle_seconds, gpu_unused_seconds: jobmon.summary.idle). Its stretch is the shortest of its
records', and began when the latest of them began.

  busy          not idle (or no record of its own says so): nothing
  unconfirmed   no record the scheduler confirms as its owner's (its accounting names
                nobody, another user, another instance's job): never acted on
  gone          the scheduler does not know it, or it does not run: nothing
  opted-out     it opted out, and the site allows that: never acted on
  incomplete    the samples of a record of its own cover less of its run so far than the
                site's min_completeness_percent: its idle stretch is not known, never
                warned or acted on
  warn          idle, and not warned in this stretch: warned
  grace         warned in this stretch, less than grace_seconds of samples since: wait
  act           warned in this stretch and idle grace_seconds after: held / cancelled
  limited       would be acted on, but max_per_hour actions were taken in the last hour
  done          already acted on in this stretch (whatever the outcome): not again

Warnings and actions of a dry run count only for dry runs, and the others only for the
others, so a site can try its policy without touching a job."""
from ..config.actions import resources
from ..summary.completeness import so_far
from ..report.ownership import OWN, judge
from ..stores.ids import instance_in

HOUR = 3600.0
# a warning counts for the idle stretch it was given in: at or after the stretch began,
# give or take the clocks of the node that timed the samples and of the host that warned
CLOCK_SLACK = 60.0
SAMPLE_FIELD = {"cores": "cpu_idle_seconds", "gpus": "gpu_unused_seconds"}
ACTS = ("hold", "requeuehold", "cancel")


class Policy:
    def __init__(self, section, dry_run=False):
        # --dry-run decides as the policy would whatever its mode, "off" included
        self.mode = "dry-run" if dry_run else section["mode"]
        self.dry_run = self.mode == "dry-run"
        self.resources = resources(section)
        self.idle_seconds = section["idle_seconds"]
        self.grace_seconds = section["grace_seconds"]
        self.max_per_hour = section["max_per_hour"]
        self.allow_opt_out = section["allow_opt_out"]
        self.min_completeness = section.get("min_completeness_percent", 90.0)

    def idle(self, sample):
        """(stretch seconds, resources idle that long) of one record's latest sample, or
        None where none of the policy's resources is idle for idle_seconds."""
        idle = {r: sample.get(SAMPLE_FIELD[r]) for r in self.resources}
        idle = {r: s for r, s in idle.items()
                if isinstance(s, (int, float)) and s >= self.idle_seconds}
        return (max(idle.values()), ",".join(sorted(idle))) if idle else None


class Decision:
    """What to do about one job, and why (for the pass's log and the record)."""

    def __init__(self, kind, job, why="", **facts):
        self.kind, self.job, self.why = kind, job, why
        self.records = facts.pop("records", [])   # the job's own running records
        self.live = facts.pop("live", None)
        self.stretch = facts.pop("stretch", None)         # idle seconds at the evidence
        self.started = facts.pop("started", None)         # when the stretch began (s)
        self.seen = facts.pop("seen", None)               # the evidence's time (s)
        self.resources = facts.pop("resources", "")
        self.warned = facts.pop("warned", None)           # the warning record acted on
        self.facts = facts

    def __repr__(self):
        return f"Decision({self.kind!r}, {self.job!r}, {self.why!r})"


def decide(policy, job, rows, live, same_job, history, accounts=()):
    """The Decision for one job. rows: its running records, each a store record with its
    latest sample ("sample", time in ns); live: the scheduler's LiveJob or None;
    same_job(record, live): the scheduler's job is the record's; history: this job's
    recorded warnings and actions (any run), oldest first."""
    if live is None:
        return Decision("gone", job, "the scheduler does not know it (over, or never its)")
    own = [r for r in rows if same_job(r, live)
           and judge(r, {live.user} if live.user else set(), accounts) == OWN]
    if not own:
        users = ", ".join(sorted({str(r.get("user")) for r in rows}))
        return Decision("unconfirmed", job, f"no record of its owner {live.user!r} (the "
                        f"scheduler's word) among its records, run by {users}", live=live)
    if not live.running:
        return Decision("gone", job, "the scheduler says it does not run", live=live)
    if live.opted_out and policy.allow_opt_out:
        return Decision("opted-out", job, "the job opted out", live=live)
    covers = [so_far(r["sample"]) for r in own]
    short = [c for c in covers if c is not None and c < policy.min_completeness]
    if short:
        return Decision("incomplete", job, f"its samples cover {min(short):g} % of its run so "
                        f"far, under the site's {policy.min_completeness:g} %", live=live)
    idle = [policy.idle(r["sample"]) for r in own]
    if not all(idle):
        return Decision("busy", job, live=live)
    seen = min(r["sample"]["time"] for r in own) / 1e9
    started = max(r["sample"]["time"] / 1e9 - i[0] for r, i in zip(own, idle))
    facts = dict(records=own, live=live, stretch=min(i[0] for i in idle), started=started,
                 seen=seen, resources=",".join(sorted({x for i in idle
                                                       for x in i[1].split(",")})))
    mine = [a for a in history if bool(a.get("dry_run")) == policy.dry_run
            and (str(a.get("run") or ""), instance_in(a)) in
            {(str(r.get("run") or ""), instance_in(r)) for r in own}
            and a["time"] / 1e9 >= started - CLOCK_SLACK]
    acted = [a for a in mine if a.get("action") in ACTS]
    if acted:
        return Decision("done", job, f"{acted[-1]['action']} at {acted[-1]['time'] / 1e9:.0f} "
                        f"({acted[-1].get('outcome')})", **facts)
    warned = [a for a in mine if a.get("action") == "warn"]
    if not warned:
        return Decision("warn", job, **facts)
    w = warned[-1]["time"] / 1e9
    if seen - w < policy.grace_seconds:
        return Decision("grace", job, f"warned {seen - w:.0f} s before its latest sample, "
                        f"grace {policy.grace_seconds:.0f} s", warned=warned[-1], **facts)
    return Decision("act", job, warned=warned[-1], **facts)


def acted_last_hour(history, now, dry_run):
    """Actions (not warnings) of the last hour, of dry runs or of the others."""
    return sum(1 for a in history if a.get("action") in ACTS and
               bool(a.get("dry_run")) == dry_run and a["time"] / 1e9 > now - HOUR)
