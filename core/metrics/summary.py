"""What the end-of-job record holds: one figure per run (docs/metrics.md), each declared
beside the code that computes it (jobmon.metrics.declared) with its unit, valid range
(jobmon.metrics.ranges), meaning, scope and method. This module holds only their order."""
from ..config import ownership
from . import record
from ..schedulers import interface
from ..summary import batches, completeness, efficiency, exit_status, fold, idle, oom
from .declared import FOLDED, figures, ordered
from .samples import SAMPLE_METRICS

# the modules outside jobmon.probes that declare end-of-job figures (the probes' are
# jobmon.metrics.declared's)
DECLARING = (("core/metrics/record.py", record), ("core/summary/exit_status.py", exit_status),
             ("core/summary/fold.py", fold), ("core/summary/efficiency.py", efficiency),
             ("core/summary/oom.py", oom), ("core/summary/completeness.py", completeness),
             ("core/summary/idle.py", idle), ("core/summary/batches.py", batches),
             ("core/schedulers/interface.py", interface),
             ("core/config/ownership.py", ownership))
# the existing figures' order (as samples.py's: never reorder); a figure declared and not
# here follows them, in the order declared
ORDER = (
    "job", "host", "user", "method", "start_time", "end_time", "exit_code", "signal",
    "wall_seconds", "cpu_user_seconds", "cpu_system_seconds", "cpu_cores_avg", "rss_peak_bytes",
    "mem_peak_bytes", "mem_sizing_peak_bytes", "mem_sizing_basis", "swap_peak_bytes", "network_fs",
    "read_bytes", "write_bytes", "rchar_bytes", "wchar_bytes", "procs_max", "threads_max",
    "leftover_procs", "procs_killed_at_end", "gpu_count", "gpu_util_avg_percent",
    "gpu_mem_peak_bytes", "gpu_energy_joules", "gpu_energy_error_joules", "gpu_samples_missing",
    "gpu_shared_samples", "cpu_energy_joules", "dram_energy_joules", "cpu_energy_error_joules",
    "dram_energy_error_joules", "energy_joules", "energy_error_joules", "energy_method",
    "energy_parts", "energy_share", "energy_missing_seconds", "co2e_grams", "co2e_error_grams",
    "carbon_intensity", "net_rx_bytes", "net_tx_bytes", "net_rx_packets", "net_tx_packets",
    "net_source", "cpu_pressure_seconds", "cpu_wait_seconds", "cpu_throttled_seconds",
    "mem_pressure_seconds", "mem_pressure_full_seconds", "io_pressure_seconds",
    "io_pressure_full_seconds", "mem_major_faults", "mem_limit_hits", "mem_high_hits",
    "oom_events", "oom_kills", "cpu_quota_periods", "cpu_throttled_periods", "oom_time",
    "oom_time_within_seconds", "oom_pid", "oom_command", "oom_victim_rss_bytes",
    "oom_charge_bytes", "oom_limit_bytes", "oom_limit_hits", "oom_anon_bytes", "oom_cache_bytes",
    "oom_source", "cpu_pressure_percent", "cpu_wait_percent", "mem_pressure_percent",
    "io_pressure_percent", "pressure_source", "psi", "samples", "lost_points", "interval_seconds",
    "monitor_cpu_seconds", "monitor_read_seconds", "monitor_errors", "cores_requested",
    "cores_allocated", "mem_requested_bytes", "mem_allocated_bytes", "gpus_requested",
    "gpus_allocated", "cpu_efficiency_percent", "mem_efficiency_percent", "canonical_units",
    "provisioned_core_hours", "used_core_hours", "idle_core_hours", "idle_canonical_core_hours",
    "idle_limited_by", "gpu_hours", "idle_gpu_hours", "outcome", "outcome_reason", "outcome_cause",
    "cut_short", "missing_seconds_max", "sample_gaps", "sample_gap_seconds",
    "sample_gap_longest_seconds", "failed_reads", "completeness_percent", "completeness_reasons",
    "reconciled", "scheduler_state", "scheduler_code", "scheduler_subcode", "cancelled_by",
    "scheduler_user", "scheduler_memory_bytes", "scheduler_cpu_seconds", "batch", "advice",
    "ownership", "cpu_idle_samples", "cpu_idle_longest_seconds", "gpu_unused_longest_seconds",
    "idle_allocation", "gpu_idle_samples", "mem_growth_bytes_per_hour", "mem_rising",
    "cpu_throttled_percent",
)
SUMMARY_FIGURES = ordered(ORDER, FOLDED + figures(DECLARING, {m.name: m for m in SAMPLE_METRICS}))
# name, unit, range, meaning: one record per job, written when it ends
SUMMARY_FIELDS = tuple(f.row() for f in SUMMARY_FIGURES)
