"""What the end-of-job record holds of the job itself and of its monitoring: its identity,
its run and the sampler's own accounting, which jobmon.job.session writes into the record
beside the probes', the fold's and the summary modules' figures (each declared beside the
code that computes it: jobmon.metrics.declared). Declarations only, kept here rather than
beside the session: jobmon.metrics reads them, and jobmon.job imports jobmon.metrics, so
the structure stays one-way."""

# the figures the session and its sampler give the record, declared
FIGURES = (
    {"name": "job", "unit": "", "range": None, "method": "recorded",
     "meaning": "job id (given with --job-id, from the scheduler, or generated)"},
    {"name": "host", "unit": "", "range": None, "scope": "node", "method": "recorded",
     "meaning": "host the job ran on"},
    {"name": "user", "unit": "", "range": None, "method": "recorded",
     "meaning": "user the job ran as"},
    {"name": "method", "unit": "", "range": None, "method": "recorded",
     "meaning": "probe that measured the job: cgroup-v2, cgroup-v1 or procfs"},
    {"name": "start_time", "unit": "s", "range": "epoch", "method": "exact",
     "meaning": "job start, seconds since the epoch"},
    {"name": "end_time", "combine": "max", "unit": "s", "range": "epoch", "method": "exact",
     "meaning": "job end (last process gone), seconds since the epoch"},
    {"name": "lost_points", "combine": "sum", "unit": "count", "range": "count", "method": "exact",
     "meaning": "points the InfluxDB spool could not take (a full disk: docs/configuration.md), "
                "the end-of-job record among them where it did not fit; 0 with the embedded "
                "store",
     "report": ({"group": "run", "label": "points the spool could not take", "unit": "count"},)},
    {"name": "interval_seconds", "unit": "s", "range": "wall", "method": "recorded",
     "meaning": "sampling interval"},
    {"name": "monitor_cpu_seconds", "unit": "s", "range": "cpu", "method": "exact",
     "meaning": "CPU jobmon's sampler used for this job (its own process; in the library API, its "
                "sampling calls)"},
    {"name": "monitor_read_seconds", "unit": "s", "range": "wall", "method": "exact",
     "meaning": "wall time jobmon spent reading the probe, all samples"},
    {"name": "monitor_errors", "unit": "count", "range": "count", "method": "exact",
     "meaning": "probe or sink errors the sampler met (each warned about)"},
    {"name": "leftover_procs", "combine": "sum",
     "unit": "count", "range": "count", "method": "exact",
     "meaning": "processes still running when the command itself exited (daemons, background "
                "jobs)",
     "report": ({"group": "processes", "label": "processes left running by the command",
                 "unit": "count"},)},
    {"name": "procs_killed_at_end", "combine": "sum",
     "unit": "count", "range": "count", "method": "exact",
     "meaning": "of those, how many the scheduler killed; 0 for `jobmon run`, which waits for "
                "them; null where not known (`--no-wait`, a step whose tasks' end was not seen)",
     "report": ({"group": "processes", "label": "of those, killed by the scheduler at the end",
                 "unit": "count"},)},
    {"name": "advice", "unit": "text", "range": None, "method": "derived",
     "meaning": "the advice on the run (docs/reports.md), one line per rule as `text (rule)`, \" "
                "| \" between them, at its end (in the summaries shipped to InfluxDB: other "
                "stores' readers compute it) and again once reconciled; empty when no rule has "
                "any"},
)
