"""`jobmon query` and `jobmon list`: read a store, build a report, render it."""
import sys
from typing import Optional

import typer

from ..printable import clean
from .reading import (accounting_tools, argv_text, for_reader, id_examples, one_instance,
                      open_store, scheduler_names, site_config)


def breakdown_report(st, records, samples=()):
    """For `jobmon query`: {"latest": the last breakdown, "over_job": command names over
    all of them, "count", "taken_seconds": [the first's, the last's] time in the run,
    "resident_then_bytes": the job's resident memory at the sample nearest the last},
    or None where the job has none. samples: the run's."""
    from ..stores.live import fold_breakdowns
    found = sorted((b for r in records for b in st.breakdowns(r)), key=lambda b: b["time"])
    if not found:
        return None
    last = found[-1]
    near = min((x for x in samples if x.get("mem_resident_bytes") is not None),
               key=lambda x: abs(x["time"] - last["time"]), default={})
    return {"latest": last, "over_job": fold_breakdowns(found), "count": len(found),
            "taken_seconds": [found[0].get("elapsed_seconds"), last.get("elapsed_seconds")],
            "resident_then_bytes": near.get("mem_resident_bytes")}


def find_reports(job_id, store, user=None, run=None, with_scheduler=False, command="query"):
    """(reports, group) for a job id as users type it: one report (the run asked for, else
    the latest) and False; or, for an id that names several jobs (a cluster, an array),
    the latest run of each and True. Claims by other users (jobmon.report.ownership) are
    never the job: listed apart in each report ("claims"), shown only asked for with
    --user. Ends the command with a message when nothing fits."""
    from ..report import runs as runs_
    from ..stores.ids import parse, instance_of, split_instance
    job_id, user = argv_text(job_id), argv_text(user)
    st = open_store(store, command)
    ref = parse(job_id)
    records = [r for r in st.records(ref) if not _step_of(r, job_id)]
    job, instance = split_instance(job_id)
    if not records and instance:    # INSTANCE#ID: that instance's job ID
        job_id, ref = job, parse(job)
        records = [r for r in st.records(ref) if not _step_of(r, job_id)
                   and instance_of(r) == instance]
    # none: the name of an array, a batch or a DAG, as `jobmon report` groups them
    batch = not any(not user or r.get("user") == user for r in records)
    if batch:
        records = _batch_records(st, job_id, user)
    owned = _ownership(st, records, with_scheduler)
    claims = owned[1]
    mine = [r for r in records if r.get("user") == user] if user else \
        [r for r in records if id(r) not in claims]
    if batch and mine:
        return _acted(st, [_owned(_report(st, runs, None), *owned)
                           for runs in runs_.by_job(mine).values()]), True
    if not mine:
        by = f" by user {user!r}" if user else ""
        typer.echo(f"jobmon: no job {job_id!r}{by} in the store (see `jobmon list`)"
                   if not claims else f"jobmon: job {job_id!r} has no run of its own user, "
                   f"only {len(claims)} claim(s) by other users ({_users(claims.values())}); "
                   "see one with --user", err=True)
        raise typer.Exit(1)
    one_instance(job_id, mine, "query")
    jobs = runs_.by_job(mine)
    if ref.group and (len(jobs) > 1 or job_id not in jobs):
        return _acted(st, [_owned(_report(st, runs, None), *owned)
                           for runs in jobs.values()]), True
    runs = jobs[next(iter(jobs))]
    users = sorted({r.get("user") or "" for r in mine})
    if not user and len(users) > 1:
        typer.echo(f"jobmon: job {job_id!r} has runs by users {clean(', '.join(users))}, "
                   f"none confirmed by the scheduler; showing the latest "
                   f"({clean(runs[-1].users[0])}); choose one with --user", err=True)
    return _acted(st, [_owned(_report(st, runs, run, job_id, with_scheduler), *owned)]), False


