"""Reading the site configuration: /etc/jobmon/jobmon.toml, $JOBMON_CONFIG or --config,
then JOBMON_<SECTION>_<KEY> environment overrides, each value checked against the schema;
and the secret files it names, read only where they are needed. Standard library only
(read inside jobs)."""
import os
import stat

from . import report, toml_subset, validate
from .schema import (ABSOLUTE_PATHS, CHOICES, MIN_BATCH_BYTES, MIN_SHARE_BYTES, NOT_NEGATIVE,
                     POSITIVE, SCHEMA, SECRET_KEYS)
from .validate import url_problem

DEFAULT_PATH = "/etc/jobmon/jobmon.toml"
# sections whose `warnings` takes syslog, none or a file (a scheduler's samplers), not a
# fixed choice: the file's directory must exist
WARNINGS_FILE_SECTIONS = tuple(s for s, keys in SCHEMA.items()
                               if "warnings" in keys and (s, "warnings") not in CHOICES)


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
    for section in WARNINGS_FILE_SECTIONS:
        warnings = values[section]["warnings"]
        if warnings in ("syslog", "none"):
            continue
        where = _where(path, text, "warnings")
        if not warnings.startswith("/"):
            raise ConfigError(f"{where}{section}.warnings must be syslog, none or an absolute "
                              f"path, not {warnings!r}")
        if not os.path.isdir(os.path.dirname(warnings)):
            raise ConfigError(f"{where}{section}.warnings: no directory "
                              f"{os.path.dirname(warnings)} for {warnings} (warnings would be "
                              f"lost)")


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
