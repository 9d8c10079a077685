"""Site configuration: /etc/jobmon/jobmon.toml, $JOBMON_CONFIG or --config, then
JOBMON_<SECTION>_<KEY> environment overrides. Standard library only (read inside jobs).

Secrets are never values in this file or the environment: only paths to files that must
be readable by their owner alone, read when the shipper or `jobmon query` needs them.
"""
import os
import stat

from . import actions, limits, node, report, toml_subset, validate
from .validate import url_problem
from .ownership import OWNERSHIP
from .report import CHOICES as REPORT_CHOICES, POSITIVE as REPORT_POSITIVE, REPORT

DEFAULT_PATH = "/etc/jobmon/jobmon.toml"

# section -> key -> (type, default). docs/configuration.md documents every key.
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
    "slurm": {                                # the Prolog's samplers; docs/slurm.md
        "enabled": (bool, True),              # false: the Prolog starts no sampler
        "interval": (float, 10.0),            # seconds between samples
        "cgroup_wait_seconds": (float, 300.0),   # longest wait for the job's cgroup
        "end_wait_seconds": (float, 10.0),    # after the job: wait for the Epilog's status
        "warnings": (str, "syslog"),          # the samplers' warnings: syslog, none, a file
        "sacct": (str, "sacct"),              # read side: the sacct program
        "accounting": (str, "auto"),          # read side: auto, sacct, pyslurm
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
           ("condor", "warnings"): ("syslog", "stderr", "none"),
           ("slurm", "accounting"): ("auto", "sacct", "pyslurm"), **node.CHOICES,
           **actions.CHOICES}
CHOICES.update({("report", k): v for k, v in REPORT_CHOICES.items()})
POSITIVE = {("influxdb", "timeout_seconds"), ("shipper", "batch_points"),
            ("shipper", "batch_bytes"), ("shipper", "senders"), ("shipper", "poll_seconds"),
            ("condor", "interval"), ("condor", "min_interval"), ("condor", "max_interval")}
POSITIVE |= {("spool", "max_bytes"), ("shipper", "retry_initial_seconds"),
             ("shipper", "retry_max_seconds")}
POSITIVE |= {("slurm", "interval"), ("slurm", "cgroup_wait_seconds"),
             ("shipper", "max_job_days"), ("procs", "every_seconds")} | actions.POSITIVE \
    | limits.POSITIVE
NOT_NEGATIVE = {("spool", "max_bytes_per_user"), ("shipper", "flush_seconds"),
                ("slurm", "end_wait_seconds"), ("procs", "top")} | node.NOT_NEGATIVE \
    | actions.NOT_NEGATIVE
NOT_NEGATIVE |= {("report", k) for k, (t, _d) in SCHEMA["report"].items() if t in (int, float)}
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


class ConfigError(Exception):
    pass


class Config:
    def __init__(self, values, path):
        self.path = path              # the file read, or None
        self.values = values          # {section: {key: value}}

    def __getitem__(self, section):
        return self.values[section]

    @property
    def uses_influxdb(self):
        return self.values["store"]["kind"] == "influxdb"

    @property
    def databases(self):
        """(summaries, samples): the databases (v2: buckets) jobmon writes to; the same
        name twice where the site keeps everything in one."""
        c = self.values["influxdb"]
        main = c["bucket"] if c["api"] == "v2" and c["bucket"] else c["database"]
        return main, c["samples_database"] or main

    def secret(self, key):
        """The secret whose file `influxdb.<key>` names ("" when none is configured)."""
        path = self.values["influxdb"][key]
        return read_secret(path, f"influxdb.{key}") if path else ""


def path_from(explicit=None, env=None):
    env = os.environ if env is None else env
    return explicit or env.get("JOBMON_CONFIG") or DEFAULT_PATH


