"""What a sample holds: one line per figure of the job, every interval (docs/metrics.md).

Each field is declared beside the code that produces it (jobmon.metrics.declared): its unit,
valid range (a kind of jobmon.metrics.ranges: what one run on one node can physically show;
readers and the shipper set aside any figure outside it), kind, meaning, scope and method.
This module holds only their order."""
from ..summary import completeness, idle
from .declared import DECLARED, metrics, ordered

# the sample fields jobmon.summary computes as the samples come
SUMMARY_DECLARING = (("core/summary/idle.py", idle),
                     ("core/summary/completeness.py", completeness))
# the existing fields' order (the embedded store's columns and existing stores depend on
# it: never reorder); a field declared and not here follows them, in the order declared
ORDER = (
    "cpu_user_seconds", "cpu_system_seconds", "cpu_cores", "mem_resident_bytes", "mem_cache_bytes",
    "mem_swap_bytes", "mem_resident_peak_bytes", "mem_peak_bytes", "read_bytes", "write_bytes",
    "rchar_bytes", "wchar_bytes", "cpu_pressure_seconds", "cpu_wait_seconds",
    "cpu_throttled_seconds", "mem_pressure_seconds", "mem_pressure_full_seconds",
    "io_pressure_seconds", "io_pressure_full_seconds", "mem_major_faults", "mem_limit_hits",
    "mem_high_hits", "oom_events", "oom_kills", "procs", "threads", "gpu_count",
    "gpu_util_percent", "gpu_mem_bytes", "gpus_in_use", "cpu_idle_seconds", "gpu_unused_seconds",
    "sample_gap_seconds", "mem_limit_bytes", "gpu_energy_joules", "cpu_energy_joules",
    "dram_energy_joules", "energy_joules", "power_watts", "co2e_grams", "net_rx_bytes",
    "net_tx_bytes", "net_rx_packets", "net_tx_packets", "cpu_quota_periods",
    "cpu_throttled_periods",
)
SAMPLE_METRICS = ordered(ORDER, DECLARED + metrics(SUMMARY_DECLARING))
# name, unit, range (jobmon.metrics.ranges), kind, meaning
SAMPLE_FIELDS = tuple(m.row() for m in SAMPLE_METRICS)
