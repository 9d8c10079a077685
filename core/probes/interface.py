"""The one small interface every probe has (Probe), and NoProbe for a job never seen.
`read()` returns the sample fields a probe can measure now (a subset of
jobmon.metrics.SAMPLE_NAMES, counters cumulative since the job began); fields it cannot
measure are left out, never guessed."""


class Probe:
    method = "none"

    def read(self, final=False):
        """Current values: {field: number}. final: the job is over, the last read (a probe
        reads then what costs too much to read every sample)."""
        raise NotImplementedError

    def alive(self):
        """True while any process of the job is left (for jobs jobmon did not start)."""
        raise NotImplementedError

    def pids(self):
        """Pids of the job's live processes."""
        raise NotImplementedError

    def sampled_pids(self):
        """Pids of the job's live processes as the last read() found them, for what looks
        at them right after it (a probe that keeps them need not look again)."""
        return self.pids()

    def limits(self):
        """What the kernel holds the job to: {"cores": n} when its processes may run on
        fewer CPUs than the node has (a cpuset, taskset); cgroup probes add their CPU quota
        and memory limit ({"memory_bytes": n}). Read while the job runs."""
        from ..summary.efficiency import affinity_cores
        try:   # the processes the last read found: a probe that keeps them looks no more
            cores = affinity_cores(self.sampled_pids())
        except OSError:
            cores = None
        return {} if cores is None else {"cores": cores}

    def close(self):
        pass


class NoProbe:
    """For a job whose cgroup was never seen: nothing measured, nothing guessed."""
    method = "none"

    def read(self, final=False):
        return {}

    def pids(self):
        return []

    sampled_pids = pids

    def close(self):
        pass