def load(explicit=None, env=None):
    """The configuration; defaults when no file exists at the default path."""
    env = os.environ if env is None else env
    path = path_from(explicit, env)
    raw, text = {}, None
    try:
        text = validate.read_text(path)     # never blocks: a FIFO is refused, not opened
    except FileNotFoundError:
        if path != DEFAULT_PATH:
            raise ConfigError(f"{path}: no such file")
        path = None
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror}")
    if text is not None:
        raw = toml_subset.parse(text)
    if raw is None:
        try:
            raw = _toml().loads(text)
        except _toml().TOMLDecodeError as e:   # its message carries "(at line L, column C)"
            raise ConfigError(f"{path}: {e}")
    values = {s: {k: d for k, (_t, d) in keys.items()} for s, keys in SCHEMA.items()}
    for section, keys in raw.items():
        if section not in SCHEMA:
            raise ConfigError(f"{_where(path, text, section)}unknown section [{section}] "
                              f"(known: {', '.join(SCHEMA)})")
        if not isinstance(keys, dict):
            raise ConfigError(f"{_where(path, text, section)}{section} must be a [section]")
        for key, value in keys.items():
            values[section][key] = _check(section, key, value, _where(path, text, key))
    for section, keys in SCHEMA.items():     # environment overrides
        for key, (typ, _d) in keys.items():
            name = f"JOBMON_{section}_{key}".upper()
            if name in env:
                values[section][key] = _check(section, key, _from_env(env[name], typ, name),
                                              f"environment {name}: ")
    _check_shipping(values, path, text)
    _check_paths(values, path, text)
    for key, problem in validate.service_problems(values):
        raise ConfigError(f"{_where(path, text, key)}{problem}")
    return Config(values, path)


def report_section(warn=None):
    """The site's [report] section, or its defaults where the configuration cannot be read
    (said through `warn`)."""
    try:
        return load()["report"]
    except Exception as e:
        if warn:
            warn(f"site configuration unusable ({e}); the [report] defaults apply")
        return report.defaults()


