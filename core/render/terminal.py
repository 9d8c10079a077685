"""The terminal report (rich): header, totals and peaks, and a sample table."""
import datetime

from rich.console import Console
from rich.table import Table
from rich.markup import escape


def human(value, unit):
    if value is None:
        return "-"
    if unit == "bytes":
        v = float(value)
        for u in ("B", "KiB", "MiB", "GiB", "TiB"):
            if abs(v) < 1024 or u == "TiB":
                return f"{v:.0f} {u}" if u == "B" else f"{v:.1f} {u}"
            v /= 1024
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "cores":
        return f"{value:.2f}"
    if unit in ("%", "J"):
        return f"{value:.1f} {unit}"
    return str(value)


def when(ts):
    if not ts:
        return "-"
    return datetime.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def show(rep, console=None):
    console = console or Console()
    h = rep["header"]
    console.print(f"[bold]job {escape(str(h['job']))}[/bold] on {escape(str(h['host']))} "
                  f"as {escape(str(h['user']))} — {escape(h['status'])} — measured by {h['method']}")
    console.print(f"started {when(h['start_time'])}, ended {when(h['end_time'])}"
                  + (f"; command: {escape(' '.join(h['command']))}" if h.get("command") else ""))
    if h["tags"]:
        console.print("tags: " + ", ".join(f"{escape(k)}={escape(str(v))}" for k, v in h["tags"].items()))
    t = Table(title="totals and peaks", show_header=False, box=None)
    t.add_column(style="bold")
    t.add_column(justify="right")
    for name, value, unit in rep["totals"]:
        t.add_row(name, human(value, unit))
    console.print(t)
    samples = rep["samples"]
    if samples:
        step = max(1, len(samples) // 20)  # at most ~20 rows; the last one always shown
        rows = samples[::step]
        if rows[-1] is not samples[-1]:
            rows.append(samples[-1])
        st = Table(title=f"samples ({len(samples)}, every {step}th shown)" if step > 1
                   else f"samples ({len(samples)})")
        for col in ("t (s)", "CPU cores", "CPU total s", "resident", "cache", "read", "written", "procs"):
            st.add_column(col, justify="right")
        for x in rows:
            st.add_row(f"{x.get('elapsed_seconds', 0):.1f}", human(x.get("cpu_cores"), "cores"),
                       human((x.get("cpu_user_seconds") or 0) + (x.get("cpu_system_seconds") or 0), "s"),
                       human(x.get("mem_resident_bytes"), "bytes"), human(x.get("mem_cache_bytes"), "bytes"),
                       human(x.get("read_bytes"), "bytes"), human(x.get("write_bytes"), "bytes"),
                       str(x.get("procs", "-")))
        console.print(st)


def show_list(jobs, console=None):
    console = console or Console()
    t = Table(title="recent jobs")
    for col in ("job", "host", "user", "started", "status", "wall", "CPU s", "resident peak", "method"):
        t.add_column(col)
    for j in jobs:
        s = j.get("summary") or {}
        status = ("signal %s" % s["signal"]) if s.get("signal") else (
            "exit %s" % s["exit_code"] if s.get("exit_code") is not None else "running?")
        cpu = (s.get("cpu_user_seconds") or 0) + (s.get("cpu_system_seconds") or 0)
        t.add_row(escape(str(j.get("job"))), escape(str(j.get("host"))), escape(str(j.get("user"))),
                  when(j.get("start_time")), status, human(s.get("wall_seconds"), "s"),
                  f"{cpu:.2f}" if s else "-", human(s.get("rss_peak_bytes"), "bytes"),
                  str(j.get("method")))
    console.print(t)