# what every probe reads (the sampler adds cpu_cores and mem_resident_peak_bytes from them),
# declared (jobmon.metrics.declared)
METRICS = (
    {"name": "cpu_user_seconds", "unit": "s", "range": "cpu", "kind": "counter", "method": "exact",
     "meaning": "CPU time in user mode of every process the job ran so far, exited ones included"},
    {"name": "cpu_system_seconds", "unit": "s", "range": "cpu", "kind": "counter",
     "method": "exact",
     "meaning": "CPU time in kernel mode of every process the job ran so far, exited ones "
                "included"},
    {"name": "cpu_cores", "unit": "cores", "range": "cores", "kind": "gauge", "method": "derived",
     "meaning": "CPU seconds used per wall-clock second over the last interval (2.0 = two busy "
                "cores)"},
    {"name": "mem_resident_bytes", "unit": "bytes", "range": "memory", "kind": "gauge",
     "method": "exact",
     "meaning": "resident memory: anonymous + shared memory (tmpfs/shm). cgroup: memory.stat; "
                "procfs: sum of Pss_Anon + Pss_Shmem, so pages shared by forked workers count "
                "once (PSS re-read within a CPU budget and 128 MiB of page tables walked per "
                "sample, carried forward from RSS and faults in between; a process larger than "
                "that: the pages it faulted in)",
     "note": "procfs mode: estimated (PSS within a CPU budget, carried forward)"},
    {"name": "mem_cache_bytes", "unit": "bytes", "range": "memory", "kind": "gauge",
     "method": "exact",
     "meaning": "page cache: file pages charged to the job's cgroup (procfs: file pages mapped by "
                "the job, Pss_File), reclaimable by the kernel",
     "note": "procfs mode: the file pages the job maps"},
    {"name": "mem_swap_bytes", "unit": "bytes", "range": "bytes", "kind": "gauge",
     "method": "exact", "meaning": "memory of the job swapped out"},
    {"name": "mem_resident_peak_bytes", "unit": "bytes", "range": "memory", "kind": "gauge",
     "method": "estimated",
     "meaning": "running resident peak: the largest of every sampled mem_resident_bytes and, "
                "where jobmon reaps the job's processes, the kernel's high-water mark of each one "
                "it reaped (ru_maxrss, VmHWM), which also counts the file-backed pages a process "
                "mapped (program, libraries)"},
    {"name": "mem_peak_bytes", "unit": "bytes", "range": "memory", "kind": "gauge",
     "method": "exact",
     "meaning": "kernel high-water mark of all memory charged to the job's cgroup, page cache "
                "included (memory.peak on v2, memory.max_usage_in_bytes on v1); absent in procfs "
                "mode"},
    {"name": "read_bytes", "unit": "bytes", "range": "bytes", "kind": "counter", "method": "exact",
     "meaning": "bytes the job caused to be read from storage",
     "note": "local block devices only: network file systems are not in it (network_fs names "
             "those the job used)",
     "panel": ({"title": "I/O rates", "how": "rate", "alias": "read_rate", "unit": "binBps",
                "description": "read/write: storage on local block devices only (a network or "
                "FUSE file system's I/O is not in them: the summary's network_fs names those "
                "the job used);"},)},
    {"name": "write_bytes", "unit": "bytes", "range": "bytes", "kind": "counter",
     "method": "exact", "meaning": "bytes the job caused to be written to storage",
     "note": "local block devices only: network file systems are not in it (network_fs names "
             "those the job used); procfs mode: written less cancelled, never going back (a write "
             "cancelled after a sample counted it stays counted)",
     "panel": ({"title": "I/O rates", "how": "rate", "alias": "write_rate", "unit": "binBps"},)},
    {"name": "rchar_bytes", "unit": "bytes", "range": "bytes", "kind": "counter",
     "method": "exact",
     "meaning": "bytes passed through read()-like system calls (storage, page cache, pipes, "
                "sockets)",
     "panel": ({"title": "I/O rates", "how": "rate", "alias": "rchar_rate", "unit": "binBps",
                "description": "rchar/wchar: every read()/write()-like call, on any file "
                "system, pipe or socket."},)},
    {"name": "wchar_bytes", "unit": "bytes", "range": "bytes", "kind": "counter",
     "method": "exact",
     "meaning": "bytes passed through write()-like system calls (storage, page cache, pipes, "
                "sockets)",
     "panel": ({"title": "I/O rates", "how": "rate", "alias": "wchar_rate", "unit": "binBps"},)},
    {"name": "mem_major_faults", "unit": "count", "range": "count", "kind": "counter",
     "method": "exact",
     "meaning": "major page faults: pages the job waited to have read back from disk or swap "
                "(cgroup `memory.stat` pgmajfault); a job thrashing at its memory limit keeps "
                "refaulting its own pages"},
    {"name": "oom_kills", "unit": "count", "range": "count", "kind": "counter", "method": "exact",
     "meaning": "processes of the job the kernel's OOM killer killed (`memory.events` oom_kill on "
                "v2, `memory.oom_control` oom_kill on v1)"},
    {"name": "procs", "unit": "count", "range": "count", "kind": "gauge", "method": "exact",
     "meaning": "processes of the job alive at the sample",
     "panel": ({"title": "Processes and threads", "how": "max", "alias": "procs",
                "unit": "none"},)},
    {"name": "threads", "unit": "count", "range": "count", "kind": "gauge", "method": "exact",
     "meaning": "threads (kernel tasks) of the job alive at the sample",
     "panel": ({"title": "Processes and threads", "how": "max", "alias": "threads",
                "unit": "none"},)},
    {"name": "mem_limit_bytes", "unit": "bytes", "range": "bytes", "kind": "gauge",
     "method": "recorded",
     "meaning": "the memory limit the kernel holds the job to (its cgroup's), once read (from the "
                "first samples on)"},
)
# and the end-of-job totals of two of them (the others': jobmon.summary.fold)
FIGURES = (
    {"name": "mem_major_faults", "fold": "last", "combine": "sum",
     "meaning": "the run's total (per sample, above)",
     "report": ({"group": "memory", "label": "major page faults", "unit": "count"},)},
    {"name": "oom_kills", "fold": "last", "combine": "sum",
     "meaning": "the run's total (per sample, above)"},
)