def _acted(st, reports):
    """Each report with `jobmon act`'s warnings and actions on its job (docs/actions.md):
    the scheduler's job (of its instance, where its ids are an instance's), whichever run."""
    from ..stores.ids import instance_in, instance_of
    found = st.actions(jobs=sorted({str(rep["header"]["job"]) for rep in reports}))
    for rep in reports:
        job, instance = str(rep["header"]["job"]), instance_of(rep["header"])
        rep["actions"] = [a for a in found if str(a.get("job")) == job
                          and instance_in(a) == instance]
    return reports


def _ownership(st, records, with_scheduler):
    """({id(record): verdict}, {id(claim): claim}, {job: its confirmed owners}) of one
    query's records, settled where `jobmon reconcile` has not (asking the scheduler
    unless --no-scheduler) on copies: the report shows each record as stored."""
    from ..config.ownership import pilot_accounts
    from ..report import ownership
    settled = for_reader(st, [dict(r) for r in records], with_scheduler, write=False)
    by_copy = ownership.settle(settled, pilot_accounts(site_config()))
    verdicts = {id(r): by_copy[id(c)] for r, c in zip(records, settled)}
    return verdicts, {id(r): c for r, c in zip(records, settled)
                      if verdicts[id(r)] == ownership.CLAIM}, \
        ownership.known_owners(settled, by_copy)


def _owned(rep, verdicts, claims, owners):
    """The report with whose job it is: its run's verdict, and the claims on its job."""
    from ..report import ownership
    shown = rep.pop("records")
    job, known = rep["header"]["job"], ownership.owners_for(owners, shown[0])
    verdict = verdicts[id(shown[0])]
    rep["ownership"] = {"verdict": verdict, "why": ownership.why(
        claims[id(shown[0])], known) if verdict == ownership.CLAIM else None}
    rep["claims"] = [ownership.claim_row(c, known) for i, c in claims.items()
                     if c.get("job") == job and all(i != id(x) for x in shown)]
    return rep


def _users(records):
    return clean(", ".join(sorted({r.get("user") or "" for r in records})))


def _batch_records(st, name, user):
    """The records of the jobs of the batch (an array, a batch or a DAG, as `jobmon report`
    groups them: jobmon.summary.batches) `name`."""
    from ..summary.batches import in_batch
    from ..report.runs import is_step
    from ..stores.ids import JobRef
    ids = sorted({r["job"] for r in st.summaries(user=user, fields=()) if in_batch(r, name)
                  and not is_step(r)})
    return [r for r in st.records(JobRef(name, ids)) if not is_step(r)] if ids else []


def _step_of(record, job_id):
    """True for a step's record (a job's step, 12345.batch: tag parent_job) that was not
    asked for by name: it belongs to its job's report, not beside it as a job of its own."""
    from ..report.runs import is_step
    return is_step(record) and record.get("job") != job_id


def _report(st, runs, wanted, job_id=None, with_scheduler=False):
    from ..report import model
    from ..report import runs as runs_
    chosen = runs_.choose(runs, wanted)
    if chosen is None:
        labels = clean(", ".join(r.label or str(i) for i, r in enumerate(runs, 1)))
        typer.echo(f"jobmon: job {job_id!r} has no run {wanted!r} (its runs: {labels})",
                   err=True)
        raise typer.Exit(1)
    cfg = site_config()
    samples = [st.samples(r) for r in chosen.records]
    # the other runs that never wrote their end-of-job record: their figures are their
    # samples' (a run the scheduler killed with its sampler)
    others = {r.label or str(i): [st.samples(x) for x in r.records]
              for i, r in enumerate(runs, 1) if r is not chosen
              and any((x.get("summary") or {}).get("end_time") is None for x in r.records)}
    scheduler = None
    if with_scheduler:
        from ..report.scheduler import record_of
        head = model.build(chosen, samples, runs, others=others)
        scheduler = record_of(head["header"], head["summary"], cfg)
    rep = model.build(chosen, samples, runs, cfg["report"] if cfg else None, scheduler,
                      others)
    rep["procs"] = breakdown_report(st, chosen.records, () if rep["hosts"] else rep["samples"])
    rep["records"] = chosen.records
    return rep


