"""What the end-of-job record holds: one figure per run (docs/metrics.md), each with its
valid range (jobmon.metrics.ranges)."""
from .declared import SUMMARY_ROWS, place
from .samples import SAMPLE_FIELDS, STALL_COUNTERS

# name, unit, range, meaning: one record per job, written when it ends; a bare name keeps a
# declared figure's place (jobmon.metrics.declared), the others declared follow the table
SUMMARY_FIELDS = place((
    ("job", "", None, "job id (given with --job-id, from the scheduler, or generated)"),
    ("host", "", None, "host the job ran on"),
    ("user", "", None, "user the job ran as"),
    ("method", "", None, "probe that measured the job: cgroup-v2, cgroup-v1 or procfs"),
    ("start_time", "s", "epoch", "job start, seconds since the epoch"),
    ("end_time", "s", "epoch", "job end (last process gone), seconds since the epoch"),
    ("exit_code", "", "status", "exit code of the command, null if it died by a signal"),
    ("signal", "", "status", "signal that killed the command, null if it exited"),
    ("wall_seconds", "s", "wall",
     "wall-clock time from start to the end of the job's last process"),
    ("cpu_user_seconds", "s", "cpu",
     "total user CPU of every process of the job (end-of-job read)"),
    ("cpu_system_seconds", "s", "cpu",
     "total system CPU of every process of the job (end-of-job read)"),
    ("cpu_cores_avg", "cores", "cores", "(user + system CPU) / wall seconds"),
    ("rss_peak_bytes", "bytes", "memory",
     "resident peak: the largest sampled resident memory (anonymous + shared) and, where "
     "jobmon reaps the job's processes (jobmon run, the HTCondor wrapper), each one's kernel "
     "high-water mark (ru_maxrss, VmHWM), so a one-process spike between samples is not "
     "missed; that mark also counts the file-backed pages the process mapped (program, "
     "libraries), so this can exceed mem_peak_bytes where the kernel charged those pages "
     "elsewhere. Sampled only where jobmon watches from beside the job (the Slurm sampler: "
     "mem_sizing_basis says which)"),
    ("mem_peak_bytes", "bytes", "memory",
     "kernel high-water mark of the job's charged memory, page cache included (cgroup only): "
     "exact, a spike at any instant is in it"),
    ("mem_sizing_peak_bytes", "bytes", "memory",
     "the memory peak that memory efficiency, advice and right-sizing use: rss_peak_bytes "
     "where it catches spikes, else mem_peak_bytes (never a figure that can miss a spike "
     "where the kernel keeps an exact one), else the sampled rss_peak_bytes"),
    ("mem_sizing_basis", "text", None,
     "which: resident (rss_peak_bytes, jobmon reaped the job; written \"footprint\" "
     "before), kernel (mem_peak_bytes: "
     "exact, page cache included, so it errs on the safe side; the Slurm sampler), or "
     "sampled (rss_peak_bytes from samples only: nothing exact was there, a spike between "
     "samples may be missed)"),
    ("swap_peak_bytes", "bytes", "bytes", "largest sampled swap use"),
    ("network_fs", "text", None, "network and FUSE file systems (nfs, lustre, gpfs, ceph, 9p ...) "
     "the job worked on, as \"nfs4 /home (working directory, open files)\": their I/O is in "
     "rchar_bytes and wchar_bytes only, never in read_bytes and write_bytes; empty if none"),
    ("read_bytes", "bytes", "bytes", "total bytes read from storage"),
    ("write_bytes", "bytes", "bytes", "total bytes written to storage"),
    ("rchar_bytes", "bytes", "bytes", "total bytes through read()-like system calls"),
    ("wchar_bytes", "bytes", "bytes", "total bytes through write()-like system calls"),
    ("procs_max", "count", "count", "most processes of the job that existed at once (from fork to "
     "reaping: zombies count). cgroup: the samples and, where no sample saw a multi-threaded "
     "process, the pids controller's high-water mark of tasks; the exec trampoline that starts "
     "the job inside its cgroup raises that mark to 2 for a moment, so a mark of 2 is not used. "
     "procfs: a lower bound, exact for every process a sample found or jobmon reaped; see "
     "\"How exact procs_max is\" below"),
    ("threads_max", "count", "count", "most threads alive at once"),
    ("leftover_procs", "count", "count",
     "processes still running when the command itself exited (daemons, background jobs); "
     "Slurm: when each step's tasks had exited, summed over the steps"),
    ("procs_killed_at_end", "count", "count",
     "of those, how many the scheduler killed: Slurm kills what is left in a step when its "
     "tasks end (seen by the Slurm sampler; with the kernel's exit status of each, Linux "
     "6.15 and later, only those that died of a signal), HTCondor's starter what is left "
     "when the job's top process, the wrapper, exits; 0 for `jobmon run`, which waits for "
     "them; null where not known (`--no-wait`, a step whose tasks' end was not seen)"),
    ("gpu_count", "count", "gpus", "GPUs of the job (absent without an NVIDIA driver)"),
    ("gpu_util_avg_percent", "%", "percent", "mean of the sampled GPU utilization"),
    ("gpu_mem_peak_bytes", "bytes", "memory", "largest sampled GPU memory of the job's processes"),
    ("gpu_energy_joules", "J", "joules", "energy the job's GPUs used from start to end"),
    ("gpu_energy_error_joules", "J", "joules",
     "how far gpu_energy_joules may be off (±): at the start and at the end, the larger "
     "of the interpolated counter's distances to the readings either side (the counter "
     "never goes back, so the true one lies between them); JOBMON_GPU=nvml: the GPUs' "
     "power limit x the time from the job's start to the sampler's first read"),
    ("gpu_samples_missing", "count", "count",
     "samples taken without GPU figures because the node reader was down or its data "
     "older than two refresh periods (never filled in with guesses); null without GPU "
     "metrics (docs/gpu.md)"),
    ("gpu_shared_samples", "count", "count",
     "samples in which a process not of the job was on its GPUs: their utilization and "
     "energy were then the devices', the other job's use included"),
    ("cpu_energy_joules", "J", "joules",
     "CPU package energy apportioned to the job, start to end"),
    ("dram_energy_joules", "J", "joules", "DRAM energy apportioned to the job, start to end"),
    ("cpu_energy_error_joules", "J", "joules",
     "how far cpu_energy_joules may be off (±) by timing, from the readings: the job's "
     "CPU time before the node reader's first reading (and in a gap where it restarted) "
     "at the next interval's cost per CPU-second, and at each reading the job's CPU time "
     "between its own reads around it x the change in that cost; the model (every "
     "CPU-second of an interval costs the same) is not in it: the data cannot bound it"),
    ("dram_energy_error_joules", "J", "joules",
     "the same for dram_energy_joules (its model, DRAM energy by CPU time, not bounded)"),
    ("energy_joules", "J", "joules",
     "the job's energy, start to end: GPU + CPU package + DRAM, those "
     "there are"),
    ("energy_error_joules", "J", "joules",
     "how far energy_joules may be off (±): the sum of its parts' bounds (a worst case), "
     "absent where a part has none"),
    ("energy_method", "text", None,
     "how each part of energy_joules was obtained: the GPUs' counter (interpolated "
     "between the node reader's readings, or read by the sampler), CPU and DRAM by RAPL "
     "counters x the job's share of the node's CPU time"),
    ("energy_parts", "text", None,
     "which parts energy_joules holds (gpu, cpu, dram) and why one is "
     "missing (no RAPL on the node, MIG slices have no counter, no node reader)"),
    ("energy_share", "text", None,
     "how CPU and DRAM energy was apportioned: busy (the job's share "
     "of the CPU time the node used: idle power shared by whatever ran) or capacity (its "
     "share of all the node's CPU time: idle power left to nobody); a site choice"),
    ("energy_missing_seconds", "s", "wall",
     "seconds of the run whose CPU and DRAM energy is not in "
     "the totals (the node reader restarted, its counters began anew)"),
    ("co2e_grams", "gCO2e", "grams", "CO2 equivalent of energy_joules, start to end"),
    ("co2e_error_grams", "gCO2e", "grams",
     "how far co2e_grams may be off (±) from the energy's: energy_error_joules at the "
     "highest intensity of the run, plus, where the intensity changed within the run, the "
     "energy around each step x the step; the intensity's own error is not in it"),
    ("carbon_intensity", "gCO2e/kWh", "intensity",
     "carbon intensity the job's CO2e was reckoned at "
     "(co2e_grams / energy_joules in kWh; the site's constant or time series)"),
    ("net_rx_bytes", "bytes", "bytes", "bytes the job's sockets received (cgroup v2, BPF)"),
    ("net_tx_bytes", "bytes", "bytes", "bytes the job's sockets sent (cgroup v2, BPF)"),
    ("net_rx_packets", "count", "count", "packets the job's sockets received"),
    ("net_tx_packets", "count", "count", "packets the job's sockets sent"),
    ("net_source", "text", None, "how the network figures were counted: bpf (the node reader's "
     "program on the job's cgroup v2; with a note where counting began late or restarted), "
     "or not available and why (cgroup v1, procfs mode, no privileges, no node reader)"),
    # the stall and memory-event counters, each the run's total (a declared one's row is
    # its declaration's)
    *((n, u, r, "the run's total (per sample, above)") if n in STALL_COUNTERS else n
      for n, u, r, _k, _m in SAMPLE_FIELDS if n in STALL_COUNTERS or n in SUMMARY_ROWS),
    # the job's first OOM kill, where it had one (oom_kills counts them all): core/summary/oom.py
    ("oom_time", "s", "epoch",
     "when the kernel killed a process of the job for memory, seconds since "
     "the epoch: from the kernel's log to the µs where jobmon may read it (root, or "
     "kernel.dmesg_restrict = 0), else the sample that counted the kill"),
    ("oom_time_within_seconds", "s", "wall",
     "how far before oom_time the kill may have been: 0 from "
     "the kernel's log, else the time since the sample before"),
    ("oom_pid", "", "pid", "pid of the process killed (null where neither the kernel's log nor "
     "jobmon's own reaping said which)"),
    ("oom_command", "text", None, "its command name (the kernel's comm, at most 15 bytes)"),
    ("oom_victim_rss_bytes", "bytes", "memory",
     "its resident memory when it was killed (anon + file + "
     "shmem RSS, from the kernel's log)"),
    ("oom_charge_bytes", "bytes", "memory",
     "memory charged to the job's cgroup at that moment (the "
     "kernel kills at the limit: without its log, the cgroup's high-water mark by then)"),
    ("oom_limit_bytes", "bytes", "bytes", "the job's memory limit then"),
    ("oom_limit_hits", "count", "count", "times the job's cgroup had hit its memory limit by "
     "then"),
    ("oom_anon_bytes", "bytes", "memory",
     "of the charge, anonymous and shared memory (what the kernel "
     "could not give back without swap)"),
    ("oom_cache_bytes", "bytes", "memory", "of the charge, page cache (what reclaim had left)"),
    ("oom_source", "text", None, "where the figures come from: kernel log (exact), samples (the "
     "one that counted the kill, and the one before), or samples with the command as the "
     "victim (jobmon reaped it, killed by SIGKILL)"),
    ("cpu_pressure_percent", "%", "share",
     "cpu_pressure_seconds / wall x 100: share of the run during "
     "which a thread of the job was waiting for a CPU (PSI)"),
    ("cpu_wait_percent", "%", "percent",
     "cpu_wait_seconds / (cpu_wait_seconds + CPU seconds) x 100: "
     "share of the time its threads wanted a CPU that they spent waiting for one (run queue)"),
    ("mem_pressure_percent", "%", "share", "mem_pressure_seconds / wall x 100 (PSI)"),
    ("io_pressure_percent", "%", "share", "io_pressure_seconds / wall x 100 (PSI)"),
    ("pressure_source", "text", None,
     "where the stall figures come from: psi (the kernel's pressure stall information of the "
     "job's own cgroup: CPU, memory and I/O, exact), run-queue (no PSI for this job -- a "
     "scheduler's cgroup v1, procfs mode, or PSI off: CPU from its threads' run-queue wait, "
     "memory from its limit hits and major faults, no I/O stall figure)"),
    ("psi", "text", None,
     "on: the node's kernel keeps PSI; off: it was built or booted without it "
     "(no /proc/pressure; RHEL 8 needs the boot option psi=1)"),
    ("samples", "count", "count", "samples taken"),
    ("lost_points", "count", "count",
     "points the InfluxDB spool could not take (a full disk: docs/configuration.md), the "
     "end-of-job record among them where it did not fit; 0 with the embedded store"),
    ("interval_seconds", "s", "wall", "sampling interval"),
    ("monitor_cpu_seconds", "s", "cpu",
     "CPU jobmon's sampler used for this job (its own process; in the library API, its "
     "sampling calls)"),
    ("monitor_read_seconds", "s", "wall", "wall time jobmon spent reading the probe, all samples"),
    ("monitor_errors", "count", "count",
     "probe or sink errors the sampler met (each warned about)"),
    # what the job was given and what it used of it (core/summary/efficiency.py; docs/reports.md)
    ("cores_requested", "cores", "ratio", "cores the job asked for (HTCondor RequestCpus; "
     "`--tag request_cpus=N`)"),
    ("cores_allocated", "cores", "cores",
     "cores the job was given: HTCondor CpusProvisioned, Slurm's alloc_cpus (its allocation "
     "on the node), else its cgroup's CPU quota or cpuset, else the request"),
    ("mem_requested_bytes", "bytes", "bytes",
     "memory the job asked for (HTCondor RequestMemory; `--tag request_memory=4GiB`)"),
    ("mem_allocated_bytes", "bytes", "bytes",
     "memory the job was given: HTCondor MemoryProvisioned, "
     "else its cgroup's memory limit, else the request"),
    ("gpus_requested", "count", "count",
     "GPUs the job asked for (RequestGPUs; `--tag request_gpus=N`)"),
    ("gpus_allocated", "count", "gpus",
     "GPUs the job was given: GPUsProvisioned, else the GPUs it could see, else the request"),
    ("cpu_efficiency_percent", "%", "ratio",
     "(user + system CPU) / (cores_allocated x wall) x 100"),
    ("mem_efficiency_percent", "%", "ratio", "mem_sizing_peak_bytes / mem_allocated_bytes x 100"),
    ("canonical_units", "units", "ratio",
     "canonical CPU units the job held: the larger of cores_allocated and "
     "mem_allocated_bytes / 2 GiB (OSG: 1 core + 2 GB)"),
    ("provisioned_core_hours", "core-h", "core_hours", "cores_allocated x wall hours"),
    ("used_core_hours", "core-h", "core_hours", "(user + system CPU) / 3600"),
    ("idle_core_hours", "core-h", "core_hours",
     "(cores_allocated - cores used on average) x wall hours"),
    ("idle_canonical_core_hours", "core-h", "unit_hours",
     "idle cores and idle memory (allocation - mem_sizing_peak_bytes) in whole canonical "
     "units x wall hours (OSG: 3 cores + 3 GB idle = 1, 3 cores + 1 GB = 0, 2 cores + 6 GB = 2)"),
    ("idle_limited_by", "text", None, "which of cores or memory limited the idle canonical units "
     "(cores, memory or both)"),
    ("gpu_hours", "GPU-h", "gpu_hours", "gpus_allocated x wall hours"),
    ("idle_gpu_hours", "GPU-h", "gpu_hours", "gpu_hours x (1 - gpu_util_avg_percent / 100)"),
    ("outcome", "text", None,
     "goodput (exit code 0) or badput (another exit code, a signal, or the "
     "scheduler ended it); at the job's end from its exit status, then the scheduler's once "
     "reconciled (cancelled, time limit, out of memory, held, removed, evicted, preempted, "
     "node failure: docs/accounting.md)"),
    ("outcome_reason", "text", None, "why: completed (exit code 0), failed (exit code N), killed "
     "by SIGNAL; reconciled: the scheduler's end, e.g. cancelled (scancel): by alice, held "
     "(code 12.2): ..., evicted (code 1013)"),
    ("outcome_cause", "text", None, "whose doing a badput run was (reconciled): user (its own "
     "failure, a limit it hit, its owner's removal), site (the node, the pilot, a "
     "configuration), preemption, or unknown; none for goodput"),
    ("cut_short", "count", "flag",
     "1 when the run ended without its end-of-job record (the scheduler "
     "SIGKILLed the sampler with the job after the vacate time, or the node went down): its "
     "figures are its samples' fold, up to the last one; 0 when the end-of-job read was made"),
    ("missing_seconds_max", "s", "wall",
     "at most this much of the run's end is not in its figures: "
     "one sampling interval for a cut-short run (a live sampler would have sampled again), "
     "the time after the last read where the job's cgroup went before its final read, else 0"),
    ("sample_gaps", "count", "count",
     "stretches between samples (or from the start to the first) longer than two sampling "
     "intervals and a second: the sampler was held up (a busy node, a stalled file system)"),
    ("sample_gap_seconds", "s", "wall",
     "seconds of those gaps no sample covers (each gap less one interval)"),
    ("sample_gap_longest_seconds", "s", "wall", "the longest of them"),
    ("failed_reads", "count", "count", "samples whose probe read failed (nothing known then)"),
    ("completeness_percent", "%", "percent",
     "the share of the run its data covers: wall less the gaps, a cut-short end, and one "
     "interval for each read that failed and each point the spool lost (reports also count "
     "the samples the store does not hold); below the site's [report] "
     "min_completeness_percent the advice that rests on what the samples saw is withheld, "
     "and `jobmon act` does not act below [actions] min_completeness_percent"),
    ("completeness_reasons", "text", None,
     "why the data is not whole or exact: gaps, a cut-short end, failed reads, lost points, "
     "monitoring errors, figures that are bounds (procfs mode), energy or GPU figures "
     "missing; \"; \" between them, empty when there is nothing to say"),
    ("reconciled", "count", "flag",
     "1 once the scheduler's record of the run was applied (`jobmon "
     "reconcile`), or once it was clear there is none to apply; 0 until then"),
    ("scheduler_state", "text", None, "how the scheduler says the run ended (reconciled): Slurm's "
     "State (COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, PREEMPTED, NODE_FAIL, "
     "REQUEUED, ...) or HTCondor's (completed, removed, held, evicted); none: no record"),
    ("scheduler_code", "", "code",
     "HTCondor's HoldReasonCode of a held run, VacateReasonCode of an "
     "evicted one (reconciled)"),
    ("scheduler_subcode", "", "code", "HTCondor's HoldReasonSubCode (reconciled)"),
    ("cancelled_by", "text", None, "who cancelled the run (reconciled): the user Slurm names "
     "(sacct --json), or the uid of `CANCELLED by UID` (its text form)"),
    ("scheduler_user", "text", None,
     "whose job the scheduler says the run was (reconciled): Slurm's "
     "User, HTCondor's Owner"),
    ("scheduler_memory_bytes", "bytes", "memory", "the scheduler's own memory figure of the run "
     "(reconciled): HTCondor's MemoryUsage (anon + shmem polled every 5 s), Slurm's MaxRSS "
     "(the largest step's sample every JobAcctGatherFrequency)"),
    ("scheduler_cpu_seconds", "s", "cpu",
     "the scheduler's own CPU figure of the run (reconciled): "
     "HTCondor's RemoteUserCpu + RemoteSysCpu, Slurm's TotalCPU"),
    ("batch", "text", None,
     "the batch the job belongs to, as `jobmon report` groups them: \"array "
     "12345\" (Slurm array), \"batch NAME\" (HTCondor JobBatchName), \"dag SCHEDD#ID\" "
     "(DAGManJobId), \"cluster SCHEDD#4711\" (an HTCondor cluster); absent for a lone job"),
    ("advice", "text", None, "the advice on the run (docs/reports.md), one line per rule as "
     "`text (rule)`, \" | \" between them, at its end (in the summaries shipped to "
     "InfluxDB: other stores' readers compute it) and again once reconciled; empty when no "
     "rule has any"),
    ("ownership", "text", None,
     "whose job the run is (docs/security.md): own, claim (the scheduler "
     "names another user: counted nowhere), unconfirmed (counted, marked), local (no "
     "scheduler); written by the shipper and `jobmon reconcile`, never by the job"),
    ("cpu_idle_samples", "count", "count",
     "samples in which the job used under 0.01 cores while it had processes (stall suspect)"),
    ("cpu_idle_longest_seconds", "s", "wall", "the longest stretch of cpu_idle_seconds"),
    ("gpu_unused_longest_seconds", "s", "wall", "the longest stretch of gpu_unused_seconds"),
    ("idle_allocation", "text", None, "which allocation the job held idle at a stretch for at "
     "least the site's [report] idle_allocation_seconds (600): cores, gpus, cores,gpus, or "
     "empty"),
    ("gpu_idle_samples", "count", "count",
     "samples in which the job's GPUs were at 0 % utilization"),
    ("mem_growth_bytes_per_hour", "bytes/h", "signed",
     "what resident memory grew by per hour in the run's second half (the start-up left "
     "out), without the samples that fall to its end (the exit's teardown): the median slope "
     "between every two of them (Theil-Sen, at most 64 samples kept evenly spaced over the run)"),
    ("mem_rising", "count", "flag",
     "1 when resident memory rose steadily (a leak suspect): its peak "
     "came in the last fifth of the samples, and the line up to it fits them with R^2 >= 0.8 "
     "and rose by 25 % of its start over >= 10 samples"),
), SUMMARY_ROWS)
