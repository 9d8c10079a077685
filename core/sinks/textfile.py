"""Samples as JSON lines or CSV, to a file or stdout (what prmon/JoReMon users expect)."""
import csv
import json
import sys

from . import Sink
from ..metrics import SAMPLE_COLUMNS


class TextSink(Sink):
    def __init__(self, path, fmt="jsonl"):
        self.fmt = fmt
        self.own = path not in ("-", None)
        self.fh = open(path, "a", newline="") if self.own else sys.stdout
        self.csv = None
        if fmt == "csv":
            self.csv = csv.DictWriter(self.fh, SAMPLE_COLUMNS, extrasaction="ignore")
            if not self.own or self.fh.tell() == 0:
                self.csv.writeheader()

    def write(self, sample):
        if self.csv:
            self.csv.writerow(sample)
        else:
            self.fh.write(json.dumps(sample, separators=(",", ":")) + "\n")
        self.fh.flush()

    def close(self, summary):
        if self.own:
            self.fh.close()
