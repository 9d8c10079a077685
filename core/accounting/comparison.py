"""What the schedulers' comparisons of jobmon's figures with theirs share (each in its
plugin: the scheduler's compare())."""


def disagreement(source, field, unit, jobmon, theirs, reason):
    """One row where jobmon's figure and the scheduler's (keyed by `source`) differ."""
    numbers = all(isinstance(v, (int, float)) for v in (jobmon, theirs))
    return {"field": field, "unit": unit, "jobmon": jobmon, source: theirs,
            "difference": theirs - jobmon if numbers else None, "reason": reason}


def total(a, b):
    return None if a is None or b is None else a + b


def status_text(code, sig):
    return f"signal {sig}" if sig is not None else f"exit {code}"
