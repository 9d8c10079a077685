"""`jobmon query JOB --like`: the run beside the same user's earlier runs of the same job
script or command line (jobmon.stores.fingerprint), found in the store by their hash."""
import typer

from ..printable import clean
from .reading import open_store


def earlier_runs(st, rep, how, last, report_of):
    """The reports of the `last` latest runs of the user's before `rep`'s run whose `how`
    hash is its own, newest first (steps left out; each run as `jobmon query` builds it:
    report_of(store, [run], None))."""
    from ..report import runs as runs_
    h = rep["header"]
    value = rep["_hashes"][how]
    found = [r for r in st.alike(h["user"], how, value, h["start_time"])
             if not runs_.is_step(r)]
    out = []
    for runs in runs_.by_job(found).values():
        for run in runs:
            if (str(run.job), run.label) != (str(h["job"]), h.get("run")):
                out.append(run)
    out.sort(key=lambda r: r.start_time, reverse=True)
    return [_without_records(report_of(st, [run], None)) for run in out[:last]]


def _without_records(rep):
    rep.pop("records", None)
    return rep


def show_like(job_id, reports, group, store, last, as_json, html, report_of):
    from ..stores.fingerprint import of
    from ..report.compare import like
    if group:
        typer.echo(f"jobmon: {clean(job_id)!r} names {len(reports)} jobs; --like takes "
                   "one job", err=True)
        raise typer.Exit(1)
    rep = reports[0]
    h = rep["header"]
    hashes = of({"tags": dict(h.get("tags") or {}, **(h.get("ran") or {})),
                 "summary": rep.get("summary") or {}})
    how = next((k for k in ("script_hash", "command_hash") if hashes[k]), None)
    if how is None:
        from .. import schedulers
        kept = " or ".join(f"a {s.name} batch job" for s in schedulers.all() if s.keeps_script)
        typer.echo(f"jobmon: job {clean(job_id)!r} has no hash of its command or job "
                   "script (a run recorded before jobmon kept them"
                   + (f", or {kept} whose script was out of its user's reach" if kept else "")
                   + "): nothing to match its earlier runs by", err=True)
        raise typer.Exit(1)
    rep["_hashes"] = hashes
    earlier = earlier_runs(open_store(store), rep, how, last, report_of)
    rep.pop("_hashes")
    from ..render.compare_html import like_page
    from ..render.compare_text import like_text
    from .sidebyside import show
    show(like(rep, earlier, how), as_json, html, like_text, like_page)
