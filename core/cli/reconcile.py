"""`jobmon reconcile`: once runs are over, write into their stored records what only their
samples and the scheduler can tell -- a cut-short run's figures, the scheduler's outcome
(jobmon.report.reconcile; docs/accounting.md). Run by a timer, on one host for every node's
InfluxDB records (--all-hosts) or on each node for its own, or on an embedded store; never
inside a job or the shipper."""
import json
import socket
from typing import Optional

import typer

# lines per write to InfluxDB
BATCH = 5000
TEMPFAIL = 75   # EX_TEMPFAIL: the scheduler's accounting or the server did not answer


def reconcile(store_arg, since, host, all_hosts, as_json, dry_run):
    from ..report import reconcile as rc
    from .query import FriendlyStore, _config, open_store
    from .report_range import parse_time
    st = open_store(store_arg)
    cfg = _config()
    influx = isinstance(st, FriendlyStore)
    t0 = parse_time(since, param="--since") if since else None
    if influx:
        host = None if all_hosts else host or cfg["shipper"]["host"] or socket.gethostname()
    records = st.unreconciled(t0, host if influx else None)
    plan = rc.plan(st, records, cfg)
    failed = None
    if not dry_run and plan.writes:
        failed = _write_influx(cfg, plan.writes) if influx else _write_local(st, plan.writes)
    out = dict(plan.as_dict(), records=len(records), host=host if influx else None,
               write_error=failed)
    if dry_run:
        out["written"] = 0
    if as_json:
        typer.echo(json.dumps(out, indent=1))
    else:
        c = plan.counts
        typer.echo(f"jobmon reconcile: {len(records)} record(s) to look at: {c['settled']} "
                   f"settled by the scheduler, {c['claims']} claim(s) by other users, "
                   f"{c['folded']} cut short (folded from their "
                   f"samples), {c['none']} with nothing to settle, {c['waiting']} waiting "
                   f"for the scheduler's record, {c['running']} still running; "
                   f"{out['written']} written")
        for e in plan.errors + ([failed] if failed else []):
            typer.echo(f"jobmon reconcile: {e}", err=True)
    if plan.errors or failed:
        raise typer.Exit(TEMPFAIL)   # a later pass takes them again


def for_reader(st, records, scheduler=True, write=True):
    """A reader's records (`jobmon report`, `jobmon pilot`) with what the node's `jobmon
    reconcile` has not written yet applied in memory -- and written back into an embedded
    store where the reader may (and `write`). scheduler False: cut-short runs folded,
    nobody asked."""
    from ..report import reconcile as rc
    from .query import FriendlyStore, _config
    influx = isinstance(st, FriendlyStore)
    # InfluxDB: the summaries written before reconciliation are left as they are
    todo = [r for r in records if rc.needs(r, unmarked=not influx)]
    if not todo:
        return records
    sources = None if scheduler else dict.fromkeys(rc.SCHEDULERS)
    plan = rc.plan(st, todo, _config(), sources=sources, final_without_source=False)
    for e in plan.errors:
        typer.echo(f"jobmon: the scheduler's accounting: {e} (outcomes as stored)", err=True)
    if write and not influx:
        _write_local(st, [w for w in plan.writes if w[1].get("reconciled")
                          or w[1].get("cut_short")])
    return rc.apply(records, plan)


def _write_local(st, writes):
    import sqlite3
    try:
        if writes:
            st.correct(writes)
    except sqlite3.Error as e:
        return f"cannot write the store: {e}"
    return None


def _write_influx(cfg, writes):
    """Correction points, at the series and time of the points they correct."""
    from ..influx.schema import correction_line
    from ..ship.transports import SendError, open_transport
    lines = [correction_line(rec["_point"], summary).encode() + b"\n"
             for rec, summary in writes]
    transport = open_transport(cfg)
    try:
        for i in range(0, len(lines), BATCH):
            transport.send(b"".join(lines[i:i + BATCH]))
    except SendError as e:
        return f"InfluxDB did not take the corrections: {e}"
    finally:
        transport.close()
    return None


def register(app):
    @app.command("reconcile")
    def reconcile_cmd(
        store: Optional[str] = typer.Option(None, metavar="PATH", envvar="JOBMON_STORE",
                                            help="Store file (default: InfluxDB where the "
                                            "config says so, else the embedded store)."),
        since: str = typer.Option("14d", metavar="WHEN", help="Runs started since (14d, "
                                  "an ISO date or time)."),
        host: Optional[str] = typer.Option(None, metavar="NAME", help="InfluxDB: this "
                                           "node's runs (default: shipper.host, else the "
                                           "hostname)."),
        all_hosts: bool = typer.Option(False, "--all-hosts", help="InfluxDB: every node's "
                                       "runs (one pass for a node that is gone)."),
        as_json: bool = typer.Option(False, "--json", help="Print the counts as JSON."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Write nothing."),
    ):
        """Write the scheduler's end of each run that is over (cancelled by whom, time
        limit, out of memory, held, removed, evicted, preempted, node failure) and the
        figures of runs cut short into their stored records. Exit 75: the scheduler's
        accounting or the server did not answer; a later pass retries."""
        reconcile(store, since, host, all_hosts, as_json, dry_run)
