"""Whose job a record is: the scheduler decides (docs/security.md, "Whose job it is").

A job id is anybody's to type, and a job's tags (its account, its pilot) are its own
user's word. So a record counts as its job's only when the scheduler's record of the job
names the record's user; a record of another user under that id is a *claim*, listed
apart and never counted in the job's, its account's, its group's or its pilot's figures.

Verdicts, stored in a record's summary as `ownership` by `jobmon reconcile` (and settled
the same way in memory by the readers):

  own          the scheduler's record of the job names the record's user (or the record's
               user is one of the site's pilot accounts, which run other users' jobs)
  claim        the scheduler's record of the job names another user
  unconfirmed  a scheduler job whose owner the scheduler has not said (yet): its
               accounting is late, unreachable, or not configured where it is read.
               Counted, provisionally, and marked so
  local        a run without a scheduler (`jobmon run`): its id and tags are its user's
               labels -- unless a scheduler job of that id is confirmed as another user's:
               then it is a claim on that job

Read side, standard library only."""
from .. import schedulers
from ..config.ownership import is_pilot_account
from ..stores.ids import instance_of

OWN, CLAIM, UNCONFIRMED, LOCAL = "own", "claim", "unconfirmed", "local"
VERDICTS = (OWN, CLAIM, UNCONFIRMED, LOCAL)
SCHEDULERS = schedulers.tags()


def stored(record):
    """The verdict a record carries: what `jobmon reconcile` (or a reader, in memory)
    settled; before that, unconfirmed for a scheduler job, local for a run without one.
    Only a settled record's mark is read: the shipper resets `reconciled` in every job's
    end point, so a job user cannot mark their own record."""
    s = record.get("summary") or {}
    if s.get("reconciled") and s.get("ownership") in VERDICTS:
        return s["ownership"]
    return UNCONFIRMED if record.get("scheduler") in SCHEDULERS else LOCAL


def runs_as(user, owners, accounts=()):
    """Is a record run by `user` one of `owners`' (the users the scheduler names)? Yes
    for one of them, and for a pilot account of the site (it runs others' jobs)."""
    return user in owners or is_pilot_account(user, accounts)


def judge(record, owners, accounts=()):
    """The verdict on a record of a job the scheduler says is `owners`' (a set of user
    names; empty: the scheduler has no word on it)."""
    local = record.get("scheduler") not in SCHEDULERS
    if not owners:
        return LOCAL if local else UNCONFIRMED
    if runs_as(record.get("user"), owners, accounts):
        return LOCAL if local else OWN
    return CLAIM


def owners_of(record):
    """The users a record confirmed as its job's says the job is of: its own user and the
    scheduler's (they differ for a pilot account's run)."""
    s = record.get("summary") or {}
    return {u for u in (record.get("user"), s.get("scheduler_user")) if u}


def known_owners(records, verdicts):
    """{(job id, its instance): the users the records confirmed as that job's name} (the
    instance its scheduler qualifies the id by, jobmon.stores.ids.instance_of: two
    instances' jobs of one id are two jobs; None where the scheduler has none)."""
    owners = {}
    for r in records:
        if verdicts[id(r)] == OWN:
            owners.setdefault((r.get("job"), instance_of(r)), set()).update(owners_of(r))
    return owners


def owners_for(owners, record):
    """The confirmed owners (known_owners) of a record's job; a record without an instance
    (a `jobmon run`) is under the id of that job on any instance."""
    job, instance = record.get("job"), instance_of(record)
    if instance is not None:
        return owners.get((job, instance), set())
    return set().union(*(o for (j, _s), o in owners.items() if j == job))


def settle(records, accounts=()):
    """{id(record): verdict} of records read together: each one's stored verdict, and a
    claim where a record of the same job was confirmed as another user's -- the job's
    owner is known from it: a run not settled yet, or a `jobmon run` under the id."""
    verdicts = {id(r): stored(r) for r in records}
    owners = known_owners(records, verdicts)
    for r in records:
        known = owners_for(owners, r)
        if known and verdicts[id(r)] in (UNCONFIRMED, LOCAL) \
                and not runs_as(r.get("user"), known, accounts):
            verdicts[id(r)] = CLAIM
    return verdicts


def why(record, owners=()):
    """Why a record is a claim, for people: whose job the scheduler says it is (its
    stored word, else `owners`: those confirmed by the job's other records)."""
    s = record.get("summary") or {}
    owner = (s.get("scheduler_user") if s.get("ownership") == CLAIM else None) or \
        ", ".join(sorted(owners)) or "another user"
    return f"run by {record.get('user')}; the scheduler says job {record.get('job')} " \
           f"is {owner}'s"


def claim_row(record, owners=()):
    """A claim as the reports list it."""
    s = record.get("summary") or {}
    return {"job": record.get("job"), "run": record.get("run"), "user": record.get("user"),
            "host": record.get("host"), "start_time": record.get("start_time"),
            "end_time": s.get("end_time"), "why": why(record, owners)}
