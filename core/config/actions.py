"""The [actions] section of the site configuration: what `jobmon act` may do to a job that
holds an allocation it does not use (docs/actions.md). Off unless the site turns it on;
read by `jobmon act` alone, never inside jobs. Kept apart from the schema (schema.py),
which merges it in, with each scheduler's own keys (what it does to such a job)."""

SCHEMA = {
    "actions": {
        "mode": (str, "off"),                 # off, dry-run (decide, log, record; touch
        #                                       nothing, tell nobody) or on
        "resources": (str, "gpus"),           # the idle allocations acted on: gpus, cores
        #                                       or both ("cores,gpus")
        "idle_seconds": (float, 3600.0),      # idle this long at a stretch: the user is warned
        "grace_seconds": (float, 1800.0),     # still idle this long after the warning: acted on
        "max_per_hour": (int, 10),            # holds and cancels in any hour, of all jobs;
        #                                       0: warnings only
        "allow_opt_out": (bool, True),        # a job may opt out (each scheduler's way:
        #                                       docs/actions.md)
        "min_completeness_percent": (float, 90.0),  # a running job whose samples cover
        #                                       less of its run so far: never warned or
        #                                       acted on
        "warn": (str, "mail"),                # how the user is warned: mail ([report] mailer),
        #                                       file (in warn_dir) or none (recorded only)
        "warn_dir": (str, ""),                # file warnings: a directory the users read
    },
}
CHOICES = {("actions", "mode"): ("off", "dry-run", "on"),
           ("actions", "warn"): ("mail", "file", "none")}
POSITIVE = {("actions", "idle_seconds")}
NOT_NEGATIVE = {("actions", "grace_seconds"), ("actions", "max_per_hour")}
ABSOLUTE_PATHS = (("actions", "warn_dir"),)
RESOURCES = ("cores", "gpus")


def resources(section):
    """The idle allocations the policy acts on, as a tuple of RESOURCES; ValueError for a
    name that is none of them."""
    names = tuple(n for n in section["resources"].replace(",", " ").split() if n)
    bad = [n for n in names if n not in RESOURCES]
    if bad or not names:
        raise ValueError(f"actions.resources must name cores, gpus or both, not "
                         f"{section['resources']!r}")
    return names
