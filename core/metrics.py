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
     "sum of Pss_Anon + Pss_Shmem, so pages shared by forked workers count once (PSS re-read "
     "within a CPU budget and 128 MiB of page tables walked per sample, carried forward from "
     "RSS and faults in between; a process larger than that: the pages it faulted in)"),
    ("mem_cache_bytes", "bytes", "gauge",
     "page cache: file pages charged to the job's cgroup (procfs: file pages mapped by the job, "
     "Pss_File), reclaimable by the kernel"),
    ("mem_swap_bytes", "bytes", "gauge", "memory of the job swapped out"),
    ("mem_resident_peak_bytes", "bytes", "gauge",
     "running resident peak: the largest of every sampled mem_resident_bytes and, where jobmon "
     "reaps the job's processes, the kernel's high-water mark of each one it reaped "
     "(ru_maxrss, VmHWM), which also counts the file-backed pages a process mapped (program, "
     "libraries)"),
    ("mem_peak_bytes", "bytes", "gauge",
     "kernel high-water mark of all memory charged to the job's cgroup, page cache included "
     "(memory.peak on v2, memory.max_usage_in_bytes on v1); absent in procfs mode"),
    ("read_bytes", "bytes", "counter", "bytes the job caused to be read from storage"),
    ("write_bytes", "bytes", "counter", "bytes the job caused to be written to storage"),
    ("rchar_bytes", "bytes", "counter",
     "bytes passed through read()-like system calls (storage, page cache, pipes, sockets)"),
    ("wchar_bytes", "bytes", "counter",
     "bytes passed through write()-like system calls (storage, page cache, pipes, sockets)"),
    ("cpu_pressure_seconds", "s", "counter",
     "wall time during which at least one runnable thread of the job waited for a CPU: the "
     "kernel's pressure stall information (PSI, `cpu.pressure` some) of the job's cgroup; "
     "where it has none, cpu_wait_seconds instead (pressure_source says which)"),
    ("cpu_wait_seconds", "s", "counter",
     "time the job's threads were runnable but waiting for a CPU, summed over its threads "
     "(run-queue wait, `/proc/<tid>/schedstat`): taken where the job's cgroup has no PSI "
     "(cgroup v1, procfs mode, PSI off); a thread that exited counts up to the last sample "
     "before, so a lower bound (in procfs mode a process's wait is read at a sample only if "
     "it ran since the one before, so a wait that has not ended by then shows later; a "
     "process found having run under 2 ms is read once it runs again, from its birth, and "
     "does not count if it exits before the next sample)"),
    ("cpu_throttled_seconds", "s", "counter",
     "time the job's cgroup was held back by its CPU quota (`cpu.stat` throttled_usec, v1 "
     "throttled_time); only where the job has a cgroup of the cpu controller"),
    ("mem_pressure_seconds", "s", "counter",
     "wall time during which at least one of the job's threads stalled on memory: reclaim, "
     "swap-in, refaulting pages it had to give up (PSI `memory.pressure` some; cgroup v2, or "
     "the v2 cgroup jobmon makes beside v1 ones on a hybrid host)"),
    ("mem_pressure_full_seconds", "s", "counter",
     "wall time during which all of the job's non-idle threads stalled on memory at once: it "
     "made no progress (PSI `memory.pressure` full)"),
    ("io_pressure_seconds", "s", "counter",
     "wall time during which at least one of the job's threads waited for block I/O (PSI "
     "`io.pressure` some)"),
    ("io_pressure_full_seconds", "s", "counter",
     "wall time during which all of the job's non-idle threads waited for block I/O at once "
     "(PSI `io.pressure` full)"),
    ("mem_major_faults", "count", "counter",
     "major page faults: pages the job waited to have read back from disk or swap (cgroup "
     "`memory.stat` pgmajfault); a job thrashing at its memory limit keeps refaulting its "
     "own pages"),
    ("mem_limit_hits", "count", "counter",
     "times the job's memory reached its limit, so the kernel had to reclaim from it "
     "(`memory.events` max on v2, `memory.failcnt` on v1)"),
    ("mem_high_hits", "count", "counter",
     "times it went over its `memory.high` and was throttled (cgroup v2)"),
    ("oom_events", "count", "counter",
     "times the job's cgroup ran out of memory at its limit (`memory.events` oom, v2)"),
    ("oom_kills", "count", "counter",
     "processes of the job the kernel's OOM killer killed (`memory.events` oom_kill on v2, "
     "`memory.oom_control` oom_kill on v1)"),
    ("procs", "count", "gauge", "processes of the job alive at the sample"),
    ("threads", "count", "gauge", "threads (kernel tasks) of the job alive at the sample"),
    ("gpu_count", "count", "gauge",
     "GPUs (or MIG slices) of the job: those in CUDA_VISIBLE_DEVICES, else every GPU the job "
     "may open (absent where no GPU source runs: docs/gpu.md)"),
    ("gpu_util_percent", "%", "gauge",
     "share of time a kernel ran on the job's GPUs (NVML utilization, device-wide, averaged "
     "over the job's GPUs; other users of a shared GPU count too)"),
    ("gpu_mem_bytes", "bytes", "gauge",
     "GPU memory held by the job's processes, summed over its GPUs (NVML per-process use)"),
    ("gpus_in_use", "count", "gauge",
     "of the job's GPUs, those one of its processes is on (holds a context: NVML's process "
     "list, through the node reader)"),
    ("cpu_idle_seconds", "s", "gauge",
     "how long the job has used under 0.01 cores while it had processes, this stretch (0 "
     "while it uses CPU): cores allocated and idle"),
    ("gpu_unused_seconds", "s", "gauge",
     "how long at least one of the job's GPUs has had none of its processes on it, this "
     "stretch (0 while every one has): GPUs allocated and idle"),
    ("mem_limit_bytes", "bytes", "gauge",
     "the memory limit the kernel holds the job to (its cgroup's), once read (from the "
     "first samples on)"),
    ("gpu_energy_joules", "J", "counter",
     "energy the job's GPUs used since the job started (NVML, whole GPUs, none for MIG "
     "slices; Volta and later). Node reader: every sample, start and end interpolated between "
     "its readings; JOBMON_GPU=nvml: every 10 s and at the end (one read costs ~4 ms). A GPU "
     "shared with another job gives both its whole energy (gpu_shared_samples)"),
    ("cpu_energy_joules", "J", "counter",
     "CPU package energy apportioned to the job since it started: between two of the node "
     "reader's readings, the node's RAPL package energy x the job's share of the node's CPU "
     "time (energy_share: busy or capacity; docs/energy.md)"),
    ("dram_energy_joules", "J", "counter",
     "DRAM energy apportioned the same way, by CPU time (RAPL dram zones; none on AMD)"),
    ("energy_joules", "J", "counter",
     "the job's energy since it started: gpu_energy_joules + cpu_energy_joules + "
     "dram_energy_joules, those there are (energy_parts says which)"),
    ("power_watts", "W", "gauge", "energy_joules per second over the last interval"),
    ("co2e_grams", "gCO2e", "counter",
     "CO2 equivalent of energy_joules: each interval's energy x the site's carbon intensity "
     "then (gCO2e per kWh: a constant, or a time series the site provides)"),
    ("net_rx_bytes", "bytes", "counter",
     "bytes the job's sockets received, loopback included: IP packets from their network "
     "header on, counted per cgroup v2 by the node reader's BPF program; absent without a "
     "job cgroup v2 or node reader (net_source says why; docs/network.md)"),
    ("net_tx_bytes", "bytes", "counter", "bytes the job's sockets sent, counted the same way"),
    ("net_rx_packets", "count", "counter",
     "packets the job's sockets received, as the kernel hands them over (a GRO aggregate "
     "counts once)"),
    ("net_tx_packets", "count", "counter",
     "packets the job's sockets sent, as the kernel passes them down (a GSO/TSO segment "
     "counts once)"),
)
# the node reader's counters: the summary keeps each one's last value seen (a sample may
# lack them while the reader is down)
NODE_COUNTERS = ("gpu_energy_joules", "cpu_energy_joules", "dram_energy_joules",
                 "energy_joules", "co2e_grams", "net_rx_bytes", "net_tx_bytes",
                 "net_rx_packets", "net_tx_packets")

