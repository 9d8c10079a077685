"""The [ownership] section of the site configuration: which users run other users' jobs.

A job's record counts as the job's when the scheduler's record of the job names the
record's user, and a pilot's payload counts in the pilot when it ran as the pilot's user
(docs/security.md, "Whose job it is"). Some sites run jobs under accounts that are not
their owners': a glidein's pilot user and the accounts its payloads run as, a scheduler's
slot users (`nobody`, `slot1`) on a pool that does not run jobs as their owners. The site
lists them here; a record run by one of them is vouched for by the site. Standard library
only; the site file is read inside jobs, so nothing is imported here."""

# key -> (type, default)
OWNERSHIP = {
    # user names (shell patterns: osg*), separated by spaces or commas: the accounts that
    # run other users' jobs (pilots and their payloads, slot users)
    "pilot_accounts": (str, ""),
}


def pilot_accounts(cfg):
    """The site's pilot account patterns (a tuple), from a Config or None."""
    text = (cfg["ownership"]["pilot_accounts"] if cfg is not None else "") or ""
    return tuple(p for p in text.replace(",", " ").split() if p)


def is_pilot_account(user, patterns):
    from fnmatch import fnmatchcase   # the read side only
    return bool(user) and any(fnmatchcase(user, p) for p in patterns)


# the end-of-job figure the shipper and `jobmon reconcile` write, declared
# (jobmon.metrics.declared)
FIGURES = (
    {"name": "ownership", "unit": "text", "range": None, "method": "recorded",
     "meaning": "whose job the run is (docs/security.md): own, claim (the scheduler names another "
                "user: counted nowhere), unconfirmed (counted, marked), local (no scheduler); "
                "written by the shipper and `jobmon reconcile`, never by the job"},
)
