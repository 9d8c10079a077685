"""Site configuration: /etc/jobmon/jobmon.toml, $JOBMON_CONFIG or --config, then
JOBMON_<SECTION>_<KEY> environment overrides. Standard library only (read inside jobs).

Secrets are never values in this file or the environment: only paths to files that must
be readable by their owner alone, read when the shipper or `jobmon query` needs them.
"""
import os
import stat

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

DEFAULT_PATH = "/etc/jobmon/jobmon.toml"

# section -> key -> (type, default). docs/configuration.md documents every key.
SCHEMA = {
    "store": {
        "kind": (str, "local"),               # "local" (embedded file) or "influxdb"
    },
    "influxdb": {
        "api": (str, "v1"),                   # "v1" (/write) or "v2" (influxdb-client)
        "url": (str, "http://127.0.0.1:8086"),
        "database": (str, "jobmon"),          # v1 database; also the InfluxQL read db
        "retention_policy": (str, ""),        # v1; "" = the database's default
        "username": (str, ""),                # v1
        "password_file": (str, ""),           # v1
        "org": (str, ""),                     # v2
        "bucket": (str, ""),                  # v2
        "token_file": (str, ""),              # v2 (and InfluxQL reads from 2.x/3.x)
        "query_database": (str, ""),          # InfluxQL db for reads; default: database
        "timeout_seconds": (float, 10.0),
        "verify_tls": (bool, True),
    },
    "spool": {
        "dir": (str, "/var/spool/jobmon"),
        "max_bytes": (int, 1 << 30),
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
    },
}
CHOICES = {("store", "kind"): ("local", "influxdb"), ("influxdb", "api"): ("v1", "v2")}
POSITIVE = {("influxdb", "timeout_seconds"), ("shipper", "batch_points"),
            ("shipper", "batch_bytes"), ("shipper", "senders"), ("shipper", "poll_seconds")}
SECRET_KEYS = {"password", "token", "secret"}


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
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        if path != DEFAULT_PATH:
            raise ConfigError(f"{path}: no such file")
        path = None
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror}")
    if text is not None:
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:   # its message carries "(at line L, column C)"
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
    return Config(values, path)


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
    if (section, key) in POSITIVE and value <= 0:
        raise ConfigError(f"{where}{section}.{key} must be greater than 0, not {value!r}")
    choices = CHOICES.get((section, key))
    if choices and value not in choices:
        raise ConfigError(f"{where}{section}.{key} must be one of {', '.join(choices)}, "
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
    """Read a secret file; refuse one that anybody but its owner could read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except PermissionError:
        raise ConfigError(f"{key}: cannot read {path}: permission denied (run as the user "
                          f"that owns it: the shipper's service user)")
    except OSError as e:
        raise ConfigError(f"{key}: cannot read {path}: {e.strerror}")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{key}: {path} is not a regular file")
        if st.st_mode & 0o077:
            raise ConfigError(f"{key}: {path} is group/world-accessible (mode "
                              f"{stat.S_IMODE(st.st_mode):04o}); refusing to use it: "
                              f"chmod 600 {path}")
        return f.read().decode().strip()
