"""`jobmon ship` (the node shipper) and `jobmon config check`. Run outside jobs."""
import json
import logging
import os
from typing import Optional

import typer

CONFIG_HELP = "Config file (default: $JOBMON_CONFIG or /etc/jobmon/jobmon.toml)."


class Printable(logging.Filter):
    """Log lines name spool entries, whose names the job users chose: each line is shown
    through jobmon.printable.clean, so no name can drive the terminal or the journal's
    reader."""

    def filter(self, record):
        from ..printable import clean
        record.msg, record.args = clean(record.getMessage()), None
        return True


def load_config(path):
    from .. import config
    try:
        return config.load(path)
    except config.ConfigError as e:
        typer.echo(f"jobmon: {e}", err=True)
        raise typer.Exit(2)


def ship_help():
    """`jobmon ship --help`: where each scheduler's nodes run it once (its object's
    ship_from)."""
    from .. import schedulers
    hooks = "".join(f", {s.ship_from}" for s in schedulers.all() if s.ship_from)
    return ("Send this node's spooled samples to InfluxDB (run as the shipper's user).\n\n"
            f"One-shot by default (cron{hooks}): ships what is spooled and exits. Data is "
            "deleted from the spool only after the server took it.")


def register(app):
    @app.command(help=ship_help())
    def ship(
        follow: bool = typer.Option(False, "--follow", help="Keep running: ship as samples "
                                    "arrive (for a systemd service)."),
        show_status: bool = typer.Option(False, "--status", help="Show the shipper's "
                                         "counters (shipped, dropped, quarantined) and exit."),
        as_json: bool = typer.Option(False, "--json", help="With --status: print JSON."),
        timeout: float = typer.Option(300.0, metavar="S", help="One-shot mode: keep retrying "
                                      "an unreachable server this long, then leave the rest "
                                      "spooled (exit 75)."),
        config_path: Optional[str] = typer.Option(None, "--config", metavar="PATH",
                                                  help=CONFIG_HELP),
        verbose: bool = typer.Option(False, "--verbose", "-v", help="Log every batch."),
    ):
        logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                            format="jobmon ship: %(levelname)s: %(message)s")
        for handler in logging.getLogger().handlers:
            handler.addFilter(Printable())
        cfg = load_config(config_path)
        from ..ship import health, shipper, state
        if show_status:
            try:
                kept = state.State(cfg["shipper"]["state_dir"], read_only=True)
                st = health.status(cfg, kept)
            except PermissionError as e:
                typer.echo(f"jobmon: {e.filename}: permission denied (run as the shipper's "
                           f"user)", err=True)
                raise typer.Exit(2)
            if as_json:
                typer.echo(json.dumps(st, indent=1))
            else:
                show_status_text(st)
            return
        if not cfg.uses_influxdb:
            typer.echo("jobmon: store.kind is not \"influxdb\" in the config: nothing to ship",
                       err=True)
            raise typer.Exit(2)
        from ..config import ConfigError
        from ..ship.transports import open_transport
        try:
            s = shipper.Shipper(cfg, open_transport(cfg))
        except (ConfigError, RuntimeError, OSError) as e:
            typer.echo(f"jobmon: {e}", err=True)
            raise typer.Exit(2)
        try:
            if follow:
                import signal
                stopping = []
                for sig in (signal.SIGTERM, signal.SIGINT):
                    signal.signal(sig, lambda *_: stopping.append(1))
                s.follow(lambda: bool(stopping))
            elif not s.once(timeout):
                raise typer.Exit(75)   # EX_TEMPFAIL: try again later
        finally:
            s.close()

    def show_status_text(st):
        losses, users = st.pop("losses"), st.pop("users")
        for k, v in st.items():
            typer.echo(f"{k:21} {v}")
        for user, n in users.items():
            typer.echo(f"{'spool of ' + user:21} {n} bytes")
        for user, reasons in sorted(losses.items()):
            for reason, n in sorted(reasons.items()):
                typer.echo(f"{'lost by ' + user:21} {reason}: {n.get('points', 0)} point(s), "
                           f"{n.get('bytes', 0)} bytes, {n.get('files', 0)} file(s)")

    config_app = typer.Typer(help="Check the site configuration.", no_args_is_help=True)
    app.add_typer(config_app, name="config")

    @config_app.command("check")
    def check(
        config_path: Optional[str] = typer.Option(None, "--config", metavar="PATH",
                                                  help=CONFIG_HELP),
        secrets: bool = typer.Option(True, "--secrets/--no-secrets",
                                     help="Also read the token/password files."),
    ):
        """Load the config, say what it selects, and (as the shipper's user) check the
        secret files' permissions."""
        cfg = load_config(config_path)
        typer.echo(f"config: {cfg.path or '(none: defaults)'}")
        typer.echo(f"store: {cfg['store']['kind']}")
        if cfg.uses_influxdb:
            c = cfg["influxdb"]
            sp = cfg["spool"]
            typer.echo(f"influxdb: version {c['version']}, api {c['api']} at {c['url']}; "
                       f"spool {sp['dir']} (max {sp['max_bytes']} bytes, "
                       f"{sp['max_bytes_per_user']} per user)")
            typer.echo("databases: summaries {}, samples {}".format(*cfg.databases))
            if c["api"] == "v1" and not c["username"] and not c["password_file"]:
                typer.echo("credentials: none (for an InfluxDB without authentication)")
            if secrets:
                from ..config import ConfigError
                from ..doctor.site import NO_AUTH
                for key in ("token_file", "password_file"):
                    if c[key]:
                        try:
                            cfg.secret(key)
                        except ConfigError as e:
                            missing = key == "password_file" and not os.path.exists(c[key])
                            typer.echo(f"jobmon: {e}" + (f" ({NO_AUTH})" if missing else ""),
                                       err=True)
                            raise typer.Exit(2)
                        typer.echo(f"{key}: {c[key]} (ok)")
        _check_files(cfg)


def _check_files(cfg):
    """What the paths of the configuration name, by stat() alone: a setting in use that
    names nothing, or the wrong kind of thing, fails the check (one line); one not in use
    is said as a warning."""
    from ..config.validate import file_problems
    problems = file_problems(cfg.values)
    s = cfg["service"]
    if s["address"]:
        typer.echo(f"service: read through {s['address']}")
    for name, problem, fatal in problems:
        if not fatal:
            typer.echo(f"jobmon: warning: {name}: {problem} (not in use now)", err=True)
    for name, problem, fatal in problems:
        if fatal:
            typer.echo(f"jobmon: {name}: {problem}", err=True)
            raise typer.Exit(2)
