"""The oldest Python jobmon supports (requires-python, 3.9: EL9's /usr/bin/python3).

Everywhere: vermin (PyPI) refuses syntax, modules, functions and annotations newer than that
in every module a command loads. The annotations count as evaluated: no module defers them
(`from __future__ import annotations`), dataclasses read them when the class is made and
typer when a command's signature is. Where the machine has that interpreter (tests/
oldest_python.py looks for it; tests/setup.sh installs jobmon for it in .venv-oldest): the
everyday commands run under it and answer as they do under the suite's own interpreter."""
import ast
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import PYTHON, REPO, jobmon, shared_tmpdir
from oldest_python import find, oldest

VERSION = oldest()
CHECKED = [os.path.join(REPO, p) for p in ("core", "plugins", "deploy/bin/jobmon")]
UNION = "union types as `X | Y`"


def flag_lines(path):
    """The lines whose every `|` joins constants (`os.O_RDONLY | os.O_CLOEXEC`): flags, not
    types. A constant: a name or attribute in capitals, as no type is named."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())

    def operands(node):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return operands(node.left) + operands(node.right)
        return [node]

    def constant(node):
        name = node.attr if isinstance(node, ast.Attribute) else \
            node.id if isinstance(node, ast.Name) else ""
        return name.isupper()

    verdict = {}                 # line -> whether every `|` on it joins constants
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            flags = all(constant(o) for o in operands(node))
            for n in range(node.lineno, node.end_lineno + 1):
                verdict[n] = verdict.get(n, True) and flags
    return {n for n, flags in verdict.items() if flags}


def too_new(paths):
    """vermin's findings newer than VERSION in `paths`: ['path:line: what', ...]. Its
    `X | Y` detection is a heuristic that also takes `os.O_RDONLY | os.O_CLOEXEC` for a
    union: such a finding does not count on a line whose every `|` joins constants."""
    vermin = shutil.which("vermin", path=os.path.dirname(PYTHON)) or shutil.which("vermin")
    assert vermin, "vermin is missing: pip install -e '.[test]' (tests/setup.sh)"
    r = subprocess.run([vermin, "--no-config-file", "-t=%d.%d-" % VERSION, "--violations",
                        "--eval-annotations", "--feature", "union-types", "--no-tips",
                        "--format", "parsable"] + list(paths),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    found, flags = [], {}
    for row in r.stdout.splitlines():
        path, line, _col, _py2, _py3, what = row.split(":", 5)
        if not (path and line):
            continue                        # a file's or the run's verdict
        if what.startswith(UNION):
            if path not in flags:
                flags[path] = flag_lines(path)
            if int(line) in flags[path]:
                continue
        found.append(f"{os.path.relpath(path, REPO)}:{line}: {what}")
    return found


def test_nothing_newer_than_requires_python():
    found = too_new(CHECKED)
    assert not found, ("needs a Python newer than %d.%d (typing.Optional[X] for X | None; "
                       "`# novm` on a line guarded for older ones):\n" % VERSION
                       + "\n".join(found))


def test_the_check_refuses_what_the_oldest_python_cannot_run(tmp_path):
    """The check itself: a PEP 604 dataclass field, parameter and return, a union made at
    run time, a match statement and zip(strict=) are refused; flags or-ed together and a
    guarded import are not."""
    src = tmp_path / "late.py"
    src.write_text(
        "import os\nfrom dataclasses import dataclass\n\n\n"
        "@dataclass\nclass A:\n    x: float | None = None\n\n\n"
        "def f(y: int | None) -> str | None:\n"
        "    flags = os.O_RDONLY | os.O_CLOEXEC\n"
        "    match y:\n        case 1:\n            return 'one'\n"
        "    if isinstance(y, int | str):\n        flags |= os.O_NONBLOCK\n"
        "    return str(list(zip([1], [2], strict=True)) and flags)\n\n\n"
        "try:\n    import tomllib  # novm\nexcept ImportError:\n    import tomli as tomllib\n")
    found = "\n".join(too_new([str(src)]))
    for line in (7, 10, 15):
        assert f"late.py:{line}: {UNION}" in found, found
    assert "late.py:11:" not in found and "tomllib" not in found, found
    assert "pattern matching" in found and "zip(strict)" in found, found


# --- the everyday commands under that interpreter -------------------------------------------

VENV = os.path.join(REPO, ".venv-oldest")


@pytest.fixture(scope="module")
def oldest_jobmon():
    """jobmon installed for the oldest supported Python (.venv-oldest/bin/jobmon)."""
    python = find(VERSION)
    if python is None:
        pytest.skip("no Python %d.%d on this machine (python%d.%d on PATH, pyenv, uv, or "
                    "JOBMON_TEST_OLDEST_PYTHON); the static check above still runs"
                    % (VERSION + VERSION))
    script = os.path.join(VENV, "bin", "jobmon")
    assert os.path.exists(script), f"tests/setup.sh installs jobmon for {python} in {VENV}"
    r = subprocess.run([os.path.join(VENV, "bin", "python"), "-c",
                        "import sys, jobmon; print('%d.%d' % sys.version_info[:2], "
                        "jobmon.__file__)"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["%d.%d" % VERSION, os.path.join(REPO, "core", "__init__.py")]
    return script


def both(oldest_jobmon, *args, env, codes=(0,)):
    """`jobmon ARGS` under the oldest Python and under the suite's: both results, with the
    same exit status, one of `codes`."""
    old = subprocess.run([oldest_jobmon] + list(args), capture_output=True, text=True,
                         timeout=120, env=env)
    new = jobmon(*args, env=env, timeout=120)
    for r in (old, new):
        assert "Traceback" not in r.stderr, r.stderr
    assert old.returncode == new.returncode, (args, old.stderr, new.stderr)
    assert old.returncode in codes, (args, old.stdout, old.stderr)
    return old, new


def test_everyday_commands_run_under_the_oldest_python(oldest_jobmon, tmp_path):
    """run (a pilot with a payload, exit status exact), query in each format, list, report
    by range and by group, the HTML page, pilot, top, config check and doctor."""
    site = Path(shared_tmpdir()) / "jobmon.toml"   # job users may read it (doctor checks)
    site.write_text("")                             # the embedded store, every default
    site.chmod(0o644)
    store = str(tmp_path / "store.db")
    env = dict(os.environ, JOBMON_CONFIG=str(site), JOBMON_STORE=store)
    payload = (f"{oldest_jobmon} run --interval=0.1 --job-id=pay.0 --tag=pilot=p.0 "
               "--tag=CpusProvisioned=1 --tag=MemoryProvisioned=2048 -- "
               "sh -c 'x=0; while [ $x -lt 50000 ]; do x=$((x+1)); done'; exit 3")
    r = subprocess.run([oldest_jobmon, "run", "--interval=0.1", "--job-id=p.0",
                        "--tag=CpusProvisioned=2", "--tag=MemoryProvisioned=4096",
                        f"--summary={tmp_path / 'p.json'}", "--", "sh", "-c", payload],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 3, r.stderr
    assert json.loads((tmp_path / "p.json").read_text())["exit_code"] == 3

    # the same answers as under the suite's interpreter
    for args in (["query", "pay.0"], ["query", "pay.0", "--json"], ["query", "p.0", "--csv"],
                 ["list"], ["pilot", "p.0"], ["pilot", "p.0", "--json"]):
        old, new = both(oldest_jobmon, *args, env=env)
        assert old.stdout == new.stdout, args
    assert json.loads(both(oldest_jobmon, "query", "pay.0", "--json", env=env)[0].stdout)
    text = both(oldest_jobmon, "list", env=env)[0].stdout
    assert "pay.0" in text and "p.0" in text

    by_user = [json.loads(r.stdout)
               for r in both(oldest_jobmon, "report", "--by", "user", "--json", env=env)]
    assert by_user[0]["groups"] == by_user[1]["groups"] and by_user[0]["groups"]
    old, new = both(oldest_jobmon, "report", "--since", "1d", env=env)
    assert old.stdout.startswith("2 job runs started") and new.stdout.startswith("2 job runs")

    page = tmp_path / "pay.html"
    both(oldest_jobmon, "report", "pay.0", "--html", str(page), env=env)
    assert page.stat().st_size > 10000 and "pay.0" in page.read_text()

    # this store's running jobs only (none): other work's spool files would come and go
    old, new = both(oldest_jobmon, "top", "--once", "--spool=none", env=env)
    assert old.stdout.splitlines()[1:] == new.stdout.splitlines()[1:]
    assert "no running job found" in old.stdout
    old, new = both(oldest_jobmon, "config", "check", env=env)
    assert old.stdout == new.stdout and str(site) in old.stdout
    # a check may fail on this node (exit 1): the same checks, the same verdicts (their
    # details name what runs on the node now, and each interpreter's own install)
    old, new = both(oldest_jobmon, "doctor", env=env, codes=(0, 1))

    def verdicts(out):
        return [line.split()[:2] for line in out.splitlines()
                if line.split()[:1] in (["ok"], ["warn"], ["FAIL"], ["fail"])]
    assert verdicts(old.stdout) == verdicts(new.stdout) and "ok    config" in old.stdout
    assert len(verdicts(old.stdout)) >= 3, old.stdout

