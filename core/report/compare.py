"""Runs side by side (`jobmon compare JOB1 JOB2`, `jobmon query JOB --like`): the same
figures of each, the change of one against a baseline (another run, or the median of its
earlier runs), and one line on what changed most and why. A model, no rendering: it picks
from the reports jobmon.report.model builds. Read side, standard library only."""
import math
import statistics

from ..stores import fingerprint
from ..render.units import human, short_status

# (key, label, unit): the rows, in the order they are shown
ROWS = (
    ("wall_seconds", "wall", "s"),
    ("cpu_seconds", "CPU user+system", "s"),
    ("cores_used", "cores used", "cores"),
    ("cores_given", "cores given", "cores"),
    ("cpu_efficiency_percent", "CPU efficiency", "%"),
    ("mem_peak_bytes", "memory peak", "bytes"),
    ("mem_charged_peak_bytes", "charged peak (+cache)", "bytes"),
    ("swap_peak_bytes", "swap peak", "bytes"),
    ("gpu_mem_peak_bytes", "GPU memory peak", "bytes"),
    ("read_bytes", "storage read", "bytes"),
    ("write_bytes", "storage written", "bytes"),
    ("rchar_bytes", "read() total", "bytes"),
    ("wchar_bytes", "write() total", "bytes"),
    ("cpu_pressure_percent", "waited for CPU (PSI)", "%"),
    ("cpu_wait_percent", "waited for CPU (queue)", "%"),
    ("mem_pressure_percent", "stalled on memory", "%"),
    ("io_pressure_percent", "stalled on storage", "%"),
    ("cpu_throttled_percent", "CPU quota throttled", "%"),
    ("mem_major_faults", "major page faults", "count"),
    ("procs_max", "processes (peak)", "count"),
    ("completeness_percent", "data covers", "%"),
)
LABELS = {k: label for k, label, _u in ROWS}
UNITS = {k: u for k, _l, u in ROWS}
# the figures "what changed most" weighs, with the least change that counts (a 0.1 s job
# twice as long as another is noise)
# (cores used is CPU over wall: its change is theirs)
SIZES = {"wall_seconds": 1.0, "cpu_seconds": 0.5,
         "mem_peak_bytes": 8 << 20, "swap_peak_bytes": 8 << 20, "gpu_mem_peak_bytes": 64 << 20,
         "read_bytes": 8 << 20, "write_bytes": 8 << 20, "rchar_bytes": 8 << 20,
         "wchar_bytes": 8 << 20}
# what a run waited on, as a share: how each is said, and the least rise (points) that counts
WAITS = (("cpu_pressure_percent", "it waited for a CPU {v} of the time"),
         ("cpu_wait_percent", "its threads waited for a CPU {v} of the time they were ready"),
         ("io_pressure_percent", "it stalled on storage {v} of the time"),
         ("mem_pressure_percent", "it stalled on memory {v} of the time"),
         ("cpu_throttled_percent", "its CPU quota held it back in {v} of its periods"))
WAIT_POINTS = 5.0
SAME = 0.10          # changes within 10 % are "about the same"
# a run whose data covers less than this share of it (jobmon.summary.completeness): the
# headline says so, as [report] min_completeness_percent's default withholds advice
THIN_DATA = 80.0
# how the headline names a figure's change
NOUNS = {"wall_seconds": "the wall", "cpu_seconds": "the CPU time", "cores_used":
         "the cores used", "mem_peak_bytes": "the memory peak", "swap_peak_bytes":
         "the swap peak", "gpu_mem_peak_bytes": "the GPU memory peak", "read_bytes":
         "the storage read", "write_bytes": "the storage written", "rchar_bytes":
         "the read() total", "wchar_bytes": "the write() total"}


