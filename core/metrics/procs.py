"""The per-process breakdown's fields (docs/live.md), each with its valid range."""

# name, unit, range, kind, meaning: the per-process breakdown, one record per job every
# [procs] every_seconds (docs/live.md); its groups travel as one JSON text, `procs_top`
PROCS_FIELDS = (
    ("procs_top", "JSON", None, "gauge",
     "the job's heaviest processes grouped by command name: the top N by CPU and the top N "
     "by resident memory (a list of the objects below, CPU first)"),
    ("procs", "count", "count", "gauge", "processes of the job looked at, zombies included"),
    ("window_seconds", "s", "wall", "gauge",
     "time since the previous breakdown, over which each group's CPU is averaged (absent in "
     "the first: each process's average over its life)"),
    ("elapsed_seconds", "s", "wall", "gauge", "seconds since the job started"),
)
# key, unit, meaning: one group of `procs_top`
PROCS_TOP_KEYS = (
    ("comm", "", "command name (the kernel's comm, at most 15 bytes)"),
    ("procs", "count", "live processes with that name"),
    ("cpu_cores", "cores", "their CPU over the window, in cores"),
    ("rss_bytes", "bytes",
     "their resident memory (RSS: pages shared between them count in each)"),
    ("states", "", "how many of them were in each state: R running, S sleeping, D waiting "
     "uninterruptibly (usually on I/O), Z zombie (exited, not yet reaped), T stopped"),
    ("wchan", "", "where its waiting processes (S, D) wait: kernel function -> how many, read "
     "from /proc/<pid>/wchan for up to 4 of them; absent where the kernel does not say"),
    ("cmdline", "", "command line of the group's busiest process, cut to 256 characters; "
     "only where the site allows it ([procs] cmdline), else absent"),
)
