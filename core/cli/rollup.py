"""`jobmon rollup`: keep the hourly rollups that `jobmon report` reads over long ranges
(jobmon.report.rollup, docs/reports.md). On InfluxDB, run it hourly with the shipper's
config and credentials (deploy/jobmon-rollup.timer); the embedded store's report keeps
its own."""
import time
from typing import Optional

import typer

from .report_range import parse_time
from .ship import CONFIG_HELP, load_config


def register(app):
    @app.command()
    def rollup(
        since: str = typer.Option("31d", metavar="WHEN", help="Roll up the hours since (7d, "
                                  "12h, an ISO date or time): the longest a job runs."),
        until: Optional[str] = typer.Option(None, metavar="WHEN", help="... and before "
                                            "(default: now)."),
        store: Optional[str] = typer.Option(None, metavar="PATH", help="An embedded store "
                                            "file instead of the configured store."),
        config_path: Optional[str] = typer.Option(None, "--config", metavar="PATH",
                                                  help=CONFIG_HELP),
    ):
        """Aggregate each past hour's job runs (those without a rollup, or whose rollup
        counted runs still running or unconfirmed by the scheduler, or is under a day
        old) for fast `jobmon report`s."""
        from ..report import rollup as rollups
        now = time.time()
        t0, t1 = parse_time(since, now), parse_time(until, now, "--until") if until else now
        if t1 <= t0:
            raise typer.BadParameter(f"{until or 'now'!r} is not after --since {since!r}",
                                     param_hint="--until")
        cfg = load_config(config_path)
        started = time.monotonic()
        if store is None and cfg.uses_influxdb:
            from ..ship.transports import SendError, open_transport
            from ..stores.influx import InfluxStore
            from .reading import FriendlyStore
            influx = InfluxStore.from_config(cfg)
            # a background job: InfluxDB 1.x reads a job's summary in ~1 ms, so an hour of
            # a busy cluster may take longer than a user would wait for a query
            influx.timeout = max(influx.timeout, 600.0)
            reader, transport = FriendlyStore(influx), open_transport(cfg)

            def save(hour, parts):
                try:
                    transport.send(InfluxStore.rollup_lines(hour, parts).encode())
                except SendError as e:
                    typer.echo(f"jobmon: cannot write the rollups: {e}", err=True)
                    raise typer.Exit(1)
        else:
            from .reading import open_store
            reader = open_store(store, "rollup")
            save = reader.save_rollup
        from ..config.ownership import pilot_accounts
        from .reading import for_reader
        # settled as jobmon report settles the hours it reads (the scheduler's word that
        # jobmon reconcile has not written yet); rolled up again until it is in
        failed = set()
        made, runs = rollups.make(reader, t0, t1, save, cfg["report"],
                                  accounts=pilot_accounts(cfg),
                                  settle=lambda records: for_reader(reader, records,
                                                                    failed=failed))
        if store is None and cfg.uses_influxdb:
            transport.close()
        typer.echo(f"jobmon: rolled up {made} hours ({runs:,} job runs) in "
                   f"{time.monotonic() - started:.1f} s", err=True)
