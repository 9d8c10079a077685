"""What core needs of HTCondor inside every job, as plain values (read through
jobmon.schedulers.settings; this module imports nothing): its section of the site file
(docs/htcondor.md, docs/configuration.md) and the tags that qualify its job ids."""

# section -> key -> (type, default), merged into the site file's schema (jobmon.config)
SCHEMA = {
    "condor": {                               # the HTCondor wrapper; docs/htcondor.md
        "enabled": (bool, True),              # false: every job runs unmonitored
        "allow_opt_out": (bool, True),        # a job may say +JobMonitor = false
        "interval": (float, 10.0),            # seconds between samples, unless the job asks
        "min_interval": (float, 1.0),         # +JobMonitorInterval is clamped to these
        "max_interval": (float, 300.0),
        "warnings": (str, "syslog"),          # where the wrapper's warnings go
        "schedd": (str, ""),                  # read side: "" none, "local", or a schedd name
        "history": (str, ""),                 # read side: history files (glob patterns, ":")
        "event_log": (str, ""),               # read side: job event logs (glob patterns, ":")
    },
}
CHOICES = {("condor", "warnings"): ("syslog", "stderr", "none")}
POSITIVE = {("condor", "interval"), ("condor", "min_interval"), ("condor", "max_interval")}
NOT_NEGATIVE = set()

# the tag that names the schedd a job id is of (two schedds' 4711.0 are two jobs): stored
# as a tag of its own (InfluxDB), its object's qualifier_tags, and what the wrapper's
# end-of-job summary names a batch with
QUALIFIER_TAGS = ("schedd",)