# why a job waited (probes/pressure.py) and what its memory limit did to it: counters
# whose end-of-job totals the summary keeps
STALL_COUNTERS = ("cpu_pressure_seconds", "cpu_wait_seconds", "cpu_throttled_seconds",
                  "mem_pressure_seconds", "mem_pressure_full_seconds", "io_pressure_seconds",
                  "io_pressure_full_seconds", "mem_major_faults", "mem_limit_hits",
                  "mem_high_hits", "oom_events", "oom_kills")

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
     "resident peak: the largest sampled resident memory (anonymous + shared) and, where "
     "jobmon reaps the job's processes (jobmon run, the HTCondor wrapper), each one's kernel "
     "high-water mark (ru_maxrss, VmHWM), so a one-process spike between samples is not "
     "missed; that mark also counts the file-backed pages the process mapped (program, "
     "libraries), so this can exceed mem_peak_bytes where the kernel charged those pages "
     "elsewhere. Sampled only where jobmon watches from beside the job (the Slurm sampler: "
     "mem_sizing_basis says which)"),
    ("mem_peak_bytes", "bytes",
     "kernel high-water mark of the job's charged memory, page cache included (cgroup only): "
     "exact, a spike at any instant is in it"),
    ("mem_sizing_peak_bytes", "bytes",
     "the memory peak that memory efficiency, advice and right-sizing use: rss_peak_bytes "
     "where it catches spikes, else mem_peak_bytes (never a figure that can miss a spike "
     "where the kernel keeps an exact one), else the sampled rss_peak_bytes"),
    ("mem_sizing_basis", "text",
     "which: resident (rss_peak_bytes, jobmon reaped the job; written \"footprint\" "
     "before), kernel (mem_peak_bytes: "
     "exact, page cache included, so it errs on the safe side; the Slurm sampler), or "
     "sampled (rss_peak_bytes from samples only: nothing exact was there, a spike between "
     "samples may be missed)"),
    ("swap_peak_bytes", "bytes", "largest sampled swap use"),
    ("network_fs", "text", "network and FUSE file systems (nfs, lustre, gpfs, ceph, 9p ...) "
     "the job worked on, as \"nfs4 /home (working directory, open files)\": their I/O is in "
     "rchar_bytes and wchar_bytes only, never in read_bytes and write_bytes; empty if none"),
    ("read_bytes", "bytes", "total bytes read from storage"),
    ("write_bytes", "bytes", "total bytes written to storage"),
    ("rchar_bytes", "bytes", "total bytes through read()-like system calls"),
    ("wchar_bytes", "bytes", "total bytes through write()-like system calls"),
    ("procs_max", "count", "most processes of the job that existed at once (from fork to "
     "reaping: zombies count). cgroup: the samples and, where no sample saw a multi-threaded "
     "process, the pids controller's high-water mark of tasks; the exec trampoline that starts "
     "the job inside its cgroup raises that mark to 2 for a moment, so a mark of 2 is not used. "
     "procfs: a lower bound, exact for every process a sample found or jobmon reaped; see "
     "\"How exact procs_max is\" below"),
    ("threads_max", "count", "most threads alive at once"),
    ("leftover_procs", "count",
     "processes still running when the command itself exited (daemons, background jobs); "
     "Slurm: when each step's tasks had exited, summed over the steps"),
    ("procs_killed_at_end", "count",
     "of those, how many the scheduler killed: Slurm kills what is left in a step when its "
     "tasks end (seen by the Slurm sampler; with the kernel's exit status of each, Linux "
     "6.15 and later, only those that died of a signal), HTCondor's starter what is left "
     "when the job's top process, the wrapper, exits; 0 for `jobmon run`, which waits for "
     "them; null where not known (`--no-wait`, a step whose tasks' end was not seen)"),
    ("gpu_count", "count", "GPUs of the job (absent without an NVIDIA driver)"),
    ("gpu_util_avg_percent", "%", "mean of the sampled GPU utilization"),
    ("gpu_mem_peak_bytes", "bytes", "largest sampled GPU memory of the job's processes"),
    ("gpu_energy_joules", "J", "energy the job's GPUs used from start to end"),
    ("gpu_samples_missing", "count",
     "samples taken without GPU figures because the node reader was down or its data "
     "older than two refresh periods (never filled in with guesses); null without GPU "
     "metrics (docs/gpu.md)"),
    ("gpu_shared_samples", "count",
     "samples in which a process not of the job was on its GPUs: their utilization and "
     "energy were then the devices', the other job's use included"),
    ("cpu_energy_joules", "J", "CPU package energy apportioned to the job, start to end"),
    ("dram_energy_joules", "J", "DRAM energy apportioned to the job, start to end"),
    ("energy_joules", "J", "the job's energy, start to end: GPU + CPU package + DRAM, those "
     "there are"),
    ("energy_parts", "text", "which parts energy_joules holds (gpu, cpu, dram) and why one is "
     "missing (no RAPL on the node, MIG slices have no counter, no node reader)"),
    ("energy_share", "text", "how CPU and DRAM energy was apportioned: busy (the job's share "
     "of the CPU time the node used: idle power shared by whatever ran) or capacity (its "
     "share of all the node's CPU time: idle power left to nobody); a site choice"),
    ("energy_missing_seconds", "s", "seconds of the run whose CPU and DRAM energy is not in "
     "the totals (the node reader restarted, its counters began anew)"),
    ("co2e_grams", "gCO2e", "CO2 equivalent of energy_joules, start to end"),
    ("carbon_intensity", "gCO2e/kWh", "carbon intensity the job's CO2e was reckoned at "
     "(co2e_grams / energy_joules in kWh; the site's constant or time series)"),
    ("net_rx_bytes", "bytes", "bytes the job's sockets received (cgroup v2, BPF)"),
    ("net_tx_bytes", "bytes", "bytes the job's sockets sent (cgroup v2, BPF)"),
    ("net_rx_packets", "count", "packets the job's sockets received"),
    ("net_tx_packets", "count", "packets the job's sockets sent"),
    ("net_source", "text", "how the network figures were counted: bpf (the node reader's "
     "program on the job's cgroup v2; with a note where counting began late or restarted), "
     "or not available and why (cgroup v1, procfs mode, no privileges, no node reader)"),
    # the stall and memory-event counters, each the run's total
    *((n, u, "the run's total (per sample, above)") for n, u, _k, _m in SAMPLE_FIELDS
      if n in STALL_COUNTERS),
    # the job's first OOM kill, where it had one (oom_kills counts them all): core/summary/oom.py
    ("oom_time", "s", "when the kernel killed a process of the job for memory, seconds since "
     "the epoch: from the kernel's log to the µs where jobmon may read it (root, or "
     "kernel.dmesg_restrict = 0), else the sample that counted the kill"),
    ("oom_time_within_seconds", "s", "how far before oom_time the kill may have been: 0 from "
     "the kernel's log, else the time since the sample before"),
    ("oom_pid", "", "pid of the process killed (null where neither the kernel's log nor "
     "jobmon's own reaping said which)"),
    ("oom_command", "text", "its command name (the kernel's comm, at most 15 bytes)"),
    ("oom_victim_rss_bytes", "bytes", "its resident memory when it was killed (anon + file + "
     "shmem RSS, from the kernel's log)"),
    ("oom_charge_bytes", "bytes", "memory charged to the job's cgroup at that moment (the "
     "kernel kills at the limit: without its log, the cgroup's high-water mark by then)"),
    ("oom_limit_bytes", "bytes", "the job's memory limit then"),
    ("oom_limit_hits", "count", "times the job's cgroup had hit its memory limit by then"),
    ("oom_anon_bytes", "bytes", "of the charge, anonymous and shared memory (what the kernel "
     "could not give back without swap)"),
    ("oom_cache_bytes", "bytes", "of the charge, page cache (what reclaim had left)"),
    ("oom_source", "text", "where the figures come from: kernel log (exact), samples (the "
     "one that counted the kill, and the one before), or samples with the command as the "
     "victim (jobmon reaped it, killed by SIGKILL)"),
    ("cpu_pressure_percent", "%", "cpu_pressure_seconds / wall x 100: share of the run during "
     "which a thread of the job was waiting for a CPU (PSI)"),
    ("cpu_wait_percent", "%", "cpu_wait_seconds / (cpu_wait_seconds + CPU seconds) x 100: "
     "share of the time its threads wanted a CPU that they spent waiting for one (run queue)"),
    ("mem_pressure_percent", "%", "mem_pressure_seconds / wall x 100 (PSI)"),
    ("io_pressure_percent", "%", "io_pressure_seconds / wall x 100 (PSI)"),
    ("pressure_source", "text",
     "where the stall figures come from: psi (the kernel's pressure stall information of the "
     "job's own cgroup: CPU, memory and I/O, exact), run-queue (no PSI for this job -- a "
     "scheduler's cgroup v1, procfs mode, or PSI off: CPU from its threads' run-queue wait, "
     "memory from its limit hits and major faults, no I/O stall figure)"),
    ("psi", "text", "on: the node's kernel keeps PSI; off: it was built or booted without it "
     "(no /proc/pressure; RHEL 8 needs the boot option psi=1)"),
    ("samples", "count", "samples taken"),
    ("interval_seconds", "s", "sampling interval"),
    ("monitor_cpu_seconds", "s",
     "CPU jobmon's sampler used for this job (its own process; in the library API, its "
     "sampling calls)"),
    ("monitor_read_seconds", "s", "wall time jobmon spent reading the probe, all samples"),
    ("monitor_errors", "count", "probe or sink errors the sampler met (each warned about)"),
    # what the job was given and what it used of it (core/summary/efficiency.py; docs/reports.md)
    ("cores_requested", "cores", "cores the job asked for (HTCondor RequestCpus; "
     "`--tag request_cpus=N`)"),
    ("cores_allocated", "cores",
     "cores the job was given: HTCondor CpusProvisioned, Slurm's alloc_cpus (its allocation "
     "on the node), else its cgroup's CPU quota or cpuset, else the request"),
    ("mem_requested_bytes", "bytes",
     "memory the job asked for (HTCondor RequestMemory; `--tag request_memory=4GiB`)"),
    ("mem_allocated_bytes", "bytes", "memory the job was given: HTCondor MemoryProvisioned, "
     "else its cgroup's memory limit, else the request"),
    ("gpus_requested", "count", "GPUs the job asked for (RequestGPUs; `--tag request_gpus=N`)"),
    ("gpus_allocated", "count",
     "GPUs the job was given: GPUsProvisioned, else the GPUs it could see, else the request"),
    ("cpu_efficiency_percent", "%", "(user + system CPU) / (cores_allocated x wall) x 100"),
    ("mem_efficiency_percent", "%", "mem_sizing_peak_bytes / mem_allocated_bytes x 100"),
    ("canonical_units", "units",
     "canonical CPU units the job held: the larger of cores_allocated and "
     "mem_allocated_bytes / 2 GiB (OSG: 1 core + 2 GB)"),
    ("provisioned_core_hours", "core-h", "cores_allocated x wall hours"),
    ("used_core_hours", "core-h", "(user + system CPU) / 3600"),
    ("idle_core_hours", "core-h", "(cores_allocated - cores used on average) x wall hours"),
    ("idle_canonical_core_hours", "core-h",
     "idle cores and idle memory (allocation - mem_sizing_peak_bytes) in whole canonical "
     "units x wall hours (OSG: 3 cores + 3 GB idle = 1, 3 cores + 1 GB = 0, 2 cores + 6 GB = 2)"),
    ("idle_limited_by", "text", "which of cores or memory limited the idle canonical units "
     "(cores, memory or both)"),
    ("gpu_hours", "GPU-h", "gpus_allocated x wall hours"),
    ("idle_gpu_hours", "GPU-h", "gpu_hours x (1 - gpu_util_avg_percent / 100)"),
    ("outcome", "text", "goodput (exit code 0) or badput (another exit code, a signal, or the "
     "scheduler ended it); at the job's end from its exit status, then the scheduler's once "
     "reconciled (cancelled, time limit, out of memory, held, removed, evicted, preempted, "
     "node failure: docs/accounting.md)"),
    ("outcome_reason", "text", "why: completed (exit code 0), failed (exit code N), killed "
     "by SIGNAL; reconciled: the scheduler's end, e.g. cancelled (scancel): by alice, held "
     "(code 12.2): ..., evicted (code 1013)"),
    ("outcome_cause", "text", "whose doing a badput run was (reconciled): user (its own "
     "failure, a limit it hit, its owner's removal), site (the node, the pilot, a "
     "configuration), preemption, or unknown; none for goodput"),
    ("cut_short", "count", "1 when the run ended without its end-of-job record (the scheduler "
     "SIGKILLed the sampler with the job after the vacate time, or the node went down): its "
     "figures are its samples' fold, up to the last one; 0 when the end-of-job read was made"),
    ("missing_seconds_max", "s", "at most this much of the run's end is not in its figures: "
     "one sampling interval for a cut-short run (a live sampler would have sampled again), "
     "the time after the last read where the job's cgroup went before its final read, else 0"),
    ("reconciled", "count", "1 once the scheduler's record of the run was applied (`jobmon "
     "reconcile`), or once it was clear there is none to apply; 0 until then"),
    ("scheduler_state", "text", "how the scheduler says the run ended (reconciled): Slurm's "
     "State (COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, PREEMPTED, NODE_FAIL, "
     "REQUEUED, ...) or HTCondor's (completed, removed, held, evicted); none: no record"),
    ("scheduler_code", "", "HTCondor's HoldReasonCode of a held run, VacateReasonCode of an "
     "evicted one (reconciled)"),
    ("scheduler_subcode", "", "HTCondor's HoldReasonSubCode (reconciled)"),
    ("cancelled_by", "text", "who cancelled the run (reconciled): the user Slurm names "
     "(sacct --json), or the uid of `CANCELLED by UID` (its text form)"),
    ("scheduler_user", "text", "whose job the scheduler says the run was (reconciled): Slurm's "
     "User, HTCondor's Owner"),
    ("scheduler_memory_bytes", "bytes", "the scheduler's own memory figure of the run "
     "(reconciled): HTCondor's MemoryUsage (anon + shmem polled every 5 s), Slurm's MaxRSS "
     "(the largest step's sample every JobAcctGatherFrequency)"),
    ("scheduler_cpu_seconds", "s", "the scheduler's own CPU figure of the run (reconciled): "
     "HTCondor's RemoteUserCpu + RemoteSysCpu, Slurm's TotalCPU"),
    ("batch", "text", "the batch the job belongs to, as `jobmon report` groups them: \"array "
     "12345\" (Slurm array), \"batch NAME\" (HTCondor JobBatchName), \"dag SCHEDD#ID\" "
     "(DAGManJobId), \"cluster SCHEDD#4711\" (an HTCondor cluster); absent for a lone job"),
    ("advice", "text", "the advice on the run (docs/reports.md), one line per rule as "
     "`text (rule)`, \" | \" between them, at its end (in the summaries shipped to "
     "InfluxDB: other stores' readers compute it) and again once reconciled; empty when no "
     "rule has any"),
    ("ownership", "text", "whose job the run is (docs/security.md): own, claim (the scheduler "
     "names another user: counted nowhere), unconfirmed (counted, marked), local (no "
     "scheduler); written by the shipper and `jobmon reconcile`, never by the job"),
    ("cpu_idle_samples", "count",
     "samples in which the job used under 0.01 cores while it had processes (stall suspect)"),
    ("cpu_idle_longest_seconds", "s", "the longest stretch of cpu_idle_seconds"),
    ("gpu_unused_longest_seconds", "s", "the longest stretch of gpu_unused_seconds"),
    ("idle_allocation", "text", "which allocation the job held idle at a stretch for at "
     "least the site's [report] idle_allocation_seconds (600): cores, gpus, cores,gpus, or empty"),
    ("gpu_idle_samples", "count", "samples in which the job's GPUs were at 0 % utilization"),
    ("mem_growth_bytes_per_hour", "bytes/h",
     "what resident memory grew by per hour in the run's second half (the start-up left "
     "out), without the samples that fall to its end (the exit's teardown): the median slope "
     "between every two of them (Theil-Sen, at most 64 samples kept evenly spaced over the run)"),
    ("mem_rising", "count", "1 when resident memory rose steadily (a leak suspect): its peak "
     "came in the last fifth of the samples, and the line up to it fits them with R^2 >= 0.8 "
     "and rose by 25 % of its start over >= 10 samples"),
)

# name, unit, kind, meaning: the per-process breakdown, one record per job every
# [procs] every_seconds (docs/live.md); its groups travel as one JSON text, `procs_top`
PROCS_FIELDS = (
    ("procs_top", "JSON", "gauge",
     "the job's heaviest processes grouped by command name: the top N by CPU and the top N "
     "by resident memory (a list of the objects below, CPU first)"),
    ("procs", "count", "gauge", "processes of the job looked at, zombies included"),
    ("window_seconds", "s", "gauge",
     "time since the previous breakdown, over which each group's CPU is averaged (absent in "
     "the first: each process's average over its life)"),
    ("elapsed_seconds", "s", "gauge", "seconds since the job started"),
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


SAMPLE_NAMES = tuple(f[0] for f in SAMPLE_FIELDS)
COUNTERS = tuple(f[0] for f in SAMPLE_FIELDS if f[2] == "counter")
# columns of a sample in CSV (`jobmon run --format csv`, `jobmon query --csv`)
SAMPLE_COLUMNS = ("time", "elapsed_seconds", "method") + SAMPLE_NAMES
UNITS = {f[0]: f[1] for f in SAMPLE_FIELDS}
UNITS.update({f[0]: f[1] for f in SUMMARY_FIELDS})
