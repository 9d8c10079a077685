"""`jobmon act`'s warnings and actions in `jobmon report` over a time range
(docs/actions.md): counted by the report's groups, as the jobs are (each record carries
its job's user and tags), and the latest listed. Dry runs are counted apart: they warned
nobody and touched no job.

Read side, standard library only."""
from .aggregate import group_key


def summarize(actions, by, since=None, until=None, user=None, top=10):
    """The model's "actions": {"warnings", "actions", "failed", "dry_runs", "groups":
    [{"key", "warnings", "actions", "failed"}] most actions first, "latest": the `top`
    latest warnings and actions}."""
    def wanted(a):
        t = a["time"] / 1e9
        return (since is None or t >= since) and (until is None or t < until) and \
            (user is None or a.get("user") == user)
    shown = [a for a in actions if wanted(a)]
    live = [a for a in shown if not a.get("dry_run")]
    groups, total = {}, _counts("all")
    for a in live:
        key = group_key({"user": a.get("user"), "cluster": a.get("cluster"), "tags": a}, by)
        for c in (groups.setdefault(key, _counts(key)), total):
            c["warnings" if a.get("action") == "warn" else "actions"] += 1
            c["failed"] += str(a.get("outcome") or "").startswith("failed")
    latest = sorted(live, key=lambda a: a["time"], reverse=True)[:top]
    return dict(total, dry_runs=len(shown) - len(live),
                groups=sorted(groups.values(), key=lambda g: (-g["actions"], -g["warnings"],
                                                               g["key"])),
                latest=[{k: a.get(k) for k in ("time", "job", "user", "action", "outcome",
                                               "reason")} for a in latest])


def _counts(key):
    return {"key": key, "warnings": 0, "actions": 0, "failed": 0}
