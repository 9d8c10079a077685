"""`jobmon top` and `jobmon watch`: the jobs running on this node, live, from the node's
spool and the embedded store (no database). Models here, layout in jobmon.render.live."""
import os
import sys
import time
from typing import Optional

import typer

from ..printable import clean

SORTS = ("cpu", "mem", "eff")
CLEAR = "\x1b[H\x1b[2J"


def sources(spool, store):
    """(spool dir or None, LocalStore or None): --spool / --store, else the config's spool
    directory and the embedded store's default path, where they exist."""
    from ..stores import store_path
    if spool is None:
        from .. import config
        try:
            spool = config.load()["spool"]["dir"]
        except config.ConfigError as e:
            typer.echo(f"jobmon: {e}", err=True)
            raise typer.Exit(2)
    if spool == "none":
        spool = None
    path = store or store_path()
    st = None
    if path != "none" and os.path.exists(path):
        from ..stores.local import LocalStore
        st = LocalStore(path)
    return spool, st


def cores_allocated(info):
    from ..report.job_efficiency import allocation
    return allocation({}, info.get("tags") or {}).get("cores_allocated")


def row(job, now):
    """One line of `jobmon top`."""
    last = job.samples[-1] if job.samples else {}
    alloc = cores_allocated(job.info)
    cpu = (last.get("cpu_user_seconds") or 0) + (last.get("cpu_system_seconds") or 0)
    elapsed = last.get("elapsed_seconds") or 0
    return {"job": job.job, "user": job.info.get("user"), "cores": last.get("cpu_cores"),
            "alloc": alloc, "mem": last.get("mem_resident_bytes"),
            "eff": cpu / (alloc * elapsed) * 100 if alloc and elapsed > 0 else None,
            "procs": last.get("procs"), "age": now - (job.info.get("start_time") or now)}


def sort_rows(rows, by):
    """cpu, mem: the largest first; eff: the least efficient first (the waste). Unknown
    figures last; ties by job id."""
    key = {"cpu": "cores", "mem": "mem", "eff": "eff"}[by]
    sign = 1 if by == "eff" else -1
    return sorted(rows, key=lambda r: (r[key] is None, sign * (r[key] or 0), str(r["job"])))


def job_alerts(job, cfg):
    """Banners of a running job (jobmon.render.live.alerts), at the site's thresholds."""
    from ..render.live import alerts
    last = job.samples[-1] if job.samples else {}
    return alerts(job.job, last, cfg["idle_allocation_seconds"], cfg["mem_near_limit_percent"])


def top_text(spool, st, by):
    import shutil
    from ..config import report_section
    from ..render.live import WIDTH, top_screen
    from ..stores.live import running
    jobs, problems = running(spool, st, last=2)
    now = time.time()
    cfg = report_section()
    problems = list(problems) + [a for j in jobs for a in job_alerts(j, cfg)]
    rows = sort_rows([row(j, now) for j in jobs], by)
    title = (f"jobmon top — {os.uname().nodename} — {len(rows)} running job"
             f"{'' if len(rows) == 1 else 's'} — by {by} — {time.strftime('%H:%M:%S')}")
    width = max(shutil.get_terminal_size((WIDTH, 24)).columns, WIDTH)
    return top_screen(rows, title, problems, width)


def rates(samples, keys):
    """Bytes per second between consecutive samples of the sum of the counters `keys`."""
    out = [None]
    for a, b in zip(samples, samples[1:]):
        dt = (b["time"] - a["time"]) / 1e9
        if dt <= 0 or any(k not in a or k not in b for k in keys):
            out.append(None)
            continue
        out.append(max(sum(b[k] - a[k] for k in keys), 0) / dt)
    return out


def cpu_last_used(samples, now):
    """(seconds since the job last used CPU -- a sample with at least IDLE_CORES busy over
    its interval; 0: its latest --, seconds its samples cover): None for the first when
    none of them did."""
    from ..summary import IDLE_CORES
    timed = [s for s in samples if s.get("time") is not None]
    if not timed:
        return None, 0.0
    span = now - timed[0]["time"] / 1e9
    busy = [s for s in timed if (s.get("cpu_cores") or 0) >= IDLE_CORES]
    if not busy:
        return None, span
    return (0.0 if busy[-1] is timed[-1] else max(now - busy[-1]["time"] / 1e9, 0.0)), span


