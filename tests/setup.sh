#!/usr/bin/env bash
# Install everything the test suite needs on a fresh Debian 12 machine (run as root):
# Debian packages, the project in a virtualenv (.venv), and an unprivileged test user.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
mapfile -t pkgs < <(grep -v '^\s*#' tests/debian-packages.txt | grep -v '^\s*$')
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's own interpreter: readable by the unprivileged test user, unlike a per-user one
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e '.[test]'
# an unprivileged user for the procfs-mode and multi-user tests
id jobmon-test >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin jobmon-test
id jobmon-test2 >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin jobmon-test2
# the tree must be readable by them (a fresh clone may sit below a private home)
chmod -R o+rX . 2>/dev/null || true
d=$(pwd); while [ "$d" != / ]; do chmod o+x "$d" 2>/dev/null || true; d=$(dirname "$d"); done
