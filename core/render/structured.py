"""Machine-readable renderings of a report: JSON (everything) and CSV (the samples)."""
import csv
import io
import json

from ..metrics import SAMPLE_COLUMNS


def to_json(rep):
    return json.dumps({"job": rep["header"], "summary": rep["summary"],
                       "samples": rep["samples"]}, indent=1, default=str)


def to_csv(rep):
    buf = io.StringIO()
    w = csv.DictWriter(buf, SAMPLE_COLUMNS, extrasaction="ignore")
    w.writeheader()
    w.writerows(rep["samples"])
    return buf.getvalue()
