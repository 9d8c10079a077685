"""The site's largest node ([limits] in the site file; docs/metrics.md, "Valid ranges"):
what one run can physically show, with `shipper.max_job_days` its longest wall time.
Every figure's valid range is reckoned from these (jobmon.metrics.ranges); the shipper
sets aside lines outside them and every reader leaves such figures out. Kept apart from
the schema (schema.py), which merges them in."""
from ..metrics.ranges import DEFAULTS

SCHEMA = {
    "limits": {
        "node_cores": (int, DEFAULTS["node_cores"]),         # CPU cores (hardware threads)
        "node_memory_bytes": (int, DEFAULTS["node_memory_bytes"]),
        "node_watts": (float, DEFAULTS["node_watts"]),       # power at full load, GPUs in
        "node_gpus": (int, DEFAULTS["node_gpus"]),
    },
}
POSITIVE = {("limits", k) for k in SCHEMA["limits"]}