def figures(rep):
    """The compared figures of one report (jobmon.report.model.build), None where absent."""
    s, v = rep.get("summary") or {}, rep.get("verdict") or {}
    cpu = [s.get(k) for k in ("cpu_user_seconds", "cpu_system_seconds")]
    out = {k: s.get(k) for k, _l, _u in ROWS}
    out.update(wall_seconds=v.get("wall_seconds") or s.get("wall_seconds"),
               cpu_seconds=sum(c for c in cpu if c is not None)
               if any(c is not None for c in cpu) else None,
               cores_used=(v.get("cores") or {}).get("used"),
               cores_given=(v.get("cores") or {}).get("given"),
               cpu_efficiency_percent=(v.get("cores") or {}).get("percent"),
               mem_peak_bytes=(v.get("memory") or {}).get("peak"),
               mem_charged_peak_bytes=s.get("mem_peak_bytes"))
    return {k: (x if isinstance(x, (int, float)) and not isinstance(x, bool)
                and math.isfinite(x) else None) for k, x in out.items()}


def column(rep, label=None):
    """One run's column: who and what it is, how it ended, its figures."""
    h, s = rep["header"], rep.get("summary") or {}
    outcome = (rep.get("verdict") or {}).get("outcome") or {}
    record = {"tags": dict(h.get("tags") or {}, **(h.get("ran") or {})), "summary": s}
    return {"label": label or str(h["job"]), "job": h["job"], "run": h.get("run"),
            "user": h.get("user"), "host": h.get("host"), "start_time": h.get("start_time"),
            "end": short_status(s), "outcome": outcome.get("state"),
            "outcome_text": outcome.get("text"), **fingerprint.of(record),
            "figures": figures(rep)}


def median_column(columns, label):
    """The baseline of several runs: each figure's median over the runs that have it."""
    figs = {}
    for k, _l, _u in ROWS:
        have = [c["figures"][k] for c in columns if c["figures"].get(k) is not None]
        figs[k] = statistics.median(have) if have else None
    outcomes = [c["outcome"] for c in columns]
    common = max(set(outcomes), key=outcomes.count) if outcomes else None
    return {"label": label, "job": None, "run": None, "user": None, "host": None,
            "start_time": None, "end": None, "outcome": common, "outcome_text": None,
            "script_hash": None, "command_hash": None, "figures": figs,
            "of": [c["label"] for c in columns]}


def ratio(subject, base):
    """subject / base, None where either is missing or base is 0."""
    if subject is None or base is None or base == 0:
        return None
    return subject / base


def rows(subject, base):
    """[{"key", "label", "unit", "subject", "baseline", "ratio"}] for every row either has."""
    out = []
    for k, label, unit in ROWS:
        a, b = subject["figures"].get(k), base["figures"].get(k)
        if a is None and b is None:
            continue
        out.append({"key": k, "label": label, "unit": unit, "subject": a, "baseline": b,
                    "ratio": ratio(a, b)})
    return out


def times(r):
    """A ratio as the headline says it: 2.3×, 12×, 0.43×."""
    return f"{r:.2g}×" if r < 10 else f"{r:.0f}×"


def changes(subject, base):
    """The weighed figures that changed by more than SAME, largest first:
    [{"key", "ratio", "subject", "baseline"}]. A change is weighed by its ratio with each
    side at least the figure's SIZES (0 to 20 MiB written weighs as 8 to 20 MiB), so a
    tiny baseline makes no huge change; ratio is None where the baseline is 0."""
    out = []
    for k, least in SIZES.items():
        a, b = subject["figures"].get(k), base["figures"].get(k)
        if a is None or b is None or abs(a - b) < least:
            continue
        score = abs(math.log(max(a, least) / max(b, least)))
        if score > math.log(1 + SAME):
            out.append({"key": k, "ratio": ratio(a, b), "subject": a, "baseline": b,
                        "score": score})
    out.sort(key=lambda c: -c["score"])
    for c in out:
        del c["score"]
    return out


def why(subject, base, name):
    """What the subject waited on more than the baseline did (the largest rise in points,
    at least WAIT_POINTS), as words; None where nothing did."""
    best = None
    for k, text in WAITS:
        a, b = subject["figures"].get(k), base["figures"].get(k)
        if a is None:
            continue
        rise = a - (b or 0)
        if rise >= WAIT_POINTS and (best is None or rise > best[0]):
            was = f"{b:.0f} %" if b is not None else "not measured"
            best = (rise, text.format(v=f"{a:.0f} %") + f" ({name}: {was})")
    return best[1] if best else None


