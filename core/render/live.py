"""Plain-text layout of the live views (`jobmon top`, `jobmon watch`) and of per-process
breakdowns: sparklines and fixed-width tables for an 80-column terminal (`top`: the
terminal's width). Pure functions of the models built in jobmon.cli.live; no terminal
library, no colours. A job id or a user name is never cut: an id too long for its column
gets a line of its own; the USER column is as wide as the longest name.
"""
import datetime
import textwrap

from ..printable import LARGEST_FIXED, clean, fixed, size as _size

WIDTH = 80
BLOCKS = "▁▂▃▄▅▆▇█"
# top: header, width, alignment (">" right); USER at least this wide, the job column
# takes what is left
TOP_COLUMNS = (("USER", 8, "<"), ("CORES", 6, ">"), ("ALLOC", 5, ">"), ("MEMORY", 8, ">"),
               ("EFF", 5, ">"), ("PROCS", 5, ">"), ("AGE", 7, ">"))
JOB_MIN = 8
# what a breakdown's memory is (RSS from /proc/PID/stat, summed per command name), said
# wherever one is shown: it is not the job's resident memory
RSS_NOTE = ("RSS summed per command name: a page shared between processes counts in each, "
            "so the sum can exceed the job's resident memory")


def sparkline(values, width=None, lo=0.0, hi=None):
    """One block character per value (the last `width` values), scaled from lo to hi
    (default: their largest); a missing value is a space."""
    vals = list(values)[-width:] if width else list(values)
    known = [v for v in vals if v is not None]
    if not known:
        return " " * len(vals)
    top = max(known) if hi is None else max(hi, max(known))
    span = top - lo
    out = []
    for v in vals:
        if v is None:
            out.append(" ")
        elif span <= 0:
            out.append(BLOCKS[0])
        else:
            out.append(BLOCKS[min(int((v - lo) / span * len(BLOCKS)), len(BLOCKS) - 1)])
    return "".join(out)


def size(n):
    """Bytes in at most 8 characters: 512 B, 12.3 MiB, 1.2 GiB (jobmon.printable.size)."""
    return "-" if n is None else _size(n, short=True)


def duration(seconds):
    """4.2s, 42s, 7m05s, 2h05m, 3d04h."""
    if seconds is None:
        return "-"
    if not abs(seconds) < LARGEST_FIXED:   # a forged figure: its 3 digits
        return fixed(seconds) + "s"
    if 0 <= seconds < 9.95:
        return f"{fixed(seconds, '.1f')}s"
    s = int(max(seconds, 0))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}d{h:02d}h"
    if h:
        return f"{h}h{m:02d}m"
    return f"{m}m{s:02d}s" if m else f"{s}s"


def number(v, digits=2):
    return "-" if v is None else fixed(v, f".{digits}f")


def percent(v):
    return "-" if v is None else fixed(v, ".0f") + "%"


def cut(text, width):
    text = clean(text)
    return text if len(text) <= width else text[:width - 1] + "…"


def top_screen(rows, title, notes=(), width=WIDTH):
    """`jobmon top`: rows of {job, user, cores, alloc, mem, eff, procs, age}, in order,
    for a terminal `width` columns wide."""
    users = [clean(r["user"] or "?") for r in rows]
    columns = (("USER", max([TOP_COLUMNS[0][1]] + [len(u) for u in users]), "<"),) \
        + TOP_COLUMNS[1:]
    room = width - sum(w for _h, w, _a in columns) - len(columns)
    jw = max(JOB_MIN, min(room, max([len(clean(r["job"])) for r in rows] + [3])))
    lines = [cut(title, width)]
    lines += [cut(n, width) for n in notes]
    head = f"{'JOB':<{jw}}" + "".join(f" {h:{a}{w}}" for h, w, a in columns)
    lines.append(head)
    for r, user in zip(rows, users):
        cells = (user, number(r["cores"]), number(r["alloc"], 1),
                 size(r["mem"]), percent(r["eff"]), "-" if r["procs"] is None else r["procs"],
                 duration(r["age"]))
        rest = "".join(f" {str(c):{a}{w}}" for c, (_h, w, a) in zip(cells, columns))
        job = clean(r["job"])
        if len(job) > jw:            # never cut: the id alone, its figures below
            lines.append(job)
            lines.append(" " * jw + rest)
        else:
            lines.append(f"{job:<{jw}}{rest}")
    if not rows:
        lines.append("(no running job found)")
    return "\n".join(lines) + "\n"


