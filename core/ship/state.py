"""The shipper's durable state: per-file offsets acknowledged by the server, counters, and
every loss by user and reason.

Saved atomically (tmp + fsync + rename) after every acknowledged batch. A state file that
cannot be read as one (a disk that lost it, a hand edit) is set aside and the shipper
starts afresh: it then sends the spool from the start of every file, which the server
stores over what it already has -- never a crash loop.
"""
import json
import logging
import os

log = logging.getLogger("jobmon.ship")

STATE_FILE = "ship-state.json"
COUNTERS = ("shipped_points", "shipped_batches", "dropped_points", "dropped_bytes",
            "dropped_files", "torn_lines", "quarantined_files", "rejected_entries",
            "sampler_lost_points", "jobs_without_summary", "send_errors",
            "out_of_range_points")
# why data was lost (docs/schema.md, jobmon_shipper)
REASONS = {
    "over_share": "spool over its limit (or its disk full): dropped from a user over their share",
    "spool_full": "spool over its limit with nobody over their share: dropped from the largest",
    "quarantined": "a file that is not jobmon line protocol, or that the server refused",
    "rejected_entry": "a spool entry that is not a regular file (directory, link, FIFO ...)",
    "torn_line": "a last line cut off by a writer that died mid-write",
    "sampler_lost": "points the job's sampler could not spool (disk full), from its lost_points",
    "caused_loss": "points other users' samplers could not spool while this user's data, over "
                   "their share, filled the spool's disk",
    "no_summary": "jobs that ended without an end-of-job record (marked ended by the shipper)",
    "out_of_range": "lines set aside: a figure outside its valid range (docs/metrics.md)",
}
LOSS_KEYS = ("points", "bytes", "files")
FULL_KEPT = 64            # the last times the spool's disk was seen full
FULL_GAP_SECONDS = 300    # sightings closer than this are one time


KEEP_CORRUPT = 10      # unreadable state files kept, each under its own name


class State:
    def __init__(self, directory, read_only=False):
        """read_only (`jobmon ship --status`): an unreadable state file is left as it is
        and said (`unreadable`), never set aside: only the shipper does that."""
        self.path = os.path.join(directory, STATE_FILE)
        self.files, self.counters, self.losses = {}, {}, {}
        self.full = []      # [first seen, last seen, user most over their share or None]
        self.last_error = self.last_success = self.unreadable = self.last_run = None
        try:
            with open(self.path, "rb") as f:
                self._load(json.loads(f.read()))
        except FileNotFoundError:
            pass
        except PermissionError:
            raise                 # not ours to read: nothing is wrong with it
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
            self.unreadable = f"{self.path}: {e}"
            if not read_only:
                self._set_aside(e)
        for k in COUNTERS:
            self.counters.setdefault(k, 0)

    def _load(self, d):
        files = d["files"]
        for e in files.values():
            if not all(isinstance(e[k], int) for k in ("ino", "dev", "offset")):
                raise TypeError("a file entry is not numbers")
        counters = {k: v for k, v in d["counters"].items() if isinstance(v, int)}
        losses = d.get("losses") or {}
        for reasons in losses.values():
            for n in reasons.values():
                if not all(isinstance(n.get(k, 0), int) for k in LOSS_KEYS):
                    raise TypeError("a loss entry is not numbers")
        full = d.get("disk_full") or []
        for first, last, user in full:
            if not (isinstance(first, (int, float)) and isinstance(last, (int, float))
                    and isinstance(user, (str, type(None)))):
                raise TypeError("a disk_full entry is not [time, time, user]")
        self.files, self.counters, self.losses, self.full = files, counters, losses, full
        self.last_error, self.last_success = d.get("last_error"), d.get("last_success")
        self.last_run = d.get("last_run")      # `jobmon doctor`: is the shipper running

    def _set_aside(self, err):
        """Keep the unreadable file under a name of its own (an earlier one is never
        overwritten: it may be the one that tells what went wrong)."""
        names = [self.path + ".corrupt"] + [f"{self.path}.corrupt.{n}"
                                            for n in range(1, KEEP_CORRUPT)]
        aside = next((n for n in names if not os.path.lexists(n)), None)
        kept = f"kept as {aside}" if aside else f"not kept ({KEEP_CORRUPT} are already)"
        try:
            if aside:    # the state dir is private and one shipper runs: no race
                os.rename(self.path, aside)
        except OSError as e:
            kept = f"could not keep it ({e.strerror})"
        log.error("shipper state %s unreadable (%s); %s; starting afresh (the spool is sent "
                  "again from the start of every file, the server keeps one copy)", self.path,
                  err, kept)
        self.files, self.counters, self.losses = {}, {}, {}

    def offset(self, name, st):
        """Bytes of file `name` the server acknowledged (0 for a new file of that name)."""
        e = self.files.get(name)
        if e and e["ino"] == st.st_ino and e["dev"] == st.st_dev:
            return e["offset"]
        return 0

    def ended(self, name, st):
        """Was the end point of the job in file `name` acknowledged?"""
        e = self.files.get(name)
        return bool(e and e["ino"] == st.st_ino and e["dev"] == st.st_dev and e.get("ended"))

    def acknowledge(self, name, st, offset, ended=False):
        e = {"ino": st.st_ino, "dev": st.st_dev, "offset": offset}
        if ended or self.ended(name, st):
            e["ended"] = True
        self.files[name] = e

    def forget(self, name):
        self.files.pop(name, None)

    def lose(self, user, reason, points=0, nbytes=0, files=0):
        """Count a loss, attributed to the user whose data it was."""
        n = self.losses.setdefault(str(user), {}).setdefault(reason, {})
        for k, v in zip(LOSS_KEYS, (points, nbytes, files)):
            n[k] = n.get(k, 0) + v

    def disk_full(self, user, now):
        """The spool's disk was seen (nearly) full; `user`: the one most over their share
        then (None: nobody was)."""
        if self.full and self.full[-1][2] == user and now - self.full[-1][1] < FULL_GAP_SECONDS:
            self.full[-1][1] = now
        else:
            self.full.append([now, now, user])
            del self.full[:-FULL_KEPT]

    def sampler_lost(self, owner, points, since):
        """Points a job's sampler (of user `owner`, running since `since`) could not spool
        for a full disk: against the user whose data over their share filled it
        meanwhile, never against a user who was within theirs."""
        self.counters["sampler_lost_points"] += points
        seen = {user for _first, last, user in self.full if last >= since}
        culprit = next((user for _f, last, user in reversed(self.full)
                        if last >= since and user), None)
        if culprit is None or owner in seen:
            self.lose(owner, "sampler_lost", points)
            return owner
        self.lose(culprit, "caused_loss", points)
        log.warning("%d point(s) of user %s's job could not be spooled while the spool's "
                    "disk was full with data of user %s (over their share): counted against "
                    "%s", points, owner, culprit, culprit)
        return culprit

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"files": self.files, "counters": self.counters, "losses": self.losses,
                       "last_error": self.last_error, "last_success": self.last_success,
                       "disk_full": self.full, "last_run": self.last_run}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
