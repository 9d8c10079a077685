"""The shipper's durable state: per-file offsets acknowledged by the server, and counters.

Saved atomically (tmp + fsync + rename) after every acknowledged batch.
"""
import json
import os

STATE_FILE = "ship-state.json"
COUNTERS = ("shipped_points", "shipped_batches", "dropped_points", "dropped_bytes",
            "dropped_files", "torn_lines", "quarantined_files", "send_errors")


class State:
    def __init__(self, directory):
        self.path = os.path.join(directory, STATE_FILE)
        self.files, self.counters, self.last_error, self.last_success = {}, {}, None, None
        try:
            with open(self.path) as f:
                d = json.load(f)
            self.files = d.get("files", {})
            self.counters = d.get("counters", {})
            self.last_error, self.last_success = d.get("last_error"), d.get("last_success")
        except FileNotFoundError:
            pass
        for k in COUNTERS:
            self.counters.setdefault(k, 0)

    def offset(self, name, st):
        """Bytes of file `name` the server acknowledged (0 for a new file of that name)."""
        e = self.files.get(name)
        if e and e["ino"] == st.st_ino and e["dev"] == st.st_dev:
            return e["offset"]
        return 0

    def acknowledge(self, name, st, offset):
        self.files[name] = {"ino": st.st_ino, "dev": st.st_dev, "offset": offset}

    def forget(self, name):
        self.files.pop(name, None)

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"files": self.files, "counters": self.counters,
                       "last_error": self.last_error, "last_success": self.last_success}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
