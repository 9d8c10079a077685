"""The service's store as one caller sees it: the read interface of jobmon.stores, every
answer inside the caller's Scope. A store is asked for the caller's own records where
it can filter by user; every record is checked against the scope before it leaves.

Records leave without the store's own keys (`_point`, `_row`: where its samples are);
each carries a `_handle` instead, a number this connection gave it. samples() and
breakdowns() take a handle back, so a caller reads the samples of records it was shown
and of nothing else.

What a connection keeps is bounded: of each record shown, only what its samples are found
by (the store's own keys, its end time), and of the newest MAX_HELD records alone -- an
older handle is answered "not found", as one never given.

Every record a read shows is noted (`noted(job, owner, allowed)`, jobmon.serve.read_log),
and refused by the scope where the caller named it (its id, another user); a job asked for
by id that gave the caller nothing is noted refused with no owner."""
from collections import OrderedDict

from ..stores.ids import JobRef
from .policy import owner_of

# a coordinator's `jobmon list`: their accounts' jobs among this many newest records
COORDINATOR_SCAN = 10000
MAX_HELD = 20000          # handles a connection keeps (a few hundred bytes each)


class NotFound(Exception):
    pass


class ScopedStore:
    def __init__(self, store, scope, noted=None, read_log=None):
        self.store, self.scope = store, scope
        self.noted = noted or (lambda job, owner, allowed: None)
        self.read_log = read_log
        self.held = OrderedDict()     # handle -> where the store finds its samples
        self.given = 0

    def _shown(self, records, asked=False):
        """asked: the caller named these (a job id, another user): those outside the scope
        are noted refused. A scan's others (a coordinator's list) were never asked for."""
        out = []
        for r in records:
            if not self.scope.allows(r):
                if asked:
                    self.noted(r.get("job"), owner_of(r), False)
                continue
            self.noted(r.get("job"), owner_of(r), True)
            self.given += 1
            handle = self.given
            self.held[handle] = _where(r)
            if len(self.held) > MAX_HELD:
                self.held.popitem(last=False)
            shown = {k: v for k, v in r.items() if not k.startswith("_")}
            shown["_handle"] = handle
            out.append(shown)
        return out

    def close(self):
        self.held.clear()

    def _record(self, handle):
        try:
            return self.held[handle]
        except KeyError:
            raise NotFound(f"no record {handle} on this connection")

    def jobs(self, limit, user=None):
        only = self.scope.only_user
        if user or only is not None or self.scope.admin:
            return self._shown(self.store.jobs(limit, user=user or only), self._named(user))
        # a coordinator: their own jobs, and their accounts' among the newest records
        recs = self.store.jobs(limit, user=self.scope.user)
        recs += [r for r in self.store.jobs(max(limit, COORDINATOR_SCAN))
                 if r.get("user") != self.scope.user]
        recs.sort(key=lambda r: r.get("start_time") or 0, reverse=True)
        return self._shown([r for r in recs if self.scope.allows(r)][:limit])

    def records(self, ref, user=None):
        shown = self._shown(self.store.records(_job_ref(ref), user=user or self.scope.only_user),
                            asked=True)
        if not shown:
            self.noted(ref["text"], None, False)
        return shown

    def summaries(self, since=None, until=None, user=None, fields=None):
        return self._shown(self.store.summaries(since, until, user or self.scope.only_user,
                                                fields=fields), self._named(user))

    def _named(self, user):
        return bool(user) and user != self.scope.user

    def samples(self, handle):
        return self.store.samples(self._noted(self._record(handle)))

    def breakdowns(self, handle, last=None):
        return self.store.breakdowns(self._noted(self._record(handle)), last=last)

    def _noted(self, where):
        self.noted(where["job"], where["user"], True)
        return where

    def actions(self, since=None, jobs=None):
        """`jobmon act`'s warnings and actions on the jobs the caller may read: each is on
        a job of the user it names, the scheduler's owner (never a claim's)."""
        out = []
        for a in self.store.actions(since, jobs):
            allowed = self.scope.allows({"user": a.get("user"),
                                         "tags": {"account": a.get("account")}})
            if allowed or jobs:           # refused: only where the caller named the job
                self.noted(a.get("job"), a.get("user"), allowed)
            if allowed:
                out.append(a)
        return out

    def readers(self, ref, user=None):
        """Who read the job: the read log's entries of its runs whose owner the caller is
        (the admin group: any run's), and the refused reads that named its id. A job of
        another user is not found, as for its other data -- a coordinator's too: the log
        is the owner's and the admins'."""
        from .read_log import NotKept
        records = [r for r in self.store.records(_job_ref(ref),
                                                 user=user or self.scope.only_user)
                   if self.scope.admin or owner_of(r) == self.scope.user]
        if not records:
            self.noted(ref["text"], None, False)
            raise NotFound(f"no job {ref['text']!r} of yours")
        for r in records:
            self.noted(r.get("job"), owner_of(r), True)
        if self.read_log is None:
            raise NotKept("this service keeps no read log ([service] read_log)")
        jobs = sorted({str(r.get("job")) for r in records})
        return {"days": self.read_log.days, "reads": self.read_log.reads_of(
            jobs, sorted({owner_of(r) for r in records}), sorted(set(jobs) | {ref["text"]}))}


def _where(record):
    """Of a record, what a store's samples() and breakdowns() read: its own keys (`_point`,
    `_row`), its id and its end time."""
    out = {k: v for k, v in record.items() if k.startswith("_")}
    out["job"], out["user"] = record.get("job"), owner_of(record)
    out["summary"] = {"end_time": (record.get("summary") or {}).get("end_time")}
    return out


def _job_ref(ref):
    return JobRef(ref["text"], ref["exact"], ref["prefixes"], ref["global_id"])
