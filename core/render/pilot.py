"""A pilot's partition (the model of jobmon.report.pilot_records) as text, <= 80 columns,
and as JSON."""
import json
from textwrap import wrap

from ..printable import clean, fixed
from .units import human, when

LABELS = {"validation": "validation", "decision_problem": "decision problem",
          "goodput": "goodput", "misconfiguration": "misconfiguration badput",
          "preemption": "preemption badput", "overhead": "pilot overhead"}
VALIDATION_NOTE = {"given": "given by hand", "mark": "from the pilot's mark",
                   "never": "the pilot never validated",
                   "unknown": "not recorded: counted as none"}


def to_json(model):
    return json.dumps(model, indent=1, sort_keys=True)


def _when(ts):
    return "-" if ts is None else when(ts)


def _pct(part, whole):
    return fixed(100.0 * part / whole, "5.1f") + " %" if whole else "    - "


def _unit(model):
    """core-hours, or core-seconds for a pilot too short to show in hours."""
    return (1.0, "hours") if model["provisioned"]["core_hours"] >= 0.1 else (3600.0, "seconds")


def _h(x, scale):
    return f"{fixed(x * scale, '.4f'):>10}"


def to_text(model):
    r, prov = model["resources"], model["provisioned"]
    gpus = bool(r.get("gpus")) or prov["gpu_hours"] > 0
    out = [f"pilot {clean(model['pilot'])} on {clean(model.get('host') or '-')} as "
           f"{clean(model.get('user') or '-')}",
           f"ran {_when(model['start'])} .. {_when(model['end'])}, "
           f"{human(model['wall_seconds'], 's')}",
           f"held {r['cores']:g} cores, {human(r.get('memory_bytes'), 'bytes')}"
           + (f", {r['gpus']:g} GPUs" if gpus else ""),
           f"validation end: {_when(model.get('validated_at'))} "
           f"({VALIDATION_NOTE.get(model['validation_source'], '')})", ""]
    scale, unit = _unit(model)
    head = f"{'category':<26}{'core-' + unit:>12}{'share':>9}"
    out.append(head + (f"{'GPU-' + unit:>12}" if gpus else ""))
    rows = list(model["categories"].items()) + [("provisioned", prov)]
    for name, h in rows:
        line = f"{LABELS.get(name, name):<26}  {_h(h['core_hours'], scale)}" \
               f"  {_pct(h['core_hours'], prov['core_hours'])}"
        out.append(line + (f"  {_h(h['gpu_hours'], scale)}" if gpus else ""))
    ub = model["user_badput"]["core_hours"]
    if ub:
        out.append("  of goodput, runs that failed by the user's doing: "
                   f"{fixed(ub * scale, '.4f')} core-{unit}")
    if not model.get("balanced", True):
        out.append(f"  unaccounted: {fixed(model['unaccounted']['core_hours'] * scale, '.6f')} "
                   f"core-{unit}")
    out += ["", f"payloads ({len(model['payloads'])}): what each counts as for the pilot, "
            "and how its run ended"]
    for p in model["payloads"]:
        cores = p["resources"]["cores"]
        out.append(f"  {_job(p)}  {cores:g} core{'' if cores == 1 else 's'}  "
                   f"{fixed(p['core_hours'] * scale, '.4f')} core-{unit[0]}  "
                   f"{LABELS.get(p.get('category'), 'outside the pilot')}")
        out += wrap("its run: " + run_text(p), 80, initial_indent="    ",
                    subsequent_indent="      ")
    claims = model.get("claims") or []
    if claims:
        out += ["", f"claims by other users, not counted ({len(claims)}):"]
        for c in claims:
            ran = human(c["end"] - c["start"], "s") if c["end"] and c["start"] else "running"
            out.append(f"  {_job(c)}  {c['resources']['cores']:g} cores  {ran}")
            out.append(clean(f"    {c['why']}")[:80])
    return "\n".join(out) + "\n"


def _job(p):
    """A payload's job, run and user."""
    return clean(str(p["job"]) + (f" run {p['run']}" if p.get("run") else "")
                 + f" by {p.get('user') or '-'}")


def run_text(payload):
    """How a payload's run ended, in words that never contradict its category: a run that
    failed by its user's doing is the pilot's goodput, and says so."""
    text = clean(payload.get("reason") or payload.get("outcome") or "not recorded")
    if payload.get("outcome") == "badput" and payload.get("category") == "goodput":
        text += ": its user's doing, so goodput for the pilot"
    return text
