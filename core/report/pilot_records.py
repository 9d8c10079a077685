"""A pilot's account from a store: its record, its payloads' records, the partition.

The pilot's record is the one stored under its job id (`jobmon run --job-id ID` around
glidein_startup.sh, or its scheduler's wrapper around the pilot's own batch job); its
payloads are the records whose tags["pilot"] names that id (the payloads' plugin writes it
from the glidein's machine ad). What they held is the allocation `jobmon query` reads:
their summaries' figures, else their tags -- the job ad's CpusProvisioned,
MemoryProvisioned, GPUsProvisioned, else Request* (the wrapper copies them from the job
ad), an allocation's alloc_cpus, alloc_mem_bytes, alloc_gpus, a `jobmon run`'s
request_cpus, request_memory, request_gpus.

The model (a dict) is what `jobmon pilot --json` prints; render/pilot.py lays it out.
"""
from . import job_efficiency
from .canonical import NO_CAUSE, Classification, Resources, classify, run_end
from ..config.ownership import is_pilot_account
from .ownership import CLAIM, settle, why
from .pilot import CATEGORIES, Payload, Pilot, account
from .runs import is_step

PILOT_TAG = "pilot"
# how many of the newest records a store without a tag query is scanned for payloads
SCAN_LIMIT = 100000


class PilotNotFound(Exception):
    pass


def resources(tags, summary=None):
    """What a pilot or a payload slot held -- the allocation `jobmon query` reads: the
    figures its summary holds (cores_allocated, mem_allocated_bytes, gpus_allocated), else
    from its tags (the job ad's *Provisioned and Request*, an allocation's alloc_cpus,
    alloc_mem_bytes, alloc_gpus, `jobmon run --tag request_cpus=N request_memory=SIZE`);
    None when not even its cores are known."""
    a = job_efficiency.allocation(summary or {}, tags or {})
    if a["cores_allocated"] is None:
        return None
    return Resources(cores=a["cores_allocated"], memory_bytes=a["mem_allocated_bytes"],
                     gpus=a["gpus_allocated"] or 0.0)


def _end(rec):
    s = rec.get("summary") or {}
    return s.get("end_time")


def payload_records(store, pilot_id, start, end):
    """Records of the payloads of `pilot_id` that overlap [start, end], oldest first (a
    step of a job is part of its job, no payload of its own)."""
    tagged = getattr(store, "tagged", None)
    recs = tagged(PILOT_TAG, pilot_id) if tagged else store.jobs(SCAN_LIMIT)
    out = [r for r in recs if (r.get("tags") or {}).get(PILOT_TAG) == pilot_id
           and r.get("job") != pilot_id and not is_step(r) and (r.get("start_time") or 0) <= end
           and (_end(r) is None or _end(r) >= start)]
    return sorted(out, key=lambda r: (r.get("start_time") or 0, str(r.get("job"))))


def validated_at(summary, given=None):
    """(time, where it came from): given by hand, the pilot's `validated` mark, or its
    start when nothing says (validation counted as none)."""
    if given is not None:
        return float(given), "given"
    marks = (summary or {}).get("marks")
    if isinstance(marks, dict) and "validated" in marks:
        v = marks["validated"]
        return (None, "never") if v is None else (float(v), "mark")
    return None, "unknown"


def _res_dict(r):
    return {"cores": r.cores, "memory_bytes": r.memory_bytes, "gpus": r.gpus}


def _hours(h):
    return {"core_hours": h.core_hours, "gpu_hours": h.gpu_hours}


def ending_of(summary, run=None):
    """How a payload's run ended: the scheduler's end where it was reconciled (`jobmon
    reconcile` stored it), else from its exit status."""
    s = summary or {}
    if s.get("reconciled") and s.get("scheduler_state") not in (None, "", "none") \
            and s.get("outcome"):
        return Classification(s["outcome"], s.get("outcome_cause") or NO_CAUSE,
                              s.get("outcome_reason") or "")
    return classify(run_end(s, run=run))


def own_payloads(pilot_rec, payload_recs, accounts=()):
    """(the payloads that count in the pilot, [(claim, why)]): a payload counts when it
    ran as the pilot's user (or both are pilot accounts of the site: `accounts`) and is
    no claim on its own job (jobmon.report.ownership). Anybody can name a pilot in a
    `pilot` tag; a claim keeps its user, to be shown apart."""
    pilot_user = pilot_rec.get("user")
    verdicts = settle(payload_recs, accounts)
    mine, claims = [], []
    for r in payload_recs:
        user = r.get("user")
        if verdicts[id(r)] == CLAIM:
            claims.append((r, why(r)))
        elif user != pilot_user and not (is_pilot_account(pilot_user, accounts)
                                         and is_pilot_account(user, accounts)):
            claims.append((r, f"run by {user}, not by the pilot's user {pilot_user}"))
        else:
            mine.append(r)
    return mine, claims


