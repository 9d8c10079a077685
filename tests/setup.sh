#!/usr/bin/env bash
# Install everything the test suite needs on a fresh Debian 12 machine (run as root):
# Debian packages, the project in a virtualenv (.venv), and an unprivileged test user.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
# The tests start every daemon they use by hand (InfluxDB, MariaDB, munged, Slurm), with
# their own config below temp dirs: no package's own service may start while installing.
# Unless the machine already has a policy-rc.d, one that refuses every start (honoured by
# invoke-rc.d and deb-systemd-invoke) is in place while this script runs.
no_start_policy=
if [ ! -e /usr/sbin/policy-rc.d ]; then
    no_start_policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\n# tests/setup.sh: no service starts while installing\nexit 101\n' > "$no_start_policy"
    chmod 755 "$no_start_policy"
    trap 'rm -f "$no_start_policy"' EXIT
fi
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
# pip >= 25.1 writes console scripts that do not import re: ~10 ms less CPU per job
.venv/bin/pip install -q --disable-pip-version-check 'pip>=25.1'
.venv/bin/pip install -q --disable-pip-version-check -e '.[test]'
# the oldest Python jobmon supports (requires-python), where this machine has one: jobmon
# and its dependencies installed for it too (editable: it runs this tree), for
# tests/test_oldest_python.py
oldest=$(.venv/bin/python tests/oldest_python.py)
if [ -n "$oldest" ]; then
    [ -x .venv-oldest/bin/python ] || "$oldest" -m venv .venv-oldest
    .venv-oldest/bin/pip install -q --disable-pip-version-check -e .
fi
# an unprivileged user for the procfs-mode and multi-user tests
id jobmon-test >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin jobmon-test
id jobmon-test2 >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin jobmon-test2
# an admin of the read service (`jobmon serve`): a member of its admin group
getent group jobmon-test-admins >/dev/null || groupadd --system jobmon-test-admins
id jobmon-test-admin >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin \
    -G jobmon-test-admins jobmon-test-admin
# the tree must be readable by them (a fresh clone may sit below a private home)
chmod -R o+rX . 2>/dev/null || true
d=$(pwd); while [ "$d" != / ]; do chmod o+x "$d" 2>/dev/null || true; d=$(dirname "$d"); done

# --- Slurm test cluster (tests/slurm) -----------------------------------------------------
# Debian's Slurm 22.05, munge and MariaDB. The tests start their own daemons by hand with
# their own config below a temp dir, so the system's services must not start: the
# policy-rc.d above keeps them from starting now, and the services of packages installed
# here are disabled afterwards so a reboot does not start them either.
mapfile -t slurm_pkgs < <(grep -v '^\s*#' tests/slurm/debian-packages.txt | grep -v '^\s*$')
slurm_missing=()
for p in "${slurm_pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || slurm_missing+=("$p"); done
if [ ${#slurm_missing[@]} -gt 0 ]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${slurm_missing[@]}" >/dev/null
    for p in "${slurm_missing[@]}"; do
        case "$p" in
            munge|slurmd|slurmctld|slurmdbd) svc=$p ;;
            mariadb-server) svc=mariadb ;;
            *) continue ;;
        esac
        if [ -d /run/systemd/system ]; then
            systemctl disable --now --quiet "$svc" 2>/dev/null || true
        elif [ -x "/etc/init.d/$svc" ]; then
            update-rc.d "$svc" disable >/dev/null 2>&1 || true
        fi
    done
fi

# --- cgroup v2 guest (tests/guest) ---------------------------------------------------------
# virtme-ng boots a QEMU guest with pure cgroup v2 from this machine's root filesystem; its
# Debian parts (qemu-system-x86, linux-image-amd64, busybox-static, e2fsprogs) are listed in
# debian-packages.txt. It goes into the project's .venv, where tests/guest finds `vng`.
.venv/bin/vng --version >/dev/null 2>&1 \
    || .venv/bin/pip install -q --disable-pip-version-check 'virtme-ng==1.42'
