#!/usr/bin/env bash
# Set up (tests/setup.sh) and run the whole test suite. Needs root: real cgroups, test users.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/setup.sh
exec .venv/bin/python -m pytest -ra "$@"