def watch_model(job, now):
    from ..render.live import number, size
    smp, info = job.samples, job.info
    r = row(job, now)
    io_keys = ("read_bytes", "write_bytes") if any("read_bytes" in s for s in smp) \
        else ("rchar_bytes", "wchar_bytes")
    io = rates(smp, io_keys)

    def series(label, values, fmt, hi=None):
        known = [v for v in values if v is not None]
        last = values[-1] if values else None
        return (label, values, fmt(last), fmt(max(known) if known else None), hi)

    out = [series("CPU cores", [s.get("cpu_cores") for s in smp], number, r["alloc"]),
           series("memory", [s.get("mem_resident_bytes") for s in smp], size),
           series("disk I/O/s" if io_keys[0] == "read_bytes" else "I/O/s (sys)", io, size),
           series("processes", [s.get("procs") for s in smp],
                  lambda v: "-" if v is None else str(v))]
    if any("gpu_util_percent" in s for s in smp):
        out.append(series("GPU util %", [s.get("gpu_util_percent") for s in smp],
                          lambda v: number(v, 0), 100))
    idle_for, span = cpu_last_used(smp, now)
    from ..config import report_section
    return {"job": job.job, "run": info.get("run"), "user": info.get("user"),
            "alerts": job_alerts(job, report_section()),
            "cpu_idle_for": idle_for, "samples_span": span,
            "host": info.get("host"), "method": info.get("method"), "age": r["age"],
            "command": info.get("command"), "alloc": r["alloc"], "eff": r["eff"],
            "interval": info.get("interval"), "series": out, "procs": job.procs}


def find(job_id, spool, st, last):
    """(the latest running job of the id, every running job, problems); where jobs of two
    instances of a scheduler are running under the id, ends the command asking which
    (INSTANCE#ID)."""
    from ..stores.ids import instance_of, split_instance
    from ..stores.live import running
    from .reading import one_instance
    jobs, problems = running(spool, st, last)
    from ..influx.lineprotocol import clean_tag

    def of(job, instance=None):     # the store's id, the spool's (as the writer wrote it)
        return [j for j in jobs if str(j.job) in (job, clean_tag(job))
                and instance in (None, instance_of(j.info))]
    mine = of(job_id) or of(*split_instance(job_id))
    one_instance(job_id, [j.info for j in mine], "watch")
    mine.sort(key=lambda j: j.info.get("start_time") or 0)
    return (mine[-1] if mine else None), jobs, problems


def clip(text, height, width):
    """A screen's first lines for a terminal `height` rows high (the title, the header and
    the first rows stay in view), the last row saying how many more there are."""
    lines = text.splitlines()
    if len(lines) < height:
        return text
    keep = max(height - 2, 1)
    more = (f"… {len(lines) - keep} more lines below (a taller terminal or --once shows "
            "them)")
    return "\n".join(lines[:keep] + [more[:width]]) + "\n"


class Keys:
    """The terminal's keys, one at a time and unechoed, while a live view runs (Ctrl-C
    still interrupts); the terminal's settings come back on close()."""

    def __init__(self, fd):
        import termios
        import tty
        self.fd, self.saved = fd, termios.tcgetattr(fd)
        tty.setcbreak(fd)

    def wait(self, seconds):
        """The key pressed within `seconds`, or None."""
        import select
        if select.select([self.fd], [], [], seconds)[0]:
            return os.read(self.fd, 1).decode("ascii", "replace")
        return None

    def close(self):
        import termios
        termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)


