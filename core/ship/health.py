"""The shipper's own health: what `jobmon ship --status` shows and what it writes to
InfluxDB as `jobmon_shipper` points (docs/schema.md), so a dashboard can show a node that
went silent and every point lost, by user and reason."""
import os
import stat

from ..influx import lineprotocol as lp
from ..influx import schema
from ..sinks.spool import SUFFIX
from .entries import QUARANTINE, count_lines, listing, open_regular, owner_name
from .quota import usage
from .trees import Walker

QUARANTINE_SHOWN = 20


def status(cfg, state):
    """Counters, losses by user and reason, the last error and success, and what waits
    in the spool. Reads the spool the way the shipper does: no links followed, no FIFO
    opened, no more read of a file than it really holds."""
    spool = cfg["spool"]["dir"]
    st = {"spool": spool, "max_bytes": cfg["spool"]["max_bytes"],
          "max_bytes_per_user": cfg["spool"]["max_bytes_per_user"]}
    st.update(state.counters)
    st["last_error"] = state.last_error
    st["last_success"] = state.last_success
    if state.unreadable:
        st["state_unreadable"] = state.unreadable   # the shipper sets it aside when it runs
    if not os.access(spool, os.R_OK | os.X_OK):
        st["error"] = "cannot list the spool (run as the shipper's user)"
    walker = Walker(take=False)   # only reads: another user's closed directory stays so
    walker.start()
    entries = listing(spool, SUFFIX, walker)
    files = pending = 0
    exact = True
    for e in entries:
        if e.quarantined or e.stray or not stat.S_ISREG(e.st.st_mode):
            continue
        opened = open_regular(e.path)
        if opened is None:
            continue
        fd, fst = opened
        try:
            n, whole = count_lines(fd, state.offset(e.name, fst), fst.st_size)
        finally:
            os.close(fd)
        files += 1
        pending += n
        exact &= whole
    quarantined = sorted(e.name for e in entries if e.quarantined)
    st.update({"spool_files": files, "spool_bytes": sum(usage(entries).values()),
               "pending_points": pending, "pending_points_exact": exact,
               "users": {owner_name(uid): n for uid, n in sorted(usage(entries).items())},
               "quarantine_entries": len(quarantined),
               "quarantine": quarantined[:QUARANTINE_SHOWN],
               "losses": state.losses})
    return st


def metrics_lines(state, host, cluster, spool_usage, quarantine_entries, time_ns):
    """The jobmon_shipper points: one with the counters, and one per user and reason of
    loss (tags `user`, `reason`)."""
    tags = {"host": host, "cluster": cluster}
    fields = dict(state.counters)
    fields["spool_bytes"] = sum(spool_usage.values())
    fields["quarantine_entries"] = quarantine_entries
    if state.last_success:
        fields["last_success"] = float(state.last_success)
    out = [lp.point(schema.SHIPPER, tags, fields, time_ns)]
    for user, reasons in sorted(state.losses.items()):
        for reason, n in sorted(reasons.items()):
            out.append(lp.point(schema.SHIPPER, dict(tags, user=user, reason=reason),
                                {"lost_points": n.get("points", 0),
                                 "lost_bytes": n.get("bytes", 0),
                                 "lost_files": n.get("files", 0)}, time_ns))
    return "".join(out)


def quarantine_count(spool):
    try:
        return len(os.listdir(os.path.join(spool, QUARANTINE)))
    except OSError:
        return 0
