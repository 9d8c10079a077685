"""Site configuration: /etc/jobmon/jobmon.toml, $JOBMON_CONFIG or --config, then
JOBMON_<SECTION>_<KEY> environment overrides. Standard library only (read inside jobs).

Secrets are never values in this file or the environment: only paths to files that must
be readable by their owner alone, read when the shipper or `jobmon query` needs them.

  schema.py       every section's keys, types, defaults and what each must be
  loading.py      the file and the environment read and checked (load), secret files
  report.py, ownership.py, node.py, limits.py, actions.py   sections of their own
  validate.py     checks beyond a value's type; toml_subset.py: TOML without tomllib
"""
from . import actions, limits, node, report, toml_subset, validate
from .loading import (DEFAULT_PATH, Config, ConfigError, load, path_from, read_secret,
                      report_section)
from .ownership import OWNERSHIP
from .report import CHOICES as REPORT_CHOICES, POSITIVE as REPORT_POSITIVE, REPORT
from .schema import (ABSOLUTE_PATHS, CHOICES, MIN_BATCH_BYTES, MIN_SHARE_BYTES, NOT_NEGATIVE,
                     POSITIVE, SCHEMA, SECRET_KEYS)
from .validate import url_problem

__all__ = ("DEFAULT_PATH", "SCHEMA", "CHOICES", "POSITIVE", "NOT_NEGATIVE", "MIN_BATCH_BYTES",
           "MIN_SHARE_BYTES", "ABSOLUTE_PATHS", "SECRET_KEYS", "REPORT", "REPORT_CHOICES",
           "REPORT_POSITIVE", "OWNERSHIP", "Config", "ConfigError", "load", "path_from",
           "read_secret", "report_section", "url_problem", "actions", "limits", "node",
           "report", "toml_subset", "validate")
