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
            "sampler_lost_points", "jobs_without_summary", "send_errors")
# why data was lost (docs/schema.md, jobmon_shipper)
REASONS = {
    "over_share": "spool over its limit (or its disk full): dropped from a user over their share",
    "spool_full": "spool over its limit with nobody over their share: dropped from the largest",
    "quarantined": "a file that is not jobmon line protocol, or that the server refused",
    "rejected_entry": "a spool entry that is not a regular file (directory, link, FIFO ...)",
    "torn_line": "a last line cut off by a writer that died mid-write",
    "sampler_lost": "points the job's sampler could not spool (disk full), from its lost_points",
    "no_summary": "jobs that ended without an end-of-job record (marked ended by the shipper)",
}
LOSS_KEYS = ("points", "bytes", "files")


KEEP_CORRUPT = 10      # unreadable state files kept, each under its own name


class State:
    def __init__(self, directory, read_only=False):
        """read_only (`jobmon ship --status`): an unreadable state file is left as it is
        and said (`unreadable`), never set aside: only the shipper does that."""
        self.path = os.path.join(directory, STATE_FILE)
        self.files, self.counters, self.losses = {}, {}, {}
        self.last_error = self.last_success = self.unreadable = None
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
        self.files, self.counters, self.losses = files, counters, losses
        self.last_error, self.last_success = d.get("last_error"), d.get("last_success")

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

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"files": self.files, "counters": self.counters, "losses": self.losses,
                       "last_error": self.last_error, "last_success": self.last_success}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
