"""Probes measure a job; the sampler picks the best one that works at start.

Every probe has the same small interface. `read()` returns the sample fields it can
measure now (a subset of jobmon.metrics.SAMPLE_NAMES, counters cumulative since the
job began); fields it cannot measure are left out, never guessed.
"""
import os


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

    def close(self):
        pass


def select(pid=None, cgroups=None, root=None, include_root=False):
    """The probe for a job: its cgroups if given, else a procfs walk from `root`."""
    if cgroups is not None:
        if cgroups.version == 2:
            from .cgroup_v2 import CgroupV2Probe
            return CgroupV2Probe(cgroups)
        from .cgroup_v1 import CgroupV1Probe
        return CgroupV1Probe(cgroups)
    from .procfs import ProcfsProbe
    return ProcfsProbe(root or pid or os.getpid(), include_root=include_root)


def with_gpus(probe, warn):
    """probe plus the GPU fields when this node has an NVIDIA driver (and JOBMON_GPU is not
    "off"). Without its device node nothing is loaded: ctypes and libnvidia-ml cost memory
    in every job. If NVML fails, warn(message) and the job is measured without GPUs."""
    if os.environ.get("JOBMON_GPU") == "off" or not os.path.exists("/dev/nvidiactl"):
        return probe
    try:
        from .nvml import gpu_probe
        return gpu_probe(probe)
    except Exception as e:
        warn(f"no GPU metrics: {e}")
        return probe