def loop(draw, once, every):
    """Draw once (to stdout, plain) or again every `every` seconds until `q`, Ctrl-C or
    until draw() returns None. On a terminal each screen replaces the last and is clipped
    to its height; into a pipe or a file the screens follow each other, plain."""
    if once:
        text = draw()
        if text is not None:
            sys.stdout.write(text)
        return
    import shutil
    screen = sys.stdout.isatty()
    keys = None
    if screen and sys.stdin.isatty():
        try:
            keys = Keys(sys.stdin.fileno())
        except OSError:   # no terminal settings to change: Ctrl-C only
            keys = None
    try:
        while True:
            text = draw()
            if text is None:
                return
            if screen:
                size = shutil.get_terminal_size()
                sys.stdout.write(CLEAR + clip(text, size.lines, size.columns))
            else:
                sys.stdout.write(text + "\n")
            sys.stdout.flush()
            if keys is None:
                time.sleep(every)
                continue
            deadline = time.monotonic() + every
            while (left := deadline - time.monotonic()) > 0:
                if keys.wait(left) in ("q", "Q"):
                    return
    except KeyboardInterrupt:
        sys.stdout.write("\n")
    finally:
        if keys is not None:
            keys.close()


def register(app):
    spool_opt = typer.Option(None, metavar="DIR", help="Spool directory (default: the "
                             "config's [spool] dir; 'none' to skip).")
    store_opt = typer.Option(None, metavar="PATH", envvar="JOBMON_STORE",
                             help="Embedded store (default: yours; 'none' to skip).")

    @app.command()
    def top(
        sort: str = typer.Option("cpu", "--sort", "-s", help="cpu, mem or eff (least "
                                 "efficient first)."),
        once: bool = typer.Option(False, "--once", help="Print one screen and exit."),
        interval: float = typer.Option(2.0, "--interval", "-i", min=0.1, metavar="S",
                                       help="Seconds between refreshes."),
        spool: Optional[str] = spool_opt, store: Optional[str] = store_opt,
    ):
        """The jobs running on this node: cores used and allocated, memory, efficiency.

        Redrawn in place until q or Ctrl-C, clipped to the terminal's height; into a pipe,
        plain screens one after the other."""
        if sort not in SORTS:
            raise typer.BadParameter(f"choose one of {', '.join(SORTS)}", param_hint="--sort")
        sp, st = sources(spool, store)
        loop(lambda: top_text(sp, st, sort), once, interval)

    @app.command()
    def watch(
        job_id: str = typer.Argument(..., metavar="JOBID", help="A job running on this node."),
        once: bool = typer.Option(False, "--once", help="Print one screen and exit."),
        interval: float = typer.Option(2.0, "--interval", "-i", min=0.1, metavar="S",
                                       help="Seconds between refreshes."),
        samples: int = typer.Option(50, "--samples", "-n", min=2, max=50,
                                    help="Samples in the sparklines."),
        spool: Optional[str] = spool_opt, store: Optional[str] = store_opt,
    ):
        """One running job live: when it last used CPU, sparklines of CPU, memory, I/O and
        processes, and its busiest processes with their states and what they wait in.

        Redrawn in place until q or Ctrl-C; into a pipe, plain screens one after the
        other."""
        from ..render.live import watch_screen
        from ..job.runner import argv_text
        job_id = argv_text(job_id)
        sp, st = sources(spool, store)
        job, jobs, problems = find(job_id, sp, st, samples + 1)
        if job is None:
            names = clean(", ".join(sorted({str(j.job) for j in jobs})[:10]) or "none")
            for p in problems:
                typer.echo(f"jobmon: {clean(p)}", err=True)
            typer.echo(f"jobmon: job {job_id!r} is not running on this node (running: "
                       f"{names}); for finished jobs see `jobmon query`", err=True)
            raise typer.Exit(1)
        state = {"first": True}

        def draw():
            nonlocal job
            if not state.pop("first", False):
                job = find(job_id, sp, st, samples + 1)[0]
                if job is None:
                    sys.stdout.write(clean(f"job {job_id} has ended (see `jobmon query "
                                           f"{job_id}`)") + "\n")
                    return None
            return watch_screen(watch_model(job, time.time()))
        loop(draw, once, interval)
