"""`jobmon act`: one pass of the site's [actions] policy on idle allocations
(jobmon.actions; docs/actions.md). Run by a timer on the host that runs `jobmon
reconcile --all-hosts`: it reads every node's samples and may act on the schedulers'
jobs. Never inside a job."""
import json
import os
from typing import Optional

import typer

TEMPFAIL = 75   # a scheduler or the store did not answer: the next pass tries again
SAID = {"warn": "warned", "act": "acted on", "grace": "in their grace period",
        "limited": "over the hourly limit", "done": "acted on before",
        "opted-out": "opted out", "unconfirmed": "of unconfirmed ownership",
        "gone": "not running", "unavailable": "with their scheduler unavailable",
        "unrecorded": "not recorded", "incomplete": "with too little data to judge"}


def open_for_actions(cfg, store_arg):
    """(store, writer): --store PATH (an embedded store), else InfluxDB where the site
    keeps it, else the embedded default. Never the read service: this reads every job."""
    from ..actions.records import InfluxWriter, LocalWriter
    from ..stores import store_path
    from ..stores.local import LocalStore
    if store_arg is None and cfg.uses_influxdb:
        from ..stores.influx import InfluxStore
        from .reading import FriendlyStore
        return FriendlyStore(InfluxStore.from_config(cfg)), InfluxWriter(cfg)
    path = store_arg or store_path()
    if not os.path.exists(path):       # made by the jobs' user, never here (as root)
        raise typer.BadParameter(f"no jobmon store at {path}", param_hint="--store")
    st = LocalStore(path)
    return st, LocalWriter(st)


def schedulers(cfg):
    """{name: Scheduler} of the schedulers this host can ask and act on."""
    from .. import schedulers as registry
    out = {}
    for sched in registry.all():
        actions = sched.actions(cfg)
        if actions is not None:
            out[sched.tag] = actions
    return out


def act(store_arg, dry_run, as_json):
    from .. import config
    from ..actions import actor
    from ..stores.influx import InfluxError
    from ..config.actions import resources
    try:
        cfg = config.load()
        resources(cfg["actions"])
    except (config.ConfigError, ValueError) as e:
        typer.echo(f"jobmon act: {e}", err=True)
        raise typer.Exit(2)
    if cfg["actions"]["mode"] == "off" and not dry_run:
        note = "[actions] mode is off: nothing is done (docs/actions.md)"
        if as_json:   # what was asked for, even with nothing to say
            typer.echo(json.dumps({"mode": "off", "counts": {}, "decisions": [],
                                   "recorded": [], "errors": [], "note": note}, indent=1))
        else:
            typer.echo(f"jobmon act: {note}")
        return
    st, writer = open_for_actions(cfg, store_arg)
    try:
        done = actor.run_pass(cfg, st, schedulers(cfg), writer, dry_run=dry_run)
    except InfluxError as e:     # the store did not answer: the next pass tries again
        from ..printable import clean
        typer.echo(f"jobmon act: {clean(str(e))}", err=True)
        raise typer.Exit(TEMPFAIL)
    shown = [d for d in done.decisions if d.kind != "busy"]
    if as_json:
        typer.echo(json.dumps({"mode": done.policy.mode, "counts": done.counts(),
                               "decisions": [{"job": d.job, "decision": d.kind, "why": d.why}
                                             for d in shown],
                               "recorded": done.recorded, "errors": done.errors,
                               "skipped": done.skipped}, indent=1))
    else:
        from ..printable import clean
        dry = " (dry run: no job touched, nobody told)" if done.policy.dry_run else ""
        counts = done.counts()
        said = ", ".join(f"{n} {SAID[k]}" for k, n in sorted(counts.items()) if k in SAID)
        typer.echo(f"jobmon act{dry}: {len(shown)} idle job(s)" + (f": {said}" if said else ""))
        for d in shown:
            typer.echo(f"  job {clean(d.job)}: {d.kind}: {clean(d.why)}")
        for e in done.errors:
            typer.echo(f"jobmon act: {clean(e)}", err=True)
        for e in done.skipped:
            typer.echo(f"jobmon act: {clean(e)}", err=True)
    if done.errors:
        raise typer.Exit(TEMPFAIL)


def register(app):
    @app.command("act")
    def act_cmd(
        store: Optional[str] = typer.Option(None, metavar="PATH", help="An embedded store "
                                            "file (default: InfluxDB where the config says "
                                            "so, else the embedded store)."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Decide, log and record as a "
                                     "dry run: warn nobody, touch no job (as [actions] mode "
                                     "= \"dry-run\"), whatever the mode, \"off\" "
                                     "included."),
        as_json: bool = typer.Option(False, "--json", help="Print the pass as JSON."),
    ):
        """Warn the users of jobs that hold GPUs or cores they do not use, and hold,
        requeue-hold or cancel those still idle after a grace period -- by the site's
        [actions] policy (off unless it is turned on). Exit 75: a scheduler or the store
        did not answer; the next pass retries."""
        act(store, dry_run, as_json)
