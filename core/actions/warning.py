"""What `jobmon act` tells a job's user, and how: the report card's channels
(jobmon.sinks.card) as [actions] warn says -- mail through the site's [report] mailer to
the job's mail address (the one its scheduler names) or its user, a file
of the user's own in [actions] warn_dir, or none (the record alone: `jobmon query` and
the dashboards show it). The texts say what was seen, what happens next and how to opt
out where the site allows it."""
import datetime
import pwd

from .. import schedulers
from ..printable import clean
from ..sinks import card

WHAT = {"cores": "cores at ~0 CPU", "gpus": "GPUs with none of its processes on them"}


def duration(seconds):
    return str(datetime.timedelta(seconds=round(seconds or 0)))


def utc(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S UTC")


def idle_words(d):
    return " and ".join(WHAT[r] for r in d.resources.split(",") if r in WHAT)


def hosts(d):
    return ", ".join(sorted({str(r.get("host")) for r in d.records if r.get("host")}))


def next_text(action):
    """What `action` does to a job, in its user's words (the scheduler whose action it is)."""
    return next(s.action_texts[action] for s in schedulers.all() if action in s.action_texts)


def warning_text(d, policy, action):
    """The warning's body for Decision `d` (a job about to be `action`ed)."""
    job = clean(d.job)
    lines = [f"jobmon: your job {job} (on {clean(hosts(d)) or '?'}) has held its "
             f"{idle_words(d)} for {duration(d.stretch)}, since {utc(d.started)}.",
             "",
             f"This site acts on jobs that hold an allocation they do not use. If it is "
             f"still idle {duration(policy.grace_seconds)} from now, it will be "
             + next_text(action).format(id=job) + ".",
             ]
    if policy.max_per_hour == 0:
        lines[-1] = "This site asks that jobs do not hold an allocation they do not use."
    if policy.allow_opt_out and d.live is not None:
        sched = schedulers.find(d.records[0].get("scheduler")) if d.records else None
        how = sched.opt_out if sched else None
        if how:
            lines += ["", "If it waits on purpose, the job can opt out: " + how.format(id=job)
                      + "."]
    return "\n".join(lines) + "\n"


def warn_reason(d, policy, action):
    """The reason kept with a warning."""
    then = "" if policy.max_per_hour == 0 else \
        f"; {action} if still idle after a grace of {duration(policy.grace_seconds)}"
    return f"jobmon: idle allocation: its {idle_words(d)} for {duration(d.stretch)}{then}"


def reason_text(d, policy, action):
    """The reason kept with an action (the record, and the scheduler's where it keeps one):
    short."""
    return (f"jobmon: idle allocation: its {idle_words(d)} for {duration(d.stretch)}, "
            f"still {duration(d.seen - d.warned['time'] / 1e9) if d.warned else '?'} after "
            f"the warning; site policy: {action} after {duration(policy.idle_seconds)} idle "
            f"and a grace of {duration(policy.grace_seconds)}")


def subject(d, policy):
    return f"jobmon: job {d.job} holds an idle allocation" + (
        "" if policy.max_per_hour == 0 else " and will be acted on")


def deliver(d, text, subject, section, report):
    """Send the warning; what it went to (the record's outcome). Raises where it failed:
    the caller records the failure."""
    how = section["warn"]
    summary = {"job": d.job, "user": d.live.user if d.live else None}
    if how == "mail":
        to = (d.live.mail if d.live else None) or summary["user"]
        card.mail(text, summary, report["mailer"], to, subject=subject)
        return f"mailed to {to}"
    if how == "file":
        try:
            pw = pwd.getpwnam(summary["user"])
            owner = (pw.pw_uid, pw.pw_gid)
        except (KeyError, TypeError):
            raise OSError(f"no user {summary['user']!r} on this host to give the file to")
        return "written to " + card.write_file(text, summary, section["warn_dir"],
                                               kind="warning", owner=owner)
    return "recorded only ([actions] warn = none)"
