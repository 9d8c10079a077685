"""The [report] section of the site configuration: the thresholds of every advice rule
(core/summary/advice.py), of `jobmon report`'s suspects and right-sizing, of the live views'
warnings, and where end-of-job report cards go. docs/reports.md and docs/configuration.md
document every key. Standard library only (read inside jobs: the report card, the early
warning)."""
from ..metrics.declared import SETTINGS as DECLARED

# key -> (type, default)
REPORT = {
    "cpu_low_percent": (float, 50.0),         # CPU efficiency below this: ask for fewer cores
    "cpu_headroom_percent": (float, 25.0),    # cores suggested above the average used
    "cpu_wait_percent": (float, 25.0),        # waited for a CPU this share of what it
    #                                           wanted, which reached its cores: the node
    #                                           was busy, never "ask for fewer cores"
    "mem_low_percent": (float, 50.0),         # memory peak below this share: ask for less
    "mem_headroom_percent": (float, 20.0),    # memory suggested above the peak
    "mem_min_waste_bytes": (int, 1 << 30),    # ... only when it would free this much
    "mem_near_limit_percent": (float, 90.0),  # a footprint this close to the limit: warn
    "mem_pressure_percent": (float, 10.0),    # stalled on memory this share of the run:
    #                                           thrashing (PSI)
    "major_faults_per_second": (float, 50.0),  # this many a second at its limit: thrashing
    "io_pressure_percent": (float, 30.0),     # waited for storage this share of the run
    "idle_samples_percent": (float, 50.0),    # samples at ~0 CPU: a stall suspect
    "idle_allocation_seconds": (float, 600.0),  # cores at ~0 CPU or GPUs without a process
    #                                             of the job this long at a stretch: flagged
    "gpu_low_percent": (float, 10.0),         # GPU utilization below this: idle GPUs
    "short_job_seconds": (float, 60.0),       # shorter jobs: batch them
    "node_busy_percent": (float, 90.0),       # one node of several did this share of the
    #                                           CPU: the others sat idle
    "min_completeness_percent": (float, 80.0),  # data covering less of the run: advice
    #                                             from its samples is withheld
    "disabled": (str, ""),                    # advice rules to leave out, comma-separated
    # `jobmon report` over a time range: suspects and right-sizing
    "suspect_min_samples": (int, 5),          # idle samples (CPU ~0, GPUs idle) for a suspect
    "rightsize_coverage_percent": (float, 99.0),  # tasks a batch's suggestion must fit
    "rightsize_headroom_percent": (float, 10.0),  # added to the covered peak
    "rightsize_min_tasks": (int, 3),          # smaller batches get no suggestion
    # the end-of-job report card, and the warning while a job runs near its memory limit
    "card": (str, "off"),                     # where cards go: off, stderr, file, mail
    "card_all_jobs": (bool, False),           # true: every job gets one unless it says no
    "card_dir": (str, ""),                    # file cards: "" = the job's working directory
    "mailer": (str, "/usr/sbin/sendmail -t"),   # mail cards: reads the message on stdin
}
REPORT.update(DECLARED)   # the thresholds of the declared metrics' rules
CHOICES = {"card": ("off", "stderr", "file", "mail")}
# every number is at least 0; these must be more
POSITIVE = {"rightsize_coverage_percent", "rightsize_min_tasks"}


def defaults():
    """{key: default}: the thresholds a reader uses without a site file."""
    return {k: d for k, (_t, d) in REPORT.items()}

