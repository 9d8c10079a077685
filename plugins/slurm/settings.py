"""What core needs of Slurm inside every job, as plain values (read through
jobmon.schedulers.settings; this module imports nothing): its section of the site file
(docs/slurm.md, docs/configuration.md) and its key of [actions]."""

# section -> key -> (type, default), merged into the site file's schema (jobmon.config)
SCHEMA = {
    "slurm": {                                # the Prolog's samplers; docs/slurm.md
        "enabled": (bool, True),              # false: the Prolog starts no sampler
        "interval": (float, 10.0),            # seconds between samples
        "cgroup_wait_seconds": (float, 300.0),   # longest wait for the job's cgroup
        "end_wait_seconds": (float, 10.0),    # after the job: wait for the Epilog's status
        "warnings": (str, "syslog"),          # the samplers' warnings: syslog, none, a file
        "sacct": (str, "sacct"),              # read side: the sacct program
        "accounting": (str, "auto"),          # read side: auto, sacct, pyslurm
    },
    "actions": {                              # `jobmon act` (docs/actions.md)
        "slurm_action": (str, "requeuehold"),  # requeuehold (pending, held) or cancel
    },
}
CHOICES = {("slurm", "accounting"): ("auto", "sacct", "pyslurm"),
           ("actions", "slurm_action"): ("requeuehold", "cancel")}
POSITIVE = {("slurm", "interval"), ("slurm", "cgroup_wait_seconds")}
NOT_NEGATIVE = {("slurm", "end_wait_seconds")}

# its job ids need no instance to be told apart
QUALIFIER_TAGS = ()