def _check_shipping(values, path, text):
    """Checks of the InfluxDB path that involve more than one key's type."""
    def fail(key, msg):
        raise ConfigError(f"{_where(path, text, key.split('.')[1])}{key} {msg}")
    sp, sh, db = values["spool"], values["shipper"], values["influxdb"]
    problem = url_problem(db["url"])
    if problem:
        fail("influxdb.url", problem)
    if sp["max_bytes"] < MIN_SHARE_BYTES:
        fail("spool.max_bytes", f"must be at least {MIN_SHARE_BYTES} (one job's file and "
             f"the room kept for its end-of-job record), not {sp['max_bytes']}")
    if db["version"] == 3 and not db["token_file"]:
        fail("influxdb.token_file", "must name the token's file: InfluxDB 3 refuses every "
             "request without a token (docs/influxdb3.md)")
    if db["version"] == 3 and db["retention_policy"]:
        fail("influxdb.retention_policy", "must be empty: InfluxDB 3 has no retention "
             "policies (it would write to a database named DATABASE/POLICY); give the raw "
             "samples their own database with its own retention period (samples_database)")
    if sp["max_bytes_per_user"] > sp["max_bytes"]:
        fail("spool.max_bytes_per_user", f"({sp['max_bytes_per_user']}) must not be more "
             f"than spool.max_bytes ({sp['max_bytes']})")
    if not sp["max_bytes_per_user"]:
        sp["max_bytes_per_user"] = min(max(sp["max_bytes"] // 4, MIN_SHARE_BYTES),
                                       sp["max_bytes"])
    elif sp["max_bytes_per_user"] < MIN_SHARE_BYTES:
        fail("spool.max_bytes_per_user", f"must be at least {MIN_SHARE_BYTES} (one job's "
             f"file and the room kept for its end-of-job record, else every job's is "
             f"dropped as soon as it is made), not {sp['max_bytes_per_user']}")
    if sh["batch_bytes"] < MIN_BATCH_BYTES:
        fail("shipper.batch_bytes", f"must be at least {MIN_BATCH_BYTES} (the longest line "
             f"jobmon writes must fit), not {sh['batch_bytes']}")
    if sh["retry_max_seconds"] < sh["retry_initial_seconds"]:
        fail("shipper.retry_max_seconds", f"({sh['retry_max_seconds']}) must not be less "
             f"than shipper.retry_initial_seconds ({sh['retry_initial_seconds']})")


def _check_paths(values, path, text):
    """Paths must be absolute, and a warnings file's directory must exist (else every
    warning would be lost without a word)."""
    for section, key in ABSOLUTE_PATHS:
        value = values[section][key]
        if value and not value.startswith("/"):
            raise ConfigError(f"{_where(path, text, key)}{section}.{key} must be an absolute "
                              f"path, not {value!r}")
    warnings = values["slurm"]["warnings"]
    if warnings not in ("syslog", "none"):
        where = _where(path, text, "warnings")
        if not warnings.startswith("/"):
            raise ConfigError(f"{where}slurm.warnings must be syslog, none or an absolute "
                              f"path, not {warnings!r}")
        if not os.path.isdir(os.path.dirname(warnings)):
            raise ConfigError(f"{where}slurm.warnings: no directory {os.path.dirname(warnings)}"
                              f" for {warnings} (warnings would be lost)")


def _toml():
    """tomllib, imported only for a file toml_subset does not read: it costs more CPU than
    all the rest of a job wrapper's start-up."""
    try:
        import tomllib  # novm: before 3.11 the except below takes tomli
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    return tomllib


def _check(section, key, value, where):
    if key not in SCHEMA[section]:
        hint = ""
        if key in SECRET_KEYS or key.endswith(("password", "token")):
            hint = (f"; secrets never go in the config file: put it in a file readable by its "
                    f"owner only and set {key.split('_')[-1]}_file")
        raise ConfigError(f"{where}unknown key {section}.{key}{hint}")
    typ = SCHEMA[section][key][0]
    if typ is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
        raise ConfigError(f"{where}{section}.{key} must be {typ.__name__}, "
                          f"not {type(value).__name__} ({value!r})")
    if (section, key) in POSITIVE and not value > 0:     # `not >`: NaN fails too
        raise ConfigError(f"{where}{section}.{key} must be greater than 0, not {value!r}")
    if (section, key) in NOT_NEGATIVE and not value >= 0:
        raise ConfigError(f"{where}{section}.{key} must not be negative, not {value!r}")
    if typ is float and value in (float("inf"), float("-inf")):
        raise ConfigError(f"{where}{section}.{key} must be a finite number, not {value!r}")
    choices = CHOICES.get((section, key))
    if choices and value not in choices:
        raise ConfigError(f"{where}{section}.{key} must be one of {', '.join(map(str, choices))}, "
                          f"not {value!r}")
    return value


def _from_env(text, typ, name):
    if typ is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"environment {name}: expected true or false, not {text!r}")
    try:
        return typ(text)
    except ValueError:
        raise ConfigError(f"environment {name}: expected {typ.__name__}, not {text!r}")


def _where(path, text, key):
    """'PATH:LINE: ' for the first line that sets `key` (tomllib gives no positions)."""
    line = None
    if text:
        for n, row in enumerate(text.splitlines(), 1):
            s = row.strip()
            if s.startswith(("[" + key + "]", key + " ", key + "=", f'"{key}"')):
                line = n
                break
    return f"{path}:{line}: " if line else (f"{path}: " if path else "")


def read_secret(path, key):
    """Read a secret file; refuse one that anybody but its owner could read, and anything
    that is not a plain file (a directory, a FIFO that would block, a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except PermissionError:
        raise ConfigError(f"{key}: cannot read {path}: permission denied (run as the user "
                          f"that owns it: the shipper's service user)")
    except OSError as e:
        raise ConfigError(f"{key}: cannot read {path}: {e.strerror}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{key}: {path} is not a regular file")
        if st.st_mode & 0o077:
            raise ConfigError(f"{key}: {path} is group/world-accessible (mode "
                              f"{stat.S_IMODE(st.st_mode):04o}); refusing to use it: "
                              f"chmod 600 {path}")
        data = os.read(fd, 1 << 16)
    except OSError as e:
        raise ConfigError(f"{key}: cannot read {path}: {e.strerror}")
    finally:
        os.close(fd)
    try:
        secret = data.decode().strip()
    except UnicodeDecodeError:
        raise ConfigError(f"{key}: {path} is not UTF-8 text")
    if not secret:   # else the shipper would go on without credentials, refused later
        raise ConfigError(f"{key}: {path} is empty")
    return secret