def _said(c, name):
    if c["ratio"] is None:
        return f"{LABELS[c['key']]} {human(c['subject'], UNITS[c['key']])} ({name}: none)"
    return f"{times(c['ratio'])} {NOUNS[c['key']]} of {name}"


def headline(subject, base, name):
    """One line on what changed most from `base` (called `name`: "JOB1", "its last 5
    runs") to `subject`: a different outcome first, then the largest change (and the wall,
    where that is not it), then why, where a wait the subject had more of says it."""
    said = []
    if subject["outcome"] and base["outcome"] and subject["outcome"] != base["outcome"]:
        said.append(f"{subject['outcome']} ({subject['end']}) where {name} was "
                    f"{base['outcome']}" + (f" ({base['end']})" if base.get("end") else ""))
    found = changes(subject, base)
    if found:
        said.append(_said(found[0], name))
        wall = [c for c in found[1:] if c["key"] == "wall_seconds" and c["ratio"]]
        if wall:
            said.append(f"{times(wall[0]['ratio'])} the wall")
    # a wait explains a longer run, or the same work on fewer cores: not a shorter one
    longer, busy, work = (ratio(subject["figures"].get(k), base["figures"].get(k))
                          for k in ("wall_seconds", "cores_used", "cpu_seconds"))
    reason = why(subject, base, name) if (longer or 0) > 1 + SAME or \
        ((busy or 1) < 1 - SAME and abs((work or 0) - 1) <= SAME) else None
    if not said:
        said.append(f"about the same as {name}: no figure changed by more than "
                    f"{SAME * 100:.0f} %")
    text = ", ".join(said) + (f": {reason}" if reason else "")
    thin = [f"{c['label']}'s data covers {c['figures']['completeness_percent']:.0f} % of "
            "its run" for c in (base, subject) if c["job"] is not None and (c["figures"].get(
                "completeness_percent") or 100) < THIN_DATA]    # a median is no run
    return text + (f" ({'; '.join(thin)})" if thin else "")


def compare(reports, runs=(None, None)):
    """`jobmon compare JOB1 JOB2`: the second run against the first. runs: the runs asked
    for (--run1, --run2), which name the columns where one job's runs are compared."""
    cols = [column(r) for r in reports]
    if len({c["label"] for c in cols}) < len(cols):     # one job's two runs
        cols = [dict(c, label=f"{c['label']} run {asked or c['run'] or 'latest'}")
                for c, asked in zip(cols, runs)]
    base, subject = cols[0], cols[-1]
    return {"kind": "compare", "columns": cols, "subject": subject["label"],
            "baseline": base["label"], "rows": rows(subject, base),
            "changes": changes(subject, base),
            "headline": headline(subject, base, base["label"]),
            "same_script": _same(cols)}


def like(report, earlier, how):
    """`jobmon query JOB --like`: the run against the median of its earlier runs
    (`earlier`: their reports, newest first), matched by `how` (script_hash or
    command_hash)."""
    subject = column(report)
    others = [column(r) for r in earlier]
    n = len(others)
    name = "its last run" if n == 1 else f"its last {n} runs"
    out = {"kind": "like", "columns": [subject] + others, "subject": subject["label"],
           "matched_by": how, "hash": subject.get(how), "earlier": n}
    if not others:
        return dict(out, baseline=None, rows=rows(subject, median_column([], "median")),
                    changes=[], headline=f"No earlier run of the same "
                    f"{'job script' if how == 'script_hash' else 'command'} by "
                    f"{subject['user']} in the store")
    base = median_column(others, "median" if n > 1 else others[0]["label"])
    return dict(out, baseline=base["label"], median=base, rows=rows(subject, base),
                changes=changes(subject, base), headline=headline(subject, base, name))


def _same(cols):
    """Which hash the runs share, if any: "script_hash", "command_hash" or None."""
    for k in fingerprint.KEYS:
        if all(c.get(k) for c in cols) and len({c[k] for c in cols}) == 1:
            return k
    return None
