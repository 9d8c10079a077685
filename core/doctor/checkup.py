"""The whole check-up: the checks that hold for every node (site.py), then each scheduler's
that runs jobs here or was asked for (its object's doctor_checks)."""
from .check import FAIL, Check
from .schedulers_here import SCHEDULERS, scheduler_line, schedulers


def run(node, asked="auto"):
    """Every check, in order: [Check]."""
    from .. import schedulers as registry
    from . import site
    node.auto = asked == "auto"
    checks = site.checks(node)
    if node.auto:
        checks.append(scheduler_line(node))
    for name in schedulers(node, asked):
        if name not in SCHEDULERS:
            checks.append(Check(name, FAIL, f"no such scheduler (known: "
                                            f"{', '.join(SCHEDULERS)})", "--scheduler=auto"))
            continue
        try:
            checks += registry.get(name).doctor_checks(node)
        except Exception as e:     # a doctor's bug must not hide the other checks
            checks.append(Check(name, FAIL, f"checks failed: {type(e).__name__}: {e}",
                                "report this as a jobmon bug"))
    return checks
