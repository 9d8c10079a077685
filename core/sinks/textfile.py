"""Samples as JSON lines or CSV, to a file or stdout (what prmon/JoReMon users expect)."""
import csv
import errno
import json
import sys

from .interface import Sink
from ..metrics import SAMPLE_COLUMNS


class TextSink(Sink):
    def __init__(self, path, fmt="jsonl"):
        self.fmt = fmt
        self.path = path
        self.own = path not in ("-", None)
        self.fh = open(path, "a", newline="") if self.own else sys.stdout
        self.csv = None
        self.stopped = False
        if fmt == "csv":
            self.csv = csv.DictWriter(self.fh, SAMPLE_COLUMNS, extrasaction="ignore")
            if not self.own or self.fh.tell() == 0:
                self._put(self.csv.writeheader)

    def write(self, sample):
        if self.stopped:
            return
        if self.csv:
            self._put(self.csv.writerow, sample)
        else:
            self._put(self.fh.write, json.dumps(sample, separators=(",", ":")) + "\n")

    def _put(self, how, *arg):
        """Write and flush; a reader that went away (a closed pipe: `| head -1`) ends this
        output only, said once: sampling and the store go on, and the job never hears of it
        (jobmon ignores SIGPIPE and does not forward one its own write raised)."""
        try:
            how(*arg)
            self.fh.flush()
        except OSError as e:
            if e.errno not in (errno.EPIPE, errno.ECONNRESET):
                raise
            self.stopped = True
            _drop_buffered(self.fh)
            try:
                sys.stderr.write(f"jobmon: --out {self.path}: its reader is gone (closed "
                                 "pipe); samples go on to the store only\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass

    def close(self, summary):
        if self.own:
            try:
                self.fh.close()
            except OSError:
                pass


def _drop_buffered(fh):
    """What the closed pipe could not take stays in the file object's buffer, and a later
    flush (at exit) would fail again: point it at /dev/null, whose writes always succeed."""
    import os
    try:
        fd = fh.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except (OSError, ValueError):
        pass
