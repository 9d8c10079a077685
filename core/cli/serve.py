"""`jobmon serve`: the read service (jobmon.serve). It holds the store's read credential and
answers `jobmon query`, `list`, `report` and `pilot` for each caller inside their scope
(docs/security.md)."""
from typing import Optional

import typer


def _store_opener(cfg, store):
    """A function giving the store for one connection, and its description."""
    if store:
        from ..stores.local import LocalStore
        return (lambda: LocalStore(store)), f"the embedded store {store}"
    if not cfg.uses_influxdb:
        raise typer.BadParameter("the service reads InfluxDB ([store] kind = \"influxdb\") "
                                 "or an embedded store file", param_hint="--store")
    from ..stores.influx import InfluxStore
    shared = InfluxStore.from_config(cfg)     # reads the credential now: fails at start
    return (lambda: shared), f"InfluxDB {cfg['influxdb']['url']}"


def register(app):
    @app.command("serve")
    def serve(
        socket_path: Optional[str] = typer.Option(
            None, "--socket", metavar="PATH", help="Unix socket for this host's users "
            "(default: service.socket in the configuration; \"\" for none)."),
        listen: Optional[str] = typer.Option(
            None, "--listen", metavar="HOST:PORT", help="Also answer over TCP, callers "
            "proving who they are with MUNGE (default: service.listen)."),
        store: Optional[str] = typer.Option(None, metavar="PATH",
                                            help="Serve this embedded store file instead."),
    ):
        """Answer `jobmon query`, `list`, `report` and `pilot` for this site's users: each
        reads their own jobs, the admin group every job. Holds the read credential."""
        from .. import config
        from ..serve import server
        from ..serve.munge import Munge, MungeError
        from ..serve.policy import Policy, PolicyError
        from ..stores.influx import InfluxError
        try:
            cfg = config.load()
            policy = Policy.from_config(cfg["service"])
            opener, what = _store_opener(cfg, store)
        except (config.ConfigError, PolicyError) as e:
            typer.echo(f"jobmon: {e}", err=True)
            raise typer.Exit(2)
        section = cfg["service"]
        socket_path = section["socket"] if socket_path is None else socket_path
        listen = section["listen"] if listen is None else listen
        if not socket_path and not listen:
            raise typer.BadParameter("give a socket, an address, or both", param_hint="--socket")
        from ..config.validate import hostport_problem
        if socket_path and not socket_path.startswith("/"):
            raise typer.BadParameter(f"an absolute path, not {socket_path!r}",
                                     param_hint="--socket")
        if listen and hostport_problem(listen, host_needed=False):
            raise typer.BadParameter(hostport_problem(listen, host_needed=False),
                                     param_hint="--listen")
        munge = None
        if listen:
            munge = Munge(section["munge_socket"])
            try:
                munge.encode(b"jobmon serve starts")
            except MungeError as e:
                typer.echo(f"jobmon: --listen needs munged: {e}", err=True)
                raise typer.Exit(2)
        read_log = None
        if section["read_log"]:
            from ..serve.read_log import ReadLog
            read_log = ReadLog(section["read_log"], section["read_log_days"],
                               section["read_log_max_bytes"], server.log)
        service = server.Service(opener, policy, munge, store_errors=(InfluxError,),
                                 read_log=read_log)
        listeners, where = [], []
        try:
            if socket_path:
                listeners.append(server.listen_unix(socket_path))
                where.append(f"{socket_path} (this host's users)")
            if listen:
                listeners.append(server.listen_tcp(listen))
                where.append(f"{listen} (MUNGE)")
        except (OSError, ValueError) as e:
            typer.echo(f"jobmon: cannot listen: {e}", err=True)
            raise typer.Exit(1)
        admins = f"admin group {policy.admin_group}" if policy.admin_group else "no admin group"
        kept = (f"who read which job kept in {section['read_log']} for "
                f"{section['read_log_days']:g} days" if read_log else "no read log")
        server.log(f"answering on {' and '.join(where)}; reading {what}; {admins}; {kept}")
        server.run(service, listeners)
        if read_log:
            read_log.close()          # what was read before the signal is written