def procs_table(record, title="top processes", width=WIDTH, resident=None):
    """A breakdown record's groups: command name, processes, CPU cores, summed RSS (and
    the command line where it was stored), said when it was taken; resident: the job's
    resident memory then, where known."""
    if not record or not record.get("top"):
        return []
    window = record.get("window_seconds")
    when = f"over the last {duration(window)}" if window else "average over each life"
    then = f"; the job's resident memory then: {size(resident)}" if resident is not None \
        else ""
    lines = wrap(f"{title}, taken at {duration(record.get('elapsed_seconds'))} of the run "
                 f"(by CPU, then memory; CPU {when}; {record.get('procs', '?')} "
                 f"process{'' if record.get('procs') == 1 else 'es'}"
                 f"{then})", width)
    lines += wrap(RSS_NOTE, width)
    lines.append(f"{'COMMAND':<16} {'PROCS':>5} {'STATE':<8} {'CORES':>6} {'RSS':>8}  WAITING IN")
    for g in record["top"]:
        row = (f"{cut(g.get('comm') or '?', 16):<16} {g.get('procs', 0):>5} "
               f"{cut(states(g.get('states')), 8):<8} {number(g.get('cpu_cores')):>6} "
               f"{size(g.get('rss_bytes')):>8}  ")
        lines.append(row + cut(waits(g.get("wchan")), max(width - len(row), 8)))
        if g.get("cmdline"):
            lines.append("  " + cut(g["cmdline"], width - 2))
    return lines


# process states in the order an admin looks for them (the kernel's letters, proc(5))
STATE_ORDER = "DRZTtSI"


def states(counts):
    """A group's process states: "S" when all are in one, else "R1 S3" (D, R, Z first)."""
    if not isinstance(counts, dict) or not counts:
        return "-"
    if len(counts) == 1:
        return clean(next(iter(counts)))
    order = sorted(counts, key=lambda k: (STATE_ORDER.find(str(k)) % 99, str(k)))
    return " ".join(f"{clean(k)}{counts[k]}" for k in order)


def waits(wchan):
    """Where a group's processes wait: "anon_pipe_read", or "do_wait 2, pipe_read 1"."""
    if not isinstance(wchan, dict) or not wchan:
        return "-"
    if len(wchan) == 1 and list(wchan.values()) == [1]:
        return clean(next(iter(wchan)))
    return ", ".join(f"{clean(k)} {v}" for k, v in sorted(wchan.items(), key=lambda kv: -kv[1]))


def wrap(text, width=WIDTH):
    """Clean text as lines of at most `width` columns, broken between words."""
    return textwrap.wrap(clean(text), width, break_on_hyphens=False)


def procs_over_job(groups, width=WIDTH):
    """The job's command names over all its breakdowns: {comm, procs_max, cpu_mean,
    cpu_max, rss_max, seen} each (jobmon.stores.live.fold_breakdowns)."""
    if not groups:
        return []
    lines = [f"{'COMMAND':<16} {'PROCS':>5} {'CORES':>6} {'PEAK':>6} {'RSS PEAK':>8} "
             f"{'SEEN':>5}",
             ]
    for g in groups:
        lines.append(f"{cut(g['comm'], 16):<16} {g['procs_max']:>5} {number(g['cpu_mean']):>6} "
                     f"{number(g['cpu_max']):>6} {size(g['rss_max']):>8} {g['seen']:>5}")
    return [cut(x, width) for x in lines]


def last_used(idle_for, span):
    """When the job last used CPU (at least 0.01 cores over a sampling interval)."""
    if idle_for == 0:
        return "CPU: in use at the latest sample"
    if idle_for is None:
        return (f"CPU: not used in the last {duration(span)} (every sample shown: under "
                "0.01 cores) -- stalled?")
    return f"CPU: last used {duration(idle_for)} ago (under 0.01 cores since) -- stalled?"