def _claim_row(r, why):
    s = r.get("summary") or {}
    return {"job": r.get("job"), "run": r.get("run"), "user": r.get("user"),
            "host": r.get("host"), "start": r.get("start_time"), "end": s.get("end_time"),
            "resources": _res_dict(resources(r.get("tags"), s) or Resources(cores=0.0)),
            "why": why}


def build(pilot_rec, payload_recs, given_validated=None, default_resources=None,
          accounts=()):
    """The model of one pilot: its partition and each payload's place in it; the records
    that name it but do not count in it (own_payloads) listed as "claims"."""
    s = pilot_rec.get("summary") or {}
    if not s or s.get("end_time") is None:
        raise PilotNotFound(f"pilot {pilot_rec.get('job')!r} has not ended yet: its "
                            "partition needs its end")
    have = resources(pilot_rec.get("tags"), s) or default_resources
    if have is None:
        raise PilotNotFound(f"pilot {pilot_rec.get('job')!r}: what it held is not recorded "
                            "(tags CpusProvisioned/MemoryProvisioned, RequestCpus, "
                            "request_cpus or alloc_cpus)")
    start = pilot_rec.get("start_time") or s.get("start_time")
    validated, source = validated_at(s, given_validated)
    pilot = Pilot(start=start, end=s["end_time"], resources=have,
                  validated_at=start if source == "unknown" else validated)
    payload_recs, claims = own_payloads(pilot_rec, payload_recs, accounts)
    payloads, rows = [], []
    for r in payload_recs:
        ps = r.get("summary") or {}
        ended = ending_of(ps, r.get("run"))
        res = resources(r.get("tags"), ps) or Resources(cores=0.0)
        name = str(r.get("job")) + (f" run {r['run']}" if r.get("run") else "")
        payloads.append(Payload(start=r.get("start_time"), end=ps.get("end_time"),
                                resources=res, ended=ended, name=name))
        rows.append({"job": r.get("job"), "run": r.get("run"), "user": r.get("user"),
                     "start": r.get("start_time"), "end": ps.get("end_time"),
                     "resources": _res_dict(res), "outcome": ended.outcome,
                     "cause": ended.cause, "reason": ended.reason,
                     "exit_code": ps.get("exit_code"), "signal": ps.get("signal")})
    acct = account(pilot, payloads)
    for row, hours, category in zip(rows, acct.payloads, acct.payload_categories):
        row["category"] = category
        row.update(_hours(hours))
    return {
        "pilot": pilot_rec.get("job"), "host": pilot_rec.get("host"),
        "user": pilot_rec.get("user"), "start": pilot.start, "end": pilot.end,
        "wall_seconds": pilot.end - pilot.start, "resources": _res_dict(have),
        "validated_at": acct.validated_at if source != "unknown" else None,
        "validation_source": source,
        "provisioned": _hours(acct.provisioned),
        "categories": {c: _hours(acct.categories[c]) for c in CATEGORIES},
        "user_badput": _hours(acct.user_badput),
        "unaccounted": _hours(acct.unaccounted()), "balanced": acct.balanced(1e-6),
        "payloads": rows, "claims": [_claim_row(r, why) for r, why in claims],
    }


def pilot_record(recs, pilot_id, accounts=(), user=None):
    """(the pilot's record, the other users with records under its id): the newest record
    (of `user`) that is no claim -- another user's run under the id of a pilot the
    scheduler knows is no pilot, whoever ran it last."""
    verdicts = settle(recs, accounts)
    mine = [r for r in recs if verdicts[id(r)] != CLAIM and user in (None, r.get("user"))]
    if not mine:
        users = sorted({str(r.get("user")) for r in recs})
        raise PilotNotFound(f"no pilot {pilot_id!r} in the store" + (
            f" of user {user}" if user else "") + (
            f" (records by {', '.join(users)})" if recs else ""))
    return mine[0], sorted({str(r.get("user")) for r in mine} - {str(mine[0].get("user"))})


def pilot_account(store, pilot_id, given_validated=None, settled=None, accounts=(),
                  user=None):
    """The model of the pilot stored under `pilot_id` (its latest record that is no claim;
    of `user`). settled(records): records with their reconciliation applied
    (jobmon.cli.reconcile); accounts: the site's pilot accounts (jobmon.config.ownership)."""
    from ..stores.ids import JobRef
    recs = store.records(JobRef(pilot_id, [pilot_id]))   # that id exactly, as it is stored
    rec, others = pilot_record(settled(recs) if settled and recs else recs, pilot_id,
                               accounts, user)
    s = rec.get("summary") or {}
    start, end = rec.get("start_time") or 0, s.get("end_time") or float("inf")
    payloads = payload_records(store, pilot_id, start, end)
    return dict(build(rec, settled(payloads) if settled else payloads, given_validated,
                      accounts=accounts), other_users=others)