def register(app):
    @app.command()
    def query(
        job_id: str = typer.Argument(..., metavar="JOBID", help="Job id (see `jobmon list`): "
                                     f"{id_examples()} ..."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
        as_csv: bool = typer.Option(False, "--csv", help="Print the report's figures as CSV "
                                    "(section, name, value, unit, detail)."),
        samples: bool = typer.Option(False, "--samples", help="With --csv: print the "
                                     "samples instead, one row each."),
        store: Optional[str] = typer.Option(None, metavar="PATH", envvar="JOBMON_STORE",
                                            help="Store file (default: the embedded store)."),
        user: Optional[str] = typer.Option(None, "--user", "-u", metavar="NAME",
                                           help="The run of this user (a job id can be reused)."),
        run: Optional[str] = typer.Option(None, "--run", "-r", metavar="N",
                                          help="Which run of a job the scheduler ran more than "
                                          "once (default: the latest; see the list of runs)."),
        scheduler: bool = typer.Option(True, "--scheduler/--no-scheduler",
                                       help=f"Show what {scheduler_names()} recorded "
                                       f"beside jobmon's figures ({accounting_tools()})."),
        readers: bool = typer.Option(False, "--readers", help="Show who read this job "
                                     "through the read service, when and how (yours only; "
                                     "the admin group: any job's)."),
        like: bool = typer.Option(False, "--like", help="Compare the run with the same "
                                  "user's earlier runs of the same job script (else the "
                                  "same command line): side by side with their median."),
        last: int = typer.Option(5, "--last", "-n", min=1, max=1000, metavar="N",
                                 help="With --like: how many earlier runs (the latest)."),
        html: Optional[str] = typer.Option(None, "--html", metavar="FILE",
                                           help="With --like: write it as an HTML page "
                                           "(FILE '-': to standard output)."),
    ):
        """Show one job: efficiency and advice, memory by every definition, what the
        scheduler recorded, totals, its runs and its samples."""
        if readers:
            from .readers import show_readers
            return show_readers(argv_text(job_id), argv_text(user), store, as_json)
        if html and not like:
            raise typer.BadParameter("a job's own page is `jobmon report JOBID --html "
                                     "FILE`; here --html goes with --like", param_hint="--html")
        reports, group = find_reports(job_id, store, user, run, scheduler)
        if like:
            from .like import show_like
            return show_like(argv_text(job_id), reports, group, store, last, as_json, html,
                             _report)
        if group:
            return render_group(argv_text(job_id), reports, as_json, as_csv, samples)
        render_one(reports[0], as_json, as_csv, samples)

    def render_one(rep, as_json, as_csv, samples):
        if as_json:
            from ..render.structured import to_json
            typer.echo(to_json(rep))
        elif as_csv:
            from ..render.structured import to_csv
            typer.echo(to_csv(rep, samples, sys.stdout.isatty()), nl=False)
        else:
            from ..render.terminal import show
            show(rep)
            from ..render.live import show_procs
            typer.echo(show_procs(rep.get("procs")), nl=False)

    def render_group(job_id, reports, as_json, as_csv, samples):
        if as_json:
            from ..render.structured import group_to_json
            typer.echo(group_to_json(job_id, reports))
        elif as_csv:
            from ..render.structured import group_to_csv
            typer.echo(group_to_csv(reports, samples, sys.stdout.isatty()), nl=False)
        else:
            from ..render.terminal import show_group
            show_group(job_id, reports)

    @app.command("list")
    def list_jobs(
        limit: int = typer.Option(20, "--limit", "-n", min=1, help="How many recent jobs."),
        store: Optional[str] = typer.Option(None, metavar="PATH", envvar="JOBMON_STORE",
                                            help="Store file (default: the embedded store)."),
    ):
        """List recent jobs, newest first."""
        from ..render.terminal import show_list
        from ..stores.ids import typed_ids
        jobs = open_store(store, "list").jobs(limit)
        show_list([dict(j, job=typed) for j, typed in zip(jobs, typed_ids(jobs))])
