"""What a sample holds: one line per figure of the job, every interval (docs/metrics.md).

Each figure's declaration carries its valid range (a kind of jobmon.metrics.ranges): what
one run on one node can physically show. Readers and the shipper set aside any figure
outside it."""

from .declared import SAMPLE_ROWS, place

# name, unit, range (jobmon.metrics.ranges), kind, meaning; a bare name keeps a declared
# metric's place (jobmon.metrics.declared), the others declared follow the table
SAMPLE_FIELDS = place((
    ("cpu_user_seconds", "s", "cpu", "counter",
     "CPU time in user mode of every process the job ran so far, exited ones included"),
    ("cpu_system_seconds", "s", "cpu", "counter",
     "CPU time in kernel mode of every process the job ran so far, exited ones included"),
    ("cpu_cores", "cores", "cores", "gauge",
     "CPU seconds used per wall-clock second over the last interval (2.0 = two busy cores)"),
    ("mem_resident_bytes", "bytes", "memory", "gauge",
     "resident memory: anonymous + shared memory (tmpfs/shm). cgroup: memory.stat; procfs: "
     "sum of Pss_Anon + Pss_Shmem, so pages shared by forked workers count once (PSS re-read "
     "within a CPU budget and 128 MiB of page tables walked per sample, carried forward from "
     "RSS and faults in between; a process larger than that: the pages it faulted in)"),
    ("mem_cache_bytes", "bytes", "memory", "gauge",
     "page cache: file pages charged to the job's cgroup (procfs: file pages mapped by the job, "
     "Pss_File), reclaimable by the kernel"),
    ("mem_swap_bytes", "bytes", "bytes", "gauge", "memory of the job swapped out"),
    ("mem_resident_peak_bytes", "bytes", "memory", "gauge",
     "running resident peak: the largest of every sampled mem_resident_bytes and, where jobmon "
     "reaps the job's processes, the kernel's high-water mark of each one it reaped "
     "(ru_maxrss, VmHWM), which also counts the file-backed pages a process mapped (program, "
     "libraries)"),
    ("mem_peak_bytes", "bytes", "memory", "gauge",
     "kernel high-water mark of all memory charged to the job's cgroup, page cache included "
     "(memory.peak on v2, memory.max_usage_in_bytes on v1); absent in procfs mode"),
    ("read_bytes", "bytes", "bytes", "counter", "bytes the job caused to be read from storage"),
    ("write_bytes", "bytes", "bytes", "counter", "bytes the job caused to be written to storage"),
    ("rchar_bytes", "bytes", "bytes", "counter",
     "bytes passed through read()-like system calls (storage, page cache, pipes, sockets)"),
    ("wchar_bytes", "bytes", "bytes", "counter",
     "bytes passed through write()-like system calls (storage, page cache, pipes, sockets)"),
    ("cpu_pressure_seconds", "s", "wall", "counter",
     "wall time during which at least one runnable thread of the job waited for a CPU: the "
     "kernel's pressure stall information (PSI, `cpu.pressure` some) of the job's cgroup; "
     "where it has none, cpu_wait_seconds instead (pressure_source says which)"),
    ("cpu_wait_seconds", "s", "task_seconds", "counter",
     "time the job's threads were runnable but waiting for a CPU, summed over its threads "
     "(run-queue wait, `/proc/<tid>/schedstat`): taken where the job's cgroup has no PSI "
     "(cgroup v1, procfs mode, PSI off); a thread that exited counts up to the last sample "
     "before, so a lower bound (in procfs mode a process's wait is read at a sample only if "
     "it ran since the one before, so a wait that has not ended by then shows later; a "
     "process found having run under 2 ms is read once it runs again, from its birth, and "
     "does not count if it exits before the next sample)"),
    "cpu_throttled_seconds",   # declared beside its probe (jobmon.metrics.declared)
    ("mem_pressure_seconds", "s", "wall", "counter",
     "wall time during which at least one of the job's threads stalled on memory: reclaim, "
     "swap-in, refaulting pages it had to give up (PSI `memory.pressure` some; cgroup v2, or "
     "the v2 cgroup jobmon makes beside v1 ones on a hybrid host)"),
    ("mem_pressure_full_seconds", "s", "wall", "counter",
     "wall time during which all of the job's non-idle threads stalled on memory at once: it "
     "made no progress (PSI `memory.pressure` full)"),
    ("io_pressure_seconds", "s", "wall", "counter",
     "wall time during which at least one of the job's threads waited for block I/O (PSI "
     "`io.pressure` some)"),
    ("io_pressure_full_seconds", "s", "wall", "counter",
     "wall time during which all of the job's non-idle threads waited for block I/O at once "
     "(PSI `io.pressure` full)"),
    ("mem_major_faults", "count", "count", "counter",
     "major page faults: pages the job waited to have read back from disk or swap (cgroup "
     "`memory.stat` pgmajfault); a job thrashing at its memory limit keeps refaulting its "
     "own pages"),
    "mem_limit_hits",   # these three declared beside their probe too
    "mem_high_hits",
    "oom_events",
    ("oom_kills", "count", "count", "counter",
     "processes of the job the kernel's OOM killer killed (`memory.events` oom_kill on v2, "
     "`memory.oom_control` oom_kill on v1)"),
    ("procs", "count", "count", "gauge", "processes of the job alive at the sample"),
    ("threads", "count", "count", "gauge",
     "threads (kernel tasks) of the job alive at the sample"),
    ("gpu_count", "count", "gpus", "gauge",
     "GPUs (or MIG slices) of the job: those in CUDA_VISIBLE_DEVICES, else every GPU the job "
     "may open (absent where no GPU source runs: docs/gpu.md)"),
    ("gpu_util_percent", "%", "percent", "gauge",
     "share of time a kernel ran on the job's GPUs (NVML utilization, device-wide, averaged "
     "over the job's GPUs; other users of a shared GPU count too)"),
    ("gpu_mem_bytes", "bytes", "memory", "gauge",
     "GPU memory held by the job's processes, summed over its GPUs (NVML per-process use)"),
    ("gpus_in_use", "count", "gpus", "gauge",
     "of the job's GPUs, those one of its processes is on (holds a context: NVML's process "
     "list, through the node reader)"),
    ("cpu_idle_seconds", "s", "wall", "gauge",
     "how long the job has used under 0.01 cores while it had processes, this stretch (0 "
     "while it uses CPU): cores allocated and idle"),
    ("gpu_unused_seconds", "s", "wall", "gauge",
     "how long at least one of the job's GPUs has had none of its processes on it, this "
     "stretch (0 while every one has): GPUs allocated and idle"),
    ("sample_gap_seconds", "s", "wall", "gauge",
     "seconds of the run so far that no sample covers (jobmon.summary.completeness: each "
     "stretch between samples longer than two intervals and a second, less one interval); "
     "only once there is a gap"),
    ("mem_limit_bytes", "bytes", "bytes", "gauge",
     "the memory limit the kernel holds the job to (its cgroup's), once read (from the "
     "first samples on)"),
    ("gpu_energy_joules", "J", "joules", "counter",
     "energy the job's GPUs used since the job started (NVML, whole GPUs, none for MIG "
     "slices; Volta and later). Node reader: every sample, start and end interpolated between "
     "its readings; JOBMON_GPU=nvml: every 10 s and at the end (one read costs ~4 ms). A GPU "
     "shared with another job gives both its whole energy (gpu_shared_samples)"),
    ("cpu_energy_joules", "J", "joules", "counter",
     "CPU package energy apportioned to the job since it started: between two of the node "
     "reader's readings, the node's RAPL package energy x the job's share of the node's CPU "
     "time (energy_share: busy or capacity; docs/energy.md)"),
    ("dram_energy_joules", "J", "joules", "counter",
     "DRAM energy apportioned the same way, by CPU time (RAPL dram zones; none on AMD)"),
    ("energy_joules", "J", "joules", "counter",
     "the job's energy since it started: gpu_energy_joules + cpu_energy_joules + "
     "dram_energy_joules, those there are (energy_parts says which)"),
    ("power_watts", "W", "watts", "gauge", "energy_joules per second over the last interval"),
    ("co2e_grams", "gCO2e", "grams", "counter",
     "CO2 equivalent of energy_joules: each interval's energy x the site's carbon intensity "
     "then (gCO2e per kWh: a constant, or a time series the site provides)"),
    ("net_rx_bytes", "bytes", "bytes", "counter",
     "bytes the job's sockets received, loopback included: IP packets from their network "
     "header on, counted per cgroup v2 by the node reader's BPF program; absent without a "
     "job cgroup v2 or node reader (net_source says why; docs/network.md)"),
    ("net_tx_bytes", "bytes", "bytes", "counter",
     "bytes the job's sockets sent, counted the same way"),
    ("net_rx_packets", "count", "count", "counter",
     "packets the job's sockets received, as the kernel hands them over (a GRO aggregate "
     "counts once)"),
    ("net_tx_packets", "count", "count", "counter",
     "packets the job's sockets sent, as the kernel passes them down (a GSO/TSO segment "
     "counts once)"),
), SAMPLE_ROWS)
# the node reader's counters: the summary keeps each one's last value seen (a sample may
# lack them while the reader is down)
NODE_COUNTERS = ("gpu_energy_joules", "cpu_energy_joules", "dram_energy_joules",
                 "energy_joules", "co2e_grams", "net_rx_bytes", "net_tx_bytes",
                 "net_rx_packets", "net_tx_packets")

# why a job waited (probes/pressure.py) and what its memory limit did to it: counters
# whose end-of-job totals the summary keeps
STALL_COUNTERS = ("cpu_pressure_seconds", "cpu_wait_seconds", "mem_pressure_seconds",
                  "mem_pressure_full_seconds", "io_pressure_seconds", "io_pressure_full_seconds",
                  "mem_major_faults", "oom_kills")
