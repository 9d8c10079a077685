"""`jobmon report`: reports to keep or pass on. `jobmon report JOBID --html FILE` writes one
job run's self-contained HTML page (plots over time, its figures).

The command dispatches on its form: with JOBID, one job (report_job); a report over a
time range of many jobs is a form still to come, beside it.
"""
from typing import Optional

import typer

from ..printable import clean
from .query import find_reports
from .reading import accounting_tools, scheduler_names
from .sidebyside import write_page


def report_job(job_id, html, store=None, user=None, run=None, scheduler=True):
    """One job's HTML report (the run asked for, else the latest) written to `html`
    ("-": standard output); scheduler: with what the scheduler recorded."""
    from ..render.html import render
    reports, group = find_reports(job_id, store, user, run, scheduler, "report")
    if group:
        jobs = clean(", ".join(sorted(str(r["header"]["job"]) for r in reports)[:10]))
        more = f" and {len(reports) - 10} more" if len(reports) > 10 else ""
        typer.echo(f"jobmon: {job_id!r} names {len(reports)} jobs ({jobs}{more}); an HTML "
                   "report shows one: give its full id", err=True)
        raise typer.Exit(1)
    page = render(reports[0])
    write_page(html, page, f" ({len(page.encode()) / 1024:.0f} KiB; opens offline in any "
               "browser)")


def register(app):
    @app.command("report")
    def report(
        job_id: Optional[str] = typer.Argument(None, metavar="[JOBID]",
                                               help="The job (as for `jobmon query`); "
                                               "without it, a report over many jobs."),
        html: Optional[str] = typer.Option(None, "--html", metavar="FILE",
                                 help="Write the job's HTML report (plots and figures, one "
                                 "self-contained file) here; - for standard output."),
        store: Optional[str] = typer.Option(None, metavar="PATH", envvar="JOBMON_STORE",
                                            help="Store file (default: the embedded store)."),
        user: Optional[str] = typer.Option(None, "--user", "-u", metavar="NAME",
                                           help="The run of this user (a job id can be "
                                           "reused); without JOBID: this user's jobs only."),
        run: Optional[str] = typer.Option(None, "--run", "-r", metavar="N",
                                          help="Which run of a job the scheduler ran more than "
                                          "once (default: the latest)."),
        since: str = typer.Option("7d", metavar="WHEN", help="Without JOBID: jobs started "
                                  "since (7d, 12h, 2w, an ISO date or time)."),
        until: Optional[str] = typer.Option(None, metavar="WHEN", help="... and before "
                                            "(default: now)."),
        by: str = typer.Option("user", metavar="KEY", help="Group by user, group, account, "
                               "site, pool, queue or partition."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
        as_csv: bool = typer.Option(False, "--csv", help="Print one CSV row per group."),
        top: int = typer.Option(10, metavar="N", help="Top wasters and batches shown."),
        scheduler: bool = typer.Option(True, "--scheduler/--no-scheduler",
                                       help=f"With JOBID: show what {scheduler_names()} "
                                       "recorded beside jobmon's figures "
                                       f"({accounting_tools()}); "
                                       "without: settle the outcomes of runs `jobmon "
                                       "reconcile` has not settled yet with theirs."),
    ):
        """A job's HTML page (`jobmon report JOBID --html FILE`), or, without JOBID, jobs
        over a time range: efficiency, idle canonical core-hours, suspects, right-sizing."""
        if job_id is None:
            from .report_range import report_range
            return report_range(since, until, by, user, as_json, as_csv, top, store,
                                scheduler)
        if html is None:
            raise typer.BadParameter("the report of one job is a page: give --html FILE "
                                     "(for the terminal: jobmon query JOBID)",
                                     param_hint="--html")
        report_job(job_id, html, store, user, run, scheduler)