def alerts(job, last, idle_after, near_percent):
    """Banner lines from a job's latest sample: an allocation held idle for at least
    `idle_after` seconds (GPUs none of its processes is on, cores under 0.01 busy), and
    resident memory within `near_percent` % of its memory limit (what the OOM killer
    counts: page cache is given back first)."""
    job, out = clean(job), []
    unused, gpus = last.get("gpu_unused_seconds"), last.get("gpu_count") or 0
    if unused and unused >= idle_after:
        free = gpus - (last.get("gpus_in_use") or 0)
        out.append(f"IDLE {job}: {free} of its {gpus} GPU{'s' if gpus > 1 else ''} without a "
                   f"process of it for {duration(unused)}")
    idle = last.get("cpu_idle_seconds")
    if idle and idle >= idle_after:
        out.append(f"IDLE {job}: its cores under 0.01 busy for {duration(idle)}")
    limit, resident = last.get("mem_limit_bytes"), last.get("mem_resident_bytes")
    if limit and resident is not None and 100.0 * resident / limit >= near_percent:
        out.append(f"MEMORY {job}: resident {size(resident)} is "
                   f"{fixed(100.0 * resident / limit, '.0f')} % of its {size(limit)} limit: "
                   "near an OOM kill")
    return out


SERIES_LABEL = 10
SERIES_VALUE = 8


def watch_screen(m):
    """`jobmon watch`: m = {job, run, user, host, method, age, command, alloc, eff,
    status, interval, series: [(label, [values], now text, peak text, hi)], procs}."""
    run = f" run {m['run']}" if m.get("run") else ""
    lines = [clean(f"job {m['job']}{run}  user {m.get('user') or '?'}  on {m.get('host') or '?'}"),
             cut(f"{m.get('status') or 'running'} for {duration(m.get('age'))}, measured by "
                 f"{m.get('method') or '?'}, a sample every {number(m.get('interval'), 1)} s, "
                 f"{datetime.datetime.now():%H:%M:%S}", WIDTH)]
    if m.get("command"):
        lines.append(cut("command: " + " ".join(map(str, m["command"])), WIDTH))
    alloc = m.get("alloc")
    lines.append(f"cores allocated: {number(alloc, 1) if alloc else 'unknown'}; CPU efficiency "
                 f"so far: {percent(m.get('eff'))}")
    lines.append(cut(last_used(m.get("cpu_idle_for"), m.get("samples_span")), WIDTH))
    lines += [cut(a, WIDTH) for a in m.get("alerts") or ()]
    spark = WIDTH - SERIES_LABEL - 2 * SERIES_VALUE - 3
    count = max((len(s[1]) for s in m["series"]), default=0)
    lines += ["", f"{'':{SERIES_LABEL}} {'now':>{SERIES_VALUE}} "
                  f"{cut(f'last {min(count, spark)} samples', spark):<{spark}} "
                  f"{'peak':>{SERIES_VALUE}}"]
    for label, values, now, peak, hi in m["series"]:
        lines.append(f"{cut(label, SERIES_LABEL):<{SERIES_LABEL}} {now:>{SERIES_VALUE}} "
                     f"{sparkline(values, spark, hi=hi):<{spark}} {peak:>{SERIES_VALUE}}")
    procs = procs_table(m.get("procs"))
    if procs:
        lines += [""] + procs
    return "\n".join(lines) + "\n"


def show_procs(procs):
    """`jobmon query`'s per-process section: the command names over the job, and the
    latest breakdown (text, empty without one)."""
    if not procs:
        return ""
    first, last = procs.get("taken_seconds") or (None, None)
    n = procs["count"]
    lines = [""] + wrap(f"processes by command name over the job: {n} "
                        f"breakdown{'' if n == 1 else 's'}, taken at {duration(first)}"
                        f"{'' if last == first else ' to ' + duration(last)} of the "
                        "run (CORES their mean, PEAK their largest; RSS PEAK the largest "
                        "sum in one breakdown, not the job's peak)")
    lines += procs_over_job(procs["over_job"])
    lines += [""] + procs_table(procs["latest"], "the latest breakdown",
                                resident=procs.get("resident_then_bytes"))
    return "\n".join(lines) + "\n"
