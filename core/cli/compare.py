"""`jobmon compare JOB1 JOB2`: two runs side by side, from whichever store `jobmon query`
reads (the embedded store, InfluxDB, the read service)."""
from typing import Optional

import typer

from .reading import accounting_tools, argv_text, scheduler_names


def one_report(job_id, store, user, run, scheduler):
    """The report of one job's run (the latest unless --run), as `jobmon query` builds it;
    ends the command where the id names several jobs."""
    from .query import find_reports
    reports, group = find_reports(job_id, store, user, run, scheduler)
    if group:
        typer.echo(f"jobmon: {argv_text(job_id)!r} names {len(reports)} jobs; compare "
                   "one job with one job (see `jobmon query` for the group)", err=True)
        raise typer.Exit(1)
    return reports[0]


def register(app):
    @app.command()
    def compare(
        job1: str = typer.Argument(..., metavar="JOB1", help="The run to compare against "
                                   "(a job id as `jobmon query` takes it)."),
        job2: str = typer.Argument(..., metavar="JOB2", help="The run compared with JOB1."),
        as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
        html: Optional[str] = typer.Option(None, "--html", metavar="FILE",
                                           help="Write it as an HTML page (FILE '-': to "
                                           "standard output)."),
        store: Optional[str] = typer.Option(None, metavar="PATH", envvar="JOBMON_STORE",
                                            help="Store file (default: the embedded store)."),
        user: Optional[str] = typer.Option(None, "--user", "-u", metavar="NAME",
                                           help="The runs of this user (a job id can be "
                                           "reused)."),
        run1: Optional[str] = typer.Option(None, "--run1", metavar="N",
                                           help="Which run of JOB1 (default: the latest)."),
        run2: Optional[str] = typer.Option(None, "--run2", metavar="N",
                                           help="Which run of JOB2 (default: the latest)."),
        scheduler: bool = typer.Option(True, "--scheduler/--no-scheduler",
                                       help="Settle how each run ended with what "
                                       f"{scheduler_names()} recorded "
                                       f"({accounting_tools()})."),
    ):
        """Compare two runs side by side: CPU, wall, memory peaks, I/O, waits and
        pressure, outcome, and one line on what changed most from JOB1 to JOB2."""
        from ..report.compare import compare as build
        reports = [one_report(j, store, user, r, scheduler)
                   for j, r in ((job1, run1), (job2, run2))]
        from ..render.compare_html import compare_page
        from ..render.compare_text import compare_text
        from .sidebyside import show
        show(build(reports, (run1, run2)), as_json, html, compare_text, compare_page)
