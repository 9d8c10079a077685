"""Runs side by side as text, 80 columns (jobmon.report.compare's model)."""
from ..printable import clean
from .units import human, when

WIDTH = 80
LABEL = 23


def _cut(text, width):
    text = clean(text)
    return text if len(text) <= width else text[:width - 1] + "…"


def _change(r):
    if r["ratio"] is None:
        return ""
    return f"{r['ratio']:.2f}×" if r["ratio"] < 10 else f"{r['ratio']:.0f}×"


def _table(rows, names, values_of, width):
    """Label column, one column a run (`width` wide), a change column."""
    lines = [" " * LABEL + "".join(_cut(n, width - 1).rjust(width) for n in names)
             + "change".rjust(9)]
    for r in rows:
        cells = "".join(_cut(human(v, r["unit"]), width - 1).rjust(width)
                        for v in values_of(r))
        lines.append(_cut(r["label"], LABEL - 1).ljust(LABEL) + cells + _change(r).rjust(9))
    return lines


def _who(c):
    bits = [f"{c['label']}:", f"{c.get('user') or '?'} on {c.get('host') or '?'},",
            f"started {when(c.get('start_time'))},", c.get("end") or "no end"]
    if c.get("outcome"):
        bits.append(f"({c['outcome']})")
    return _cut(" ".join(str(b) for b in bits), WIDTH)


def compare_text(model):
    """`jobmon compare`: both runs' figures, the second's change from the first."""
    base, subject = model["columns"][0], model["columns"][-1]
    out = _wrap(model["headline"])
    out.append("")
    out += [_who(c) for c in model["columns"]]
    same = model.get("same_script")
    out.append("same " + ("job script" if same == "script_hash" else "command line")
               if same else "different commands or job scripts (or none recorded)")
    out.append("")
    width = (WIDTH - LABEL - 9) // 2
    out += _table(model["rows"], [base["label"], subject["label"]],
                  lambda r: (r["baseline"], r["subject"]), width)
    return "\n".join(out) + "\n"


def like_text(model):
    """`jobmon query JOB --like`: the run against the median of its earlier runs, then
    those runs one a line."""
    subject = model["columns"][0]
    out = _wrap(model["headline"]) + [""]
    how = "job script" if model["matched_by"] == "script_hash" else "command line"
    n = model["earlier"]
    out.append(_cut(f"{n} earlier run{'' if n == 1 else 's'} of the same {how} by "
                    f"{subject.get('user')}", WIDTH))
    out.append(f"({model['matched_by']} {model['hash']})")
    out.append(_who(subject))
    if not model["earlier"]:
        return "\n".join(out) + "\n"
    base = model["median"]
    width = (WIDTH - LABEL - 9) // 2
    base_name = f"median of {model['earlier']}" if model["earlier"] > 1 else base["label"]
    out.append("")
    out += _table(model["rows"], [subject["label"], base_name],
                  lambda r: (r["subject"], r["baseline"]), width)
    out.append("")
    out.append(f"{'earlier run':<20}{'started':>20}{'wall':>10}{'CPU':>10}"
               f"{'peak':>10}  {'end':<8}")
    for c in model["columns"][1:]:
        f = c["figures"]
        out.append(_cut(f"{_cut(c['label'], 19):<20}{when(c['start_time']):>20}"
                        f"{human(f['wall_seconds'], 's'):>10}"
                        f"{human(f['cpu_seconds'], 's'):>10}"
                        f"{human(f['mem_peak_bytes'], 'bytes'):>10}  {c['end'] or ''}",
                        WIDTH))
    return "\n".join(out) + "\n"


def _wrap(text):
    import textwrap
    return textwrap.wrap(clean(text), WIDTH, subsequent_indent="  ") or [""]
