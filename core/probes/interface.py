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
