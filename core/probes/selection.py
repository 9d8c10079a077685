"""Which probe measures a job (its cgroups', else a procfs walk), and what the node reader
adds to it: the job's GPUs, its share of the node's energy, its network counters."""
import os


def select(pid=None, cgroups=None, root=None, include_root=False, command=None):
    """The probe for a job: its cgroups if given, else a procfs walk from `root` (command:
    the pid jobmon started, when root is jobmon)."""
    if cgroups is not None:
        if cgroups.version == 2:
            from .cgroup_v2 import CgroupV2Probe
            return CgroupV2Probe(cgroups)
        from .cgroup_v1 import CgroupV1Probe
        return CgroupV1Probe(cgroups)
    from .procfs import ProcfsProbe
    return ProcfsProbe(root or pid or os.getpid(), include_root=include_root, command=command)


# where the node reader publishes (jobmon.probes.gpu_published reads it; importing that,
# and json with it, costs ~1 MiB of the job's memory, so only where the dir exists); a
# reader of GPUs only (`jobmon gpu-reader`) publishes in GPU_DIR
NODE_DIR = "/run/jobmon-node"
GPU_DIR = "/run/jobmon-gpu"


def node_dir(environ=os.environ):
    """$JOBMON_NODE_DIR, else $JOBMON_GPU_DIR (its name before the GPU reader became the
    node reader), else /run/jobmon-node, or /run/jobmon-gpu where only that exists."""
    d = environ.get("JOBMON_NODE_DIR") or environ.get("JOBMON_GPU_DIR")
    if d:
        return d
    return GPU_DIR if not os.path.isdir(NODE_DIR) and os.path.isdir(GPU_DIR) else NODE_DIR


def with_node(probe, warn, cgroups=None, environ=os.environ):
    """probe plus what the node reader publishes for the job: its GPUs (with_gpus), its
    share of the node's energy and its network counters (probes/node_probe.py), unless
    JOBMON_NODE=off. cgroups: the job's (its cgroup v2, where it has one, is what its
    network traffic is counted by)."""
    directory = node_dir(environ)
    probe = with_gpus(probe, warn, directory, environ)
    if environ.get("JOBMON_NODE", "auto") == "off" or not os.path.isdir(directory):
        return probe
    v2 = None
    if cgroups is not None:
        v2 = cgroups.dirs.get("v2") if cgroups.version == 2 else \
            getattr(cgroups, "pressure_dir", None)
    try:
        from .node_probe import NodeProbe
        return NodeProbe(probe, directory, warn, v2)
    except Exception as e:
        warn(f"no energy or network figures: node reader's directory {directory} refused: {e}")
        return probe


def with_gpus(probe, warn, directory, environ=os.environ):
    """probe plus the GPU fields of the job's GPUs. JOBMON_GPU says where they come from:
    "auto" (default): the node reader (`jobmon node-reader`) where its directory exists,
    else none; "node": the reader or a warning; "nvml": NVML loaded in this process where
    the node has an NVIDIA driver (~19 MiB of the job's memory); "off". If the source
    fails, warn(message): no GPU fields."""
    mode = environ.get("JOBMON_GPU", "auto")
    if mode == "off":
        return probe
    if mode == "nvml":
        if not os.path.exists("/dev/nvidiactl"):   # no driver: nothing to load
            return probe
        try:
            from .nvml import gpu_probe
            return gpu_probe(probe, environ)
        except Exception as e:
            warn(f"no GPU metrics: {e}")
            return probe
    if mode not in ("auto", "node"):
        warn(f"JOBMON_GPU={mode!r} is none of auto, node, nvml, off: no GPU metrics")
        return probe
    if os.path.isdir(directory) and (mode == "node" or os.path.exists(
            os.path.join(directory, "gpus.json")) or os.path.exists("/dev/nvidiactl")):
        try:
            from .gpu_node import node_probe
            return node_probe(probe, directory, warn, environ)
        except Exception as e:
            warn(f"no GPU metrics: node reader's directory {directory} refused: {e}")
            return probe
    if mode == "node" or os.path.exists("/dev/nvidiactl"):
        warn(f"no GPU metrics: no node reader on this node ({directory} is missing; start "
             "`jobmon node-reader`, or set JOBMON_GPU=nvml to load NVML in the job)")
    return probe
