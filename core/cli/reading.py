"""What the commands that read jobs share: the store to read, the site configuration,
arguments as the writer stored them, and the records as a reader sees them (settled where
`jobmon reconcile` has not been yet)."""
from typing import Optional

import typer


def open_store(store: Optional[str]):
    """The store to read: --store PATH, else the read service when the config names one,
    else InfluxDB when the config says so, else the embedded default."""
    import os
    from ..stores import store_path
    if store is None:
        from .. import config
        try:
            cfg = config.load()
            service = cfg["service"]
            if service["address"]:
                from ..serve.client import RemoteStore
                return FriendlyStore(RemoteStore(service["address"], service["munge_socket"]))
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


def argv_text(value):
    """An argument as the writer stores it (jobmon.runner.argv_text); None stays None."""
    from ..runner import argv_text as stored
    return None if value is None else stored(value)


class FriendlyStore:
    """A store whose server errors end the command with one clear line, not a traceback."""

    def __init__(self, store):
        self.store = store

    def __getattr__(self, name):
        method = getattr(self.store, name)

        def call(*a, **kw):
            from ..serve.client import ServiceDown, ServiceError
            from ..stores.influx import InfluxError
            try:
                return method(*a, **kw)
            except (InfluxError, ServiceError) as e:
                typer.echo(f"jobmon: {e}", err=True)
                if isinstance(e, ServiceDown):
                    typer.echo("jobmon: jobs are read through this service here ([service] "
                               "address in the configuration); ask the site's admins",
                               err=True)
                raise typer.Exit(1)
        return call


def site_config():
    """The site configuration, or None where it cannot be read."""
    from .. import config
    try:
        return config.load()
    except config.ConfigError:
        return None   # open_store() says what is wrong where it matters


def for_reader(st, records, scheduler=True, write=True):
    """A reader's records (`jobmon report`, `jobmon pilot`) with what the node's `jobmon
    reconcile` has not written yet applied in memory -- and written back into an embedded
    store where the reader may (and `write`). scheduler False: cut-short runs folded,
    nobody asked."""
    from ..report import reconcile as rc
    influx = isinstance(st, FriendlyStore)
    # InfluxDB: the summaries written before reconciliation are left as they are
    todo = [r for r in records if rc.needs(r, unmarked=not influx)]
    if not todo:
        return records
    sources = None if scheduler else dict.fromkeys(rc.SCHEDULERS)
    plan = rc.plan(st, todo, site_config(), sources=sources, final_without_source=False)
    for e in plan.errors:
        typer.echo(f"jobmon: the scheduler's accounting: {e} (outcomes as stored)", err=True)
    if write and not influx:
        write_local(st, [w for w in plan.writes if w[1].get("reconciled")
                         or w[1].get("cut_short")])
    return rc.apply(records, plan)


def write_local(st, writes):
    """Corrections into an embedded store: None, or what went wrong."""
    import sqlite3
    try:
        if writes:
            st.correct(writes)
    except sqlite3.Error as e:
        return f"cannot write the store: {e}"
    return None
