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
        user: Optional[str] = typer.Option(None, "--user", help="The pilot of this user, "
                                           "where several ran one of its id."),
    ):
        """Partition a pilot's core-hours and GPU-hours: validation, decision problem,
        goodput, misconfiguration and preemption badput, pilot overhead."""
        from ..render import pilot as render
        from ..config.ownership import pilot_accounts
        from ..report.pilot_records import PilotNotFound, pilot_account
        from .reading import argv_text, for_reader, open_store, site_config
        from ..printable import clean
        st = open_store(store, "pilot")
        try:
            model = pilot_account(st, argv_text(pilot_id), validated_at,
                                  lambda recs: for_reader(st, recs),
                                  pilot_accounts(site_config()), argv_text(user))
        except (PilotNotFound, ValueError) as e:
            typer.echo(f"jobmon: {clean(str(e))}", err=True)
            raise typer.Exit(1)
        if model["other_users"]:    # as jobmon query says of an id's runs
            users = clean(", ".join(map(str, [model["user"]] + model["other_users"])))
            typer.echo(f"jobmon: pilot {clean(pilot_id)!r} has runs by users {users}, none "
                       "confirmed by the scheduler; showing the latest "
                       f"({clean(str(model['user']))}); choose one with --user", err=True)
        typer.echo(render.to_json(model) if as_json else render.to_text(model), nl=as_json)
