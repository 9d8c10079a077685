"""The site file's schema: every section's keys with their types and defaults, and what
each must be beyond its type (choices, signs, absolute paths, the spool's and the shipper's
smallest sizes). docs/configuration.md documents every key. Standard library only."""
from . import actions, limits, node, schedulers
from .ownership import OWNERSHIP
from .report import CHOICES as REPORT_CHOICES, POSITIVE as REPORT_POSITIVE, REPORT

# section -> key -> (type, default). docs/configuration.md documents every key. Each
# scheduler's section (and its keys of core's sections) is its plugin's: merged below.
SCHEMA = {
    "store": {
        "kind": (str, "local"),               # "local" (embedded file) or "influxdb"
    },
    "influxdb": {
        "version": (int, 1),                  # the server: 1, 2 or 3 (docs/influxdb3.md)
        "api": (str, "v1"),                   # "v1" (/write) or "v2" (influxdb-client)
        "url": (str, "http://127.0.0.1:8086"),
        "database": (str, "jobmon"),          # job summaries (v1/v3 database); InfluxQL reads
        "samples_database": (str, ""),        # raw samples elsewhere; "": with the summaries
        "retention_policy": (str, ""),        # v1; "" = the database's default
        "username": (str, ""),                # v1
        "password_file": (str, ""),           # v1
        "org": (str, ""),                     # v2
        "bucket": (str, ""),                  # v2
        "token_file": (str, ""),              # 2.x, 3.x: sent on every request
        "query_database": (str, ""),          # InfluxQL db for reads; default: database
        "timeout_seconds": (float, 10.0),
        "verify_tls": (bool, True),
    },
    "spool": {
        "dir": (str, "/var/spool/jobmon"),
        "max_bytes": (int, 1 << 30),
        "max_bytes_per_user": (int, 0),       # each user's share; 0: max_bytes / 4
    },
    "shipper": {
        "state_dir": (str, "/var/lib/jobmon"),
        "cluster": (str, ""),
        "host": (str, ""),                    # default: this node's hostname
        "batch_points": (int, 5000),
        "batch_bytes": (int, 4 << 20),
        "flush_seconds": (float, 2.0),
        "poll_seconds": (float, 1.0),
        "gzip": (bool, True),
        "senders": (int, 2),                  # batches in flight at once
        "retry_initial_seconds": (float, 1.0),
        "retry_max_seconds": (float, 300.0),
        "max_job_days": (float, 31.0),        # lines timed before now - this are refused
    },
    "report": REPORT,                         # advice, cards: core/config/report.py
    "ownership": OWNERSHIP,                   # who runs others' jobs: core/config/ownership.py
    "procs": {                                # per-process breakdown; docs/live.md
        "top": (int, 5),                      # command names shown by CPU and by memory; 0: off
        "every_seconds": (float, 30.0),       # between breakdowns (samples are more often)
        "cmdline": (bool, False),             # store each group's full command line
    },
    "service": {                              # the read service; docs/security.md
        "address": (str, ""),                 # readers: the service's socket path or HOST:PORT
        "socket": (str, "/run/jobmon/read.sock"),  # `jobmon serve`: its Unix socket ("" none)
        "listen": (str, ""),                  # `jobmon serve`: HOST:PORT for MUNGE callers
        "munge_socket": (str, ""),            # munged's socket ("": libmunge's default)
        "admin_group": (str, ""),             # its members read every user's jobs
        "coordinators_file": (str, ""),       # `ACCOUNT: USER ...` lines: they read its jobs
        "read_log": (str, "/var/lib/jobmon-serve/reads.db"),  # who read which job ("" none)
        "read_log_days": (float, 90.0),       # its entries are kept this long
        "read_log_max_bytes": (int, 64 << 20),   # and its oldest dropped past this size
    },
    **node.SCHEMA, **limits.SCHEMA,                # [limits]: core/config/limits.py
    **actions.SCHEMA,                         # `jobmon act`: core/config/actions.py
}
CHOICES = {("store", "kind"): ("local", "influxdb"), ("influxdb", "api"): ("v1", "v2"),
           ("influxdb", "version"): (1, 2, 3),
           **node.CHOICES,
           **actions.CHOICES}
CHOICES.update({("report", k): v for k, v in REPORT_CHOICES.items()})
POSITIVE = {("influxdb", "timeout_seconds"), ("shipper", "batch_points"),
            ("shipper", "batch_bytes"), ("shipper", "senders"), ("shipper", "poll_seconds")}
POSITIVE |= {("spool", "max_bytes"), ("shipper", "retry_initial_seconds"),
             ("shipper", "retry_max_seconds")}
POSITIVE |= {("shipper", "max_job_days"), ("procs", "every_seconds")} | actions.POSITIVE \
    | limits.POSITIVE
NOT_NEGATIVE = {("spool", "max_bytes_per_user"), ("shipper", "flush_seconds"),
                ("procs", "top")} | node.NOT_NEGATIVE \
    | actions.NOT_NEGATIVE
NOT_NEGATIVE |= {("report", k) for k, (t, _d) in SCHEMA["report"].items() if t in (int, float)}
SCHEMA, _choices, _positive, _not_negative = schedulers.merged(SCHEMA, after="shipper")
CHOICES.update(_choices)
POSITIVE |= _positive
NOT_NEGATIVE |= _not_negative
# the longest line jobmon writes (jobmon.influx.schema.MAX_LINE_BYTES) must fit in a batch
MIN_BATCH_BYTES = 64 << 10
# a user's share must hold one job: the room kept for its end-of-job record (MAX_LINE_BYTES)
# and a block for its file; below that every job's reserve would be dropped as it is made
MIN_SHARE_BYTES = (32 << 10) + 4096
# paths that must be absolute: a relative one would depend on each job's working directory
ABSOLUTE_PATHS = (("spool", "dir"), ("shipper", "state_dir"), ("report", "card_dir"),
                  ("service", "socket"), ("service", "coordinators_file"),
                  ("service", "munge_socket"),
                  *node.ABSOLUTE_PATHS, *actions.ABSOLUTE_PATHS)
SECRET_KEYS = {"password", "token", "secret"}
NOT_NEGATIVE -= {("report", k) for k in REPORT_POSITIVE}
POSITIVE |= {("report", k) for k in REPORT_POSITIVE}

