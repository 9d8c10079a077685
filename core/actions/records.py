"""Where `jobmon act` keeps its warnings and actions: a point of their own in InfluxDB
(`jobmon_action`, docs/schema.md), written straight to the summaries' database as
`jobmon reconcile` writes its corrections, or a row of the embedded store's `actions`
table. Each is written before it is carried out (outcome "pending") and again, at the
same time -- the same point, the same row -- with what came of it."""
import os
import pwd
import socket

from ..influx.schema import ACTION_TAGS, action_line


def actor():
    """Who acts: `jobmon act`'s user and host."""
    try:
        user = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        user = str(os.geteuid())
    return f"{user}@{socket.gethostname()}"


def make(d, action, reason, policy, time_ns, who):
    """The record of `action` ("warn", "hold", "requeuehold", "cancel") on Decision d,
    tagged as its first running record is (its cluster, user, job, scheduler, run and the
    promoted tags); its host where the job runs on one, its hosts in any case."""
    first = d.records[0]
    hosts = sorted({str(r["host"]) for r in d.records if r.get("host")})
    rec = {t: first.get(t) for t in ACTION_TAGS}
    rec.update(time=time_ns, host=hosts[0] if len(hosts) == 1 else None, action=action,
               dry_run=int(policy.dry_run), outcome="pending", reason=reason,
               resources=d.resources, idle_seconds=d.stretch, actor=who,
               warned_at=d.warned["time"] / 1e9 if d.warned else None,
               scheduler_user=d.live.user, scheduler_job=d.live.act_id,
               hosts=",".join(hosts))
    return rec


class InfluxWriter:
    def __init__(self, cfg):
        self.cfg = cfg

    def write(self, actions):
        from ..ship.transports import open_transport
        transport = open_transport(self.cfg)
        try:
            transport.send("".join(action_line(a) for a in actions).encode())
        finally:
            transport.close()


class LocalWriter:
    def __init__(self, store):
        self.store = store

    def write(self, actions):
        self.store.put_actions(actions)
