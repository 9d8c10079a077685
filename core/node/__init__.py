"""The node GPU reader (`jobmon gpu-reader`): one per node, outside the jobs' cgroups, it
asks NVML about every GPU at a fixed period and publishes the answers for the per-job
samplers (the directory contract is probes/gpu_published.py), so no job loads NVML.

collect.py    one refresh: NVML (or a recording) and /proc -> the published snapshot
recorded.py   a recorded NVML: the same calls, answered from a file (tests, demos)
reader.py     the service: refresh, publish atomically, repeat
"""
