"""`jobmon pilot PILOT_JOBID`: a pilot's provisioned time partitioned into the OSG
report's categories (docs/accounting.md)."""
from typing import Optional

import typer


def register(app):
    @app.command("pilot")
    def pilot(
        pilot_id: str = typer.Argument(..., metavar="PILOT_JOBID",
                                       help="The pilot's job id, as its record is stored "
                                       "(its payloads name it in their `pilot` tag)."),
        as_json: bool = typer.Option(False, "--json", help="Print the partition as JSON."),
        validated_at: Optional[float] = typer.Option(
            None, "--validated-at", metavar="EPOCH",
            help="When the pilot's validation ended (seconds since the epoch), where its "
            "record has no `validated` mark."),
        store: Optional[str] = typer.Option(None, metavar="PATH", envvar="JOBMON_STORE",
                                            help="Store file (default: the embedded store)."),
    ):
        """Partition a pilot's core-hours and GPU-hours: validation, decision problem,
        goodput, misconfiguration and preemption badput, pilot overhead."""
        from ..render import pilot as render
        from ..config_ownership import pilot_accounts
        from ..report.pilot_records import PilotNotFound, pilot_account
        from .reading import argv_text, for_reader, open_store, site_config
        st = open_store(store)
        try:
            model = pilot_account(st, argv_text(pilot_id), validated_at,
                                  lambda recs: for_reader(st, recs),
                                  pilot_accounts(site_config()))
        except (PilotNotFound, ValueError) as e:
            typer.echo(f"jobmon: {e}", err=True)
            raise typer.Exit(1)
        typer.echo(render.to_json(model) if as_json else render.to_text(model), nl=as_json)
