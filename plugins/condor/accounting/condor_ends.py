"""How one run of an HTCondor job ended, from the job's ad as a source holds it (an epoch
ad written as the run ended, or the job's ad in history or the queue): condor_history.py's
records get their status and reasons here. ClassAd values are read here too.
"""

HOLD_CODES_BELOW = 1000   # VacateReasonCode below it: the hold that ended the run (its code)
JOB_REMOVED = 1023        # VacateReasonCode of condor_rm (CONDOR_HOLD_CODE::JobRemoved)


def run_end(r, ad, source):
    """The run's end in r.status and its reason fields. An epoch ad is written as its run
    ends, and its JobStatus is 2 (running) whatever ended it: the end is in its other
    fields -- HoldReasonCode (held by a policy at the run's exit), VacateReasonCode (a hold
    code below 1000 for condor_hold and other holds, 1023 for condor_rm, another code for an
    eviction: condor_vacate_job's 1022, the startd's, a failed start), else the exit fields
    (completed). The job's ad (history, schedd, queue) keeps the vacate fields of an earlier
    run: they are this run's only when LastVacateTime is not before its start."""
    if r.vacate_code is not None and not _this_run(ad, "LastVacateTime"):
        r.vacate_code = r.vacate_reason = None
    if source != "epoch":
        return
    if _int(ad, "HoldReasonCode") is not None:
        r.status = "held"
    elif r.vacate_code is not None:
        vacated(r, _int(ad, "VacateReasonSubCode"))
    elif r.exit_code is not None or r.signal is not None:
        r.status = "completed"
    else:
        r.status = None   # nothing says how it ended
    if r.status != "held":   # an earlier run's hold (LastHoldReason*)
        r.hold_code = r.hold_subcode = r.hold_reason = None


def vacated(r, subcode):
    """Status and reasons of a run its vacate code ended."""
    code = r.vacate_code
    if code < HOLD_CODES_BELOW:
        r.status = "held"
        r.hold_code, r.hold_subcode, r.hold_reason = code, subcode, r.vacate_reason
    elif code == JOB_REMOVED:
        r.status = "removed"
        r.remove_reason = r.remove_reason or r.vacate_reason
    else:
        r.status = "evicted"


# CONDOR_HOLD_CODE names NumVacatesByReason counts by -> codes (condor_holdcodes.h)
VACATE_NAMES = {"UserRequest": 1, "JobPolicy": 3, "SystemPolicy": 26, "JobPolicyVacate": 1000,
                "SystemPolicyVacate": 1001, "ShadowException": 1002, "JobNotStarted": 1003,
                "UserVacateJob": 1004, "StarterError": 1007, "ReconnectFailed": 1008,
                "StartdVacateCommand": 1010, "StartdPreemptExpression": 1011,
                "StartdShutdown": 1013, "StartdDraining": 1014,
                "StartdPreemptingClaimRank": 1018, "StartdPreemptingClaimUserPrio": 1019,
                "ScheddVacate": 1022, "JobRemoved": 1023}


def only_vacate(ad):
    """The code of the job's one vacate, where NumVacatesByReason counts exactly one."""
    try:
        counts = ad.eval("NumVacatesByReason") if "NumVacatesByReason" in ad else None
        items = [(k, int(counts[k])) for k in counts.keys()] if counts is not None else []
    except Exception:
        return None
    if len(items) != 1 or items[0][1] != 1:
        return None
    return VACATE_NAMES.get(items[0][0])


def _this_run(ad, attr):
    """Is the time `attr` of this run (not before JobCurrentStartDate)? True when either
    is missing."""
    t, start = _time(ad, attr), _time(ad, "JobCurrentStartDate")
    return t is None or start is None or t >= start


# --- ClassAd values -----------------------------------------------------------------------------

def _value(ad, attr):
    """attr's value evaluated in ad, None where it is absent or does not evaluate."""
    if attr not in ad:
        return None
    try:
        return ad.eval(attr)
    except Exception:
        return None


def _number(ad, attr):
    v = _value(ad, attr)
    if isinstance(v, bool):
        return int(v)
    return v if isinstance(v, (int, float)) else None


def _int(ad, attr):
    v = _number(ad, attr)
    return int(v) if v is not None else None


def _string(ad, attr):
    v = _value(ad, attr)
    return v if isinstance(v, str) else None


def _time(ad, attr):
    v = _number(ad, attr)
    return float(v) if v is not None and v > 0 else None
