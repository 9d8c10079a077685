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
    from .reading import FriendlyStore, open_store, site_config, write_local
    from .report_range import parse_time
    st = open_store(store_arg, "reconcile")
    cfg = site_config()
    influx = isinstance(st, FriendlyStore)
    t0 = parse_time(since, param="--since") if since else None
    if influx:
        host = None if all_hosts else host or cfg["shipper"]["host"] or socket.gethostname()
    records = st.unreconciled(t0, host if influx else None)
    plan = rc.plan(st, records, cfg)
    failed = None
    if not dry_run and plan.writes:
        failed = _write_influx(cfg, plan.writes) if influx else write_local(st, plan.writes)
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
