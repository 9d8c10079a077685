"""The end-of-job report card: a few lines of summary and advice, where the user looks.

card_lines(summary, advice) is pure: the end-of-job summary (docs/metrics.md, with the
efficiency fields where the sampler wrote them; any of them may be absent) and advice
lines in, at most MAX_LINES lines of at most MAX_COLUMNS columns out; advice_for() asks
jobmon.summary.advice. Standard library only: the schedulers' entry points (a wrapper, a
sampler) import it after the job has ended (jobmon.sinks.card delivers it).
"""
from ..summary.efficiency import BASIS_TEXT, signal_name, sizing_peak
from ..printable import clean, co2e, energy, fixed, size

MAX_LINES, MAX_COLUMNS = 8, 80
PREFIX = "jobmon: "


def _size(n):
    return None if n is None else size(n)


def _duration(seconds):
    if not abs(seconds or 0) < 1e9:       # a forged figure (or NaN): not as h:mm:ss
        return fixed(seconds) + " s"
    s = int(round(seconds or 0))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}" if m else f"{s} s"


def _fit(line):
    """A card line: cleaned (the job's id and host are the job's), at most MAX_COLUMNS."""
    line = clean(line)
    return line if len(line) <= MAX_COLUMNS else line[:MAX_COLUMNS - 3] + "..."


def _num(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if f == f else None   # NaN: unknown


def ending(s):
    """How the job ended, in a few words."""
    if s.get("signal"):
        return f"killed by {signal_name(s['signal'])}"
    if s.get("exit_code") is not None:
        return f"exit code {s['exit_code']}"
    return "ended (exit status unknown)"


def _cores_used(s):
    avg = _num(s.get("cpu_cores_avg"))
    if avg is not None:
        return avg
    wall = _num(s.get("wall_seconds")) or 0
    cpu = (_num(s.get("cpu_user_seconds")) or 0) + (_num(s.get("cpu_system_seconds")) or 0)
    return cpu / wall if wall > 0 else None


def cpu_line(s):
    used, given = _cores_used(s), _num(s.get("cores_allocated"))
    if used is None:
        return None
    if not given:
        return f"CPU: {fixed(used)} cores busy on average (cores given: not known)"
    eff = _num(s.get("cpu_efficiency_percent"))
    eff = 100.0 * used / given if eff is None else eff
    return (f"CPU: {fixed(used)} of {given:g} cores busy on average "
            f"({fixed(eff, '.0f')} % efficiency)")


def memory_line(s):
    peak, basis = sizing_peak(s)
    peak = _num(peak)
    if peak is None:
        return None
    given, asked = _num(s.get("mem_allocated_bytes")), _num(s.get("mem_requested_bytes"))
    name = BASIS_TEXT[basis]
    line = f"Memory: {name} {_size(peak)}"
    if given:
        eff = _num(s.get("mem_efficiency_percent"))
        eff = 100.0 * peak / given if eff is None else eff
        line += f" of {_size(given)} given ({fixed(eff, '.0f')} %)"
        if asked and abs(asked - given) >= 1 << 20:
            line += f", {_size(asked)} asked"
    elif asked:
        line += f" of {_size(asked)} asked"
    return line


def gpu_line(s):
    n = _num(s.get("gpu_count"))
    if not n:
        return None
    util = _num(s.get("gpu_util_avg_percent"))
    busy = f", {fixed(util, '.0f')} % busy on average" if util is not None else ""
    peak = _size(_num(s.get("gpu_mem_peak_bytes")))
    return f"GPU: {n:g} GPU{'s' if n != 1 else ''}{busy}" + (f", memory peak {peak}" if peak else "")


def oom_line(s):
    n = _num(s.get("oom_kills"))
    if not n:
        return None
    who = f"{s.get('oom_command') or '?'} (pid {s['oom_pid']})" if s.get("oom_pid") \
        else f"{n:g} process{'es' if n > 1 else ''}"
    charge, limit = _num(s.get("oom_charge_bytes")), _num(s.get("oom_limit_bytes"))
    at = f": {_size(charge)} charged of {_size(limit)}" if charge and limit else ""
    return f"OOM: {who} killed for memory{at}"


def io_line(s):
    r, w = _num(s.get("read_bytes")), _num(s.get("write_bytes"))
    if r is None and w is None:
        return None
    line = f"I/O: read {_size(r or 0)}, wrote {_size(w or 0)} (local disks)"
    if s.get("network_fs"):   # its I/O there is in no storage counter
        line += f"; not counted: {s['network_fs']}"
    return line


def energy_line(s):
    """The job's energy: its GPUs' counter and its apportioned share of the node's CPU and
    DRAM energy (the node reader; docs/energy.md), and its CO2e."""
    joules = _num(s.get("energy_joules"))
    if joules is None:
        return None
    parts = (s.get("energy_parts") or "").split(";")[0].split(",")
    how = (["GPU counter"] if "gpu" in parts else []) + \
        (["CPU+DRAM apportioned"] if "cpu" in parts or "dram" in parts else [])
    grams = _num(s.get("co2e_grams"))
    error, grams_error = _num(s.get("energy_error_joules")), _num(s.get("co2e_error_grams"))
    return "; ".join([f"Energy: {energy(joules)}"
                      + (f" ± {energy(error)}" if error is not None else "")]
                     + ([", ".join(how)] if how else [])
                     + ([co2e(grams) + (f" ± {co2e(grams_error)}" if grams_error is not None
                                        else "")] if grams is not None else []))


def network_line(s):
    rx, tx = _num(s.get("net_rx_bytes")), _num(s.get("net_tx_bytes"))
    if rx is None and tx is None:
        return None
    return f"Network: sent {_size(tx or 0)}, received {_size(rx or 0)}"


def card_lines(summary, advice=()):
    """The card: a header (job, ending, wall time), CPU, memory, GPU where known, advice
    lines (as many as fit), I/O, energy and network where room is left, and where to read
    more. advice: [(rule, text)] or
    [{"rule", "text"}]."""
    s = summary or {}
    job = s.get("job") or "?"
    how = f"{ending(s)} after {_duration(s.get('wall_seconds'))}"
    if s.get("host"):
        how += f" on {s['host']}"
    head = [f"{PREFIX}job {job} {how}"]
    if len(head[0]) > MAX_COLUMNS:          # a long id keeps a line of its own
        head = [f"{PREFIX}job {job}", f"  {how}"]
    facts = [x for x in (oom_line(s), cpu_line(s), memory_line(s), gpu_line(s)) if x]
    footer = [f"  details: jobmon query {job}"]
    if len(footer[0]) > MAX_COLUMNS:
        footer = []
    texts = [a["text"] if isinstance(a, dict) else a[1] for a in advice or ()]
    room = MAX_LINES - len(head) - len(footer) - len(facts)
    tips = [f"advice: {t}" for t in texts[:max(room, 0)]]
    for extra in (io_line(s), energy_line(s), network_line(s)):   # where advice left room
        if extra and len(head) + len(facts) + len(tips) + len(footer) < MAX_LINES:
            facts.append(extra)
    lines = head + ["  " + x for x in facts] + ["  " + t for t in tips] + footer
    return [_fit(x) for x in lines[:MAX_LINES]]


def card_text(summary, advice=()):
    return "\n".join(card_lines(summary, advice)) + "\n"


def advice_for(summary, cfg):
    """[(rule, text)] from jobmon.summary.advice, or [] where it fails: the card never depends on
    it."""
    try:
        from ..summary import advice
        return [(a["rule"], a["text"]) for a in advice.advise(summary, cfg)]
    except Exception:
        return []
