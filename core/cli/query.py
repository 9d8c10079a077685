"""`jobmon query` and `jobmon list`: read a store, build a report, render it."""
from typing import Optional

import typer


def open_store(store: Optional[str]):
    """The store to read: --store PATH, else InfluxDB when the config says so, else the
    embedded default."""
    import os
    from ..stores import store_path
    if store is None:
        from .. import config
        try:
            cfg = config.load()
            if cfg.uses_influxdb:
                from ..stores.influx import InfluxStore
                return FriendlyStore(InfluxStore.from_config(cfg))
        except config.ConfigError as e:
            typer.echo(f"jobmon: {e}", err=True)
            raise typer.Exit(2)
    from ..stores.local import LocalStore
    path = store or store_path()
    if not os.path.exists(path):
        raise typer.BadParameter(f"no jobmon store at {path} (no job recorded yet?)",
                                 param_hint="--store")
    return LocalStore(path)


class FriendlyStore:
    """A store whose server errors end the command with one clear line, not a traceback."""

    def __init__(self, store):
        self.store = store

    def __getattr__(self, name):
        method = getattr(self.store, name)

        def call(*a, **kw):
            from ..stores.influx import InfluxError
            try:
                return method(*a, **kw)
            except InfluxError as e:
                typer.echo(f"jobmon: {e}", err=True)
                raise typer.Exit(1)
        return call


def register(app):
    @app.command()
    def query(
        job_id: str = typer.Argument(..., metavar="JOBID", help="Job id (see `jobmon list`)."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
        as_csv: bool = typer.Option(False, "--csv", help="Print the samples as CSV."),
        store: Optional[str] = typer.Option(None, metavar="PATH", envvar="JOBMON_STORE",
                                            help="Store file (default: the embedded store)."),
        user: Optional[str] = typer.Option(None, "--user", "-u", metavar="NAME",
                                           help="The run of this user (a job id can be reused)."),
    ):
        """Show one job: totals, peaks and its samples."""
        from ..report import model
        rec = open_store(store).job(job_id, user)
        if rec is None:
            by = f" by user {user!r}" if user else ""
            typer.echo(f"jobmon: no job {job_id!r}{by} in the store (see `jobmon list`)",
                       err=True)
            raise typer.Exit(1)
        users = rec.info.get("users") or []
        if not user and len(users) > 1:
            typer.echo(f"jobmon: job {job_id!r} has runs by users {', '.join(users)}; showing "
                       f"the latest ({rec.info.get('user')}); choose one with --user", err=True)
        rep = model.build(rec)
        if as_json:
            from ..render.structured import to_json
            typer.echo(to_json(rep))
        elif as_csv:
            from ..render.structured import to_csv
            typer.echo(to_csv(rep), nl=False)
        else:
            from ..render.terminal import show
            show(rep)

    @app.command("list")
    def list_jobs(
        limit: int = typer.Option(20, "--limit", "-n", help="How many recent jobs."),
        store: Optional[str] = typer.Option(None, metavar="PATH", envvar="JOBMON_STORE",
                                            help="Store file (default: the embedded store)."),
    ):
        """List recent jobs, newest first."""
        from ..render.terminal import show_list
        show_list(open_store(store).jobs(limit))
