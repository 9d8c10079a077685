"""Every metric jobmon records, with its unit and meaning.

This table is the single source of truth: samples, the summary, the embedded store's
columns, the InfluxDB schema and docs/metrics.md (checked by a test) all come from it.
"""

# name, unit, kind, meaning
SAMPLE_FIELDS = (
    ("cpu_user_seconds", "s", "counter",
     "CPU time in user mode of every process the job ran so far, exited ones included"),
    ("cpu_system_seconds", "s", "counter",
     "CPU time in kernel mode of every process the job ran so far, exited ones included"),
    ("cpu_cores", "cores", "gauge",
     "CPU seconds used per wall-clock second over the last interval (2.0 = two busy cores)"),
    ("mem_resident_bytes", "bytes", "gauge",
     "resident memory: anonymous + shared memory (tmpfs/shm). cgroup: memory.stat; procfs: "
     "sum of Pss_Anon + Pss_Shmem, so pages shared by forked workers count once"),
    ("mem_cache_bytes", "bytes", "gauge",
     "page cache: file pages charged to the job's cgroup (procfs: file pages mapped by the job, "
     "Pss_File), reclaimable by the kernel"),
    ("mem_swap_bytes", "bytes", "gauge", "memory of the job swapped out"),
    ("mem_resident_peak_bytes", "bytes", "gauge",
     "running peak of resident memory: the largest of every sampled mem_resident_bytes and the "
     "kernel's per-process high-water mark (ru_maxrss) of every exited process"),
    ("mem_peak_bytes", "bytes", "gauge",
     "kernel high-water mark of all memory charged to the job's cgroup, page cache included "
     "(memory.peak on v2, memory.max_usage_in_bytes on v1); absent in procfs mode"),
    ("read_bytes", "bytes", "counter", "bytes the job caused to be read from storage"),
    ("write_bytes", "bytes", "counter", "bytes the job caused to be written to storage"),
    ("rchar_bytes", "bytes", "counter",
     "bytes passed through read()-like system calls (storage, page cache, pipes, sockets)"),
    ("wchar_bytes", "bytes", "counter",
     "bytes passed through write()-like system calls (storage, page cache, pipes, sockets)"),
    ("procs", "count", "gauge", "processes of the job alive at the sample"),
    ("threads", "count", "gauge", "threads (kernel tasks) of the job alive at the sample"),
    ("gpu_count", "count", "gauge",
     "GPUs of the job: those in CUDA_VISIBLE_DEVICES, else every GPU of the node (NVML; "
     "absent on a node without an NVIDIA driver)"),
    ("gpu_util_percent", "%", "gauge",
     "share of time a kernel ran on the job's GPUs (NVML utilization, device-wide, averaged "
     "over the job's GPUs; other users of a shared GPU count too)"),
    ("gpu_mem_bytes", "bytes", "gauge",
     "GPU memory held by the job's processes, summed over its GPUs (NVML per-process use)"),
    ("gpu_energy_joules", "J", "counter",
     "energy the job's GPUs used since the job started (NVML, whole devices; Volta and "
     "later); read every 10 s and at the end only, as one read costs ~4 ms of CPU"),
)

# name, unit, meaning: one record per job, written when it ends
SUMMARY_FIELDS = (
    ("job", "", "job id (given with --job-id, from the scheduler, or generated)"),
    ("host", "", "host the job ran on"),
    ("user", "", "user the job ran as"),
    ("method", "", "probe that measured the job: cgroup-v2, cgroup-v1 or procfs"),
    ("start_time", "s", "job start, seconds since the epoch"),
    ("end_time", "s", "job end (last process gone), seconds since the epoch"),
    ("exit_code", "", "exit code of the command, null if it died by a signal"),
    ("signal", "", "signal that killed the command, null if it exited"),
    ("wall_seconds", "s", "wall-clock time from start to the end of the job's last process"),
    ("cpu_user_seconds", "s", "total user CPU of every process of the job (end-of-job read)"),
    ("cpu_system_seconds", "s", "total system CPU of every process of the job (end-of-job read)"),
    ("cpu_cores_avg", "cores", "(user + system CPU) / wall seconds"),
    ("rss_peak_bytes", "bytes",
     "resident memory peak: largest of the sampled resident memory and the kernel's "
     "per-process high-water marks, so a spike between samples is not missed"),
    ("mem_peak_bytes", "bytes",
     "kernel high-water mark of the job's charged memory, page cache included (cgroup only)"),
    ("swap_peak_bytes", "bytes", "largest sampled swap use"),
    ("read_bytes", "bytes", "total bytes read from storage"),
    ("write_bytes", "bytes", "total bytes written to storage"),
    ("rchar_bytes", "bytes", "total bytes through read()-like system calls"),
    ("wchar_bytes", "bytes", "total bytes through write()-like system calls"),
    ("procs_max", "count", "most processes alive at once"),
    ("threads_max", "count", "most threads alive at once"),
    ("leftover_procs", "count",
     "processes still running when the command itself exited (daemons, background jobs)"),
    ("gpu_count", "count", "GPUs of the job (absent without an NVIDIA driver)"),
    ("gpu_util_avg_percent", "%", "mean of the sampled GPU utilization"),
    ("gpu_mem_peak_bytes", "bytes", "largest sampled GPU memory of the job's processes"),
    ("gpu_energy_joules", "J", "energy the job's GPUs used from start to end"),
    ("samples", "count", "samples taken"),
    ("interval_seconds", "s", "sampling interval"),
    ("monitor_cpu_seconds", "s",
     "CPU jobmon's sampler used for this job (its own process; in the library API, its "
     "sampling calls)"),
    ("monitor_read_seconds", "s", "wall time jobmon spent reading the probe, all samples"),
    ("monitor_errors", "count", "probe or sink errors the sampler met (each warned about)"),
)

SAMPLE_NAMES = tuple(f[0] for f in SAMPLE_FIELDS)
COUNTERS = tuple(f[0] for f in SAMPLE_FIELDS if f[2] == "counter")
# columns of a sample in CSV (`jobmon run --format csv`, `jobmon query --csv`)
SAMPLE_COLUMNS = ("time", "elapsed_seconds", "method") + SAMPLE_NAMES
UNITS = {f[0]: f[1] for f in SAMPLE_FIELDS}
UNITS.update({f[0]: f[1] for f in SUMMARY_FIELDS})


def markdown():
    """The metric table as docs/metrics.md shows it."""
    out = ["# Metrics", "",
           "Generated from `core/metrics.py` (a test keeps this file equal to it).", "",
           "## Per sample", "",
           "One sample per job per host per interval. Counters are cumulative from the job's "
           "start; gauges are the value at the sample.", "",
           "| field | unit | kind | meaning |", "|---|---|---|---|"]
    out += [f"| `{n}` | {u} | {k} | {m} |" for n, u, k, m in SAMPLE_FIELDS]
    out += ["", "Every sample also carries `time` (ns since the epoch), `elapsed_seconds` "
            "(s since the job started) and `method` (the probe that took it).", "",
            "## Per job (summary, written at the end)", "",
            "| field | unit | meaning |", "|---|---|---|"]
    out += [f"| `{n}` | {u} | {m} |" for n, u, m in SUMMARY_FIELDS]
    return "\n".join(out) + "\n"
