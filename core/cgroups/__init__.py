"""A job's cgroups: where a process's are (paths), one job's set that its processes join
and jobmon removes when it made them (job_cgroups), a transient one made for a job that has
none (create), and a scheduler's job cgroup found by its names (search, imported on its
own). Standard library only: the per-job path uses it."""
from .create import V2_CONTROLLERS, block_devices, create, for_job
from .job_cgroups import JobCgroups, existing
from .paths import (V1_CONTROLLERS, own, parse_mountinfo, parse_proc_cgroup, resolve,
                    walk)

__all__ = ("V1_CONTROLLERS", "V2_CONTROLLERS", "JobCgroups", "block_devices", "create",
           "existing", "for_job", "own", "parse_mountinfo", "parse_proc_cgroup", "resolve", "walk")
