"""`jobmon doctor`: check this node end to end (jobmon.doctor). Run outside jobs."""
import json
from typing import Optional

import typer

from .. import schedulers as registry


def register(app):
    @app.command()
    def doctor(
        config_path: Optional[str] = typer.Option(None, "--config", metavar="PATH",
                                                  help="Site file (default: $JOBMON_CONFIG "
                                                       "or /etc/jobmon/jobmon.toml)."),
        scheduler: str = typer.Option("auto", metavar="NAME", help=", ".join(
            registry.tags()) + ", none, or auto: those that run jobs on this node (their "
            "daemons running)."),
        check_user: str = typer.Option("nobody", metavar="USER", help="The unprivileged "
                                       "user to run jobmon's interpreter as."),
        shipper_user: Optional[str] = typer.Option(None, metavar="USER", help="The "
                                                   "shipper's user (default: the spool's "
                                                   "owner)."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ):
        """Check this node: the site file, the store and its credential, the spool and
        state directories, the shipper, the scheduler's knobs as its daemons see them,
        jobmon's interpreter as an unprivileged user, where warnings go, how jobs are
        measured, the GPU reader. One line per check with the fix; exit 1 on a fail.
        Run as root."""
        from .. import doctor as d
        node = d.Node(config_path, check_user=check_user, shipper_user=shipper_user)
        checks = d.run(node, scheduler)
        if as_json:
            typer.echo(json.dumps([c.as_dict() for c in checks], indent=1))
        else:
            for c in checks:
                typer.echo(c.line())
        if any(c.status == d.FAIL for c in checks):
            raise typer.Exit(1)
