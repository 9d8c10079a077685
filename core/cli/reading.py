"""What the commands that read jobs share: the store to read, the site configuration,
arguments as the writer stored them, and the records as a reader sees them (settled where
`jobmon reconcile` has not been yet)."""
from typing import Optional

import typer

from .. import schedulers


def open_store(store: Optional[str], command: Optional[str] = None):
    """The store to read: --store PATH, else the read service when the config names one,
    else InfluxDB when the config says so, else the embedded default. command: the
    command reading ("query"), which the read service's log keeps."""
    import os
    from ..stores import store_path
    if store is None:
        from .. import config
        try:
            cfg = config.load()
            service = cfg["service"]
            if service["address"]:
                from ..serve.client import RemoteStore
                return FriendlyStore(RemoteStore(service["address"], service["munge_socket"],
                                                 command=command))
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
    """An argument as the writer stores it (jobmon.job.runner.argv_text); None stays None."""
    from ..job.runner import argv_text as stored
    return None if value is None else stored(value)


class FriendlyStore:
    """A store whose server errors end the command with one clear line, not a traceback."""

    def __init__(self, store):
        self.store = store

    def __getattr__(self, name):
        method = getattr(self.store, name)

        def call(*a, **kw):
            out = self.guarded(method, *a, **kw)
            return self.guarded_items(out) if hasattr(out, "gi_frame") else out
        return call

    def guarded_items(self, generator):
        while True:
            try:
                yield self.guarded(next, generator)
            except StopIteration:
                return

    @staticmethod
    def guarded(fn, *a, **kw):
        from ..serve.client import ServiceDown, ServiceError
        from ..stores.influx import InfluxError
        try:
            return fn(*a, **kw)
        except (InfluxError, ServiceError) as e:
            typer.echo(f"jobmon: {e}", err=True)
            if isinstance(e, ServiceDown):
                typer.echo("jobmon: jobs are read through this service here ([service] "
                           "address in the configuration); ask the site's admins", err=True)
            raise typer.Exit(1)


def site_config():
    """The site configuration, or None where it cannot be read."""
    from .. import config
    try:
        return config.load()
    except config.ConfigError:
        return None   # open_store() says what is wrong where it matters


def for_reader(st, records, scheduler=True, write=True, failed=None):
    """A reader's records (`jobmon report`, `jobmon pilot`) with what the node's `jobmon
    reconcile` has not written yet applied in memory -- and written back into an embedded
    store where the reader may (and `write`). scheduler False: cut-short runs folded,
    nobody asked. failed: a set kept over a reader's calls (an hour's records each): the
    schedulers whose accounting failed, said once and not asked again."""
    from ..report import reconcile as rc
    influx = isinstance(st, FriendlyStore)
    # InfluxDB: the summaries written before reconciliation are left as they are
    todo = [r for r in records if rc.needs(r, unmarked=not influx)]
    if not todo:
        return records
    sources = dict.fromkeys(rc.SCHEDULERS if not scheduler else failed or ()) or None
    plan = rc.plan(st, todo, site_config(), sources=sources, final_without_source=False)
    for e in plan.errors:
        typer.echo(f"jobmon: the scheduler's accounting: {e} (outcomes as stored)", err=True)
    if failed is not None:
        failed.update(plan.unavailable)
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


def one_instance(job_id, records, command):
    """Where a scheduler's ids are its instance's (its object's qualifier) and jobs of two
    instances answer to the id, ask which (a global id names one already)."""
    from ..printable import clean
    from ..stores.ids import instance_of
    instances = sorted({instance_of(r) for r in records} - {None})
    if len(instances) > 1:
        word = next(s.instance_name for s in schedulers.all()
                    if any(s.qualifier(r) for r in records))
        typer.echo(f"jobmon: {len(instances)} {word}s have a job {job_id!r}: "
                   f"{clean(', '.join(instances))}; say which: " + clean(" or ".join(
                       f"jobmon {command} {i}#{job_id}" for i in instances)), err=True)
        raise typer.Exit(1)


def scheduler_names():
    """The registered schedulers' names, for help texts: "A or B"."""
    return " or ".join(s.name for s in schedulers.all())


def accounting_tools():
    """The commands their accounting is read with, for help texts: "a, b"."""
    return ", ".join(s.accounting_tool for s in schedulers.all() if s.accounting_tool)


def id_examples():
    """The job ids each scheduler gives, as users type them, for help texts."""
    return "; ".join(f"{s.name}: {s.id_examples}" for s in schedulers.all() if s.id_examples)
