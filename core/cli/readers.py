"""`jobmon query JOB --readers`: who read a job through the read service (its read log,
jobmon.serve.read_log), newest first. Only the service keeps it: a reader of the store
itself is told so."""
import typer

from ..printable import clean


def show_readers(job_id, user, store, as_json):
    from ..stores.ids import parse
    from .reading import open_store
    st = open_store(store, "readers")
    remote = getattr(st, "store", None)
    from ..serve.client import RemoteStore, ServiceError
    if not isinstance(remote, RemoteStore):
        typer.echo("jobmon: --readers: who read a job is kept by the read service (`jobmon "
                   "serve`); this host reads the store itself ([service] address is not set)",
                   err=True)
        raise typer.Exit(2)
    try:
        answer = remote.readers(parse(job_id), user=user)
    except ServiceError as e:
        # the service's refusal of another user's job reads as for its other data
        typer.echo(f"jobmon: {e}", err=True)
        raise typer.Exit(1)
    finally:
        remote.close()
    if as_json:
        import json
        typer.echo(json.dumps({"job": job_id, "kept_days": answer["days"],
                               "reads": answer["reads"]}, indent=2))
        return
    typer.echo(render(job_id, answer))


def render(job_id, answer):
    import time
    reads = answer["reads"]
    owners = sorted({r["owner"] for r in reads if r.get("owner")})
    head = (f"Reads of job {clean(job_id)} through the read service (kept "
            f"{answer['days']:g} days), newest first: {len(reads)} "
            f"{'read' if len(reads) == 1 else 'reads'}")
    if not reads:
        return head
    rows = [("when", "reader", "how", "answer", "via", "job", "owner")]
    for r in reads:
        rows.append((time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["time"])),
                     clean(r["reader"]), clean(r["how"]),
                     "read" if r["allowed"] else "refused", clean(r["via"]),
                     clean(r["job"]), clean(r["owner"] or "(asked by id)")))
    if len(owners) <= 1 and len({r["job"] for r in reads}) <= 1:
        rows = [row[:5] for row in rows]      # one job of one owner: said in the head
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join([head] + ["  " + line for line in lines])
