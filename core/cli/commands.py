"""The `jobmon` command: the Typer app, its --version, `jobmon run` (handed to
jobmon.job.runner), and every other command, each registered by its module."""
from typing import List, Optional

import typer

from .. import __version__

app = typer.Typer(help="Per-job resource monitor for batch clusters.", no_args_is_help=True,
                  rich_markup_mode="markdown", context_settings={"help_option_names": ["-h", "--help"]})


def _version(value: bool):
    if value:
        typer.echo(f"jobmon {__version__}")
        raise typer.Exit()


@app.callback()
def main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="Show the version and exit.")):
    """Per-job resource monitor: `jobmon run -- CMD`, then `jobmon query JOBID`."""


@app.command(context_settings={"allow_interspersed_args": False})
def run(
    cmd: List[str] = typer.Argument(..., metavar="-- CMD [ARGS...]", help="The command to run."),
    interval: float = typer.Option(1.0, metavar="S", help="Seconds between samples (over "
                                   "0, at most 86400)."),
    job_id: Optional[str] = typer.Option(None, metavar="ID", help="Job id to store the run under."),
    tag: List[str] = typer.Option([], metavar="K=V", help="Tag every sample with K=V (repeatable)."),
    format: str = typer.Option("jsonl", help="Format of --out: jsonl or csv."),
    out: Optional[str] = typer.Option(None, metavar="FILE|-", help="Also write samples to FILE or stdout."),
    summary: Optional[str] = typer.Option(None, metavar="FILE", help="Write the end-of-job summary (JSON) here."),
    store: Optional[str] = typer.Option(None, metavar="PATH", help="Embedded store file, or 'none'."),
    cgroup: str = typer.Option("auto", help="auto, create, existing or none (procfs only)."),
    cgroup_version: Optional[int] = typer.Option(None, help="Prefer cgroup v1 or v2."),
    wait: bool = typer.Option(True, "--wait/--no-wait",
                              help="Wait for processes the command left running."),
):
    """Run CMD and sample its CPU, memory, I/O and processes until its last process is gone.

    jobmon stays CMD's parent, forwards signals, leaves stdio alone and exits with CMD's
    exact status. Samples go to the embedded store (see `jobmon query`).
    """
    from ..job.runner import main as run_main
    argv = [f"--interval={interval}", f"--format={format}", f"--cgroup={cgroup}"]
    for name, value in (("--job-id", job_id), ("--out", out), ("--summary", summary),
                        ("--store", store), ("--cgroup-version", cgroup_version)):
        if value is not None:
            argv.append(f"{name}={value}")
    argv += [f"--tag={t}" for t in tag]
    if not wait:
        argv.append("--no-wait")
    run_main(argv + ["--"] + list(cmd))


from . import live, node_reader, query, report, ship  # noqa: E402  (each adds its commands)

query.register(app)
report.register(app)
ship.register(app)
node_reader.register(app)
live.register(app)
from . import pilot; pilot.register(app)  # noqa: E402,E702
from . import serve; serve.register(app)  # noqa: E402,E702
from . import doctor; doctor.register(app)  # noqa: E402,E702
from . import reconcile; reconcile.register(app)  # noqa: E402,E702
from . import act; act.register(app)  # noqa: E402,E702
from . import rollup; rollup.register(app)  # noqa: E402,E702
from . import compare; compare.register(app)  # noqa: E402,E702
