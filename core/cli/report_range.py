"""`jobmon report` without a JOBID: many jobs over a time range, grouped (docs/reports.md).

Reads only the jobs' summaries (one point per job run), never their samples, from the
embedded store or InfluxDB; the report model is built in jobmon.report.aggregate and
jobmon.report.rightsize and laid out by jobmon.render.range_report.
"""
import datetime
import re
import sys
import time

import typer

_AGO = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*\Z")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_time(text, now=None, param="--since"):
    """Seconds since the epoch from "7d", "12h", "30m", "2w", "90s" (that long before now),
    "now", or an ISO 8601 date or time ("2024-05-01", "2024-05-01T12:00", with or
    without a UTC offset; without one: local time)."""
    now = time.time() if now is None else now
    t = text.strip()
    if t.lower() == "now":
        return now
    m = _AGO.match(t.lower())
    if m:
        return _stored(now - float(m.group(1)) * _SECONDS[m.group(2)], text, param)
    try:
        when = datetime.datetime.fromisoformat(t.replace("Z", "+00:00"))
        return _stored(when.timestamp(), text, param)   # naive: local time
    except (ValueError, OverflowError, OSError):
        raise typer.BadParameter(f"{text!r} is neither a duration (7d, 12h, 30m, 2w) nor an "
                                 "ISO date or time (2024-05-01, 2024-05-01T12:00)",
                                 param_hint=param)


def _stored(t, text, param):
    """A time a store can hold a job at: from the epoch (1970) on, before 2242 (every
    store's reads are in ns since the epoch, InfluxDB's an int64)."""
    if not 0 <= t < 1 << 33:
        raise typer.BadParameter(f"{text!r} is before 1970 or after 2242: no job can have "
                                 "started then", param_hint=param)
    return t


def limits():
    """The config's [report] thresholds that the aggregate and right-sizing read."""
    from .. import config
    try:
        section = config.load().values.get("report") or {}
    except config.ConfigError as e:
        typer.echo(f"jobmon: {e}", err=True)
        raise typer.Exit(2)
    return dict(section)


def report_range(since="7d", until=None, by="user", user=None, as_json=False, as_csv=False,
                 top=10, store=None, scheduler=True):
    from ..render import range_report
    from ..report import aggregate, rollup
    from .reading import argv_text, open_store
    if by not in aggregate.GROUP_KEYS:
        raise typer.BadParameter(f"{by!r}: one of {', '.join(aggregate.GROUP_KEYS)}",
                                 param_hint="--by")
    if not 1 <= top <= aggregate.KEPT:
        raise typer.BadParameter(f"give 1 to {aggregate.KEPT}", param_hint="--top")
    now = time.time()
    asked = parse_time(since, now, "--since") if since else None
    # exactly from --since: its first, partial hour is read live, the whole hours after it
    # come from their rollups (jobmon.report.rollup)
    t0 = asked if since else 0.0
    t1 = parse_time(until, now, "--until") if until else now
    if t1 < t0 or until and t1 == t0:     # (--since now alone: an empty range)
        raise typer.BadParameter(f"{until!r} is not after --since {since!r}",
                                 param_hint="--until")
    lim = dict(limits(), top=top)
    from ..config.ownership import pilot_accounts
    from .reading import for_reader, site_config
    # hourly rollups where the store has them, the rest read an hour at a time
    # (jobmon.report.rollup) and settled as the scheduler says; an embedded store keeps
    # the hours read for the next report
    st, failed = open_store(store, "report"), set()
    model = rollup.Report(st, by, lim, argv_text(user), save=True,
                          accounts=pilot_accounts(site_config()),
                          settle=lambda records: for_reader(st, records, scheduler,
                                                            failed=failed)).read(
        t0, t1).model(t0 if since else None, t1, top)
    from ..report import acted
    model["actions"] = acted.summarize(st.actions(since=asked), by, asked, t1, argv_text(user),
                                       top)
    if as_json:
        typer.echo(range_report.to_json(model))
    elif as_csv:
        typer.echo(range_report.to_csv(model, sys.stdout.isatty()), nl=False)
    else:
        range_report.show(model)
