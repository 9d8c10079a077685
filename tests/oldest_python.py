"""The oldest Python jobmon supports (pyproject.toml's requires-python) and an interpreter of
it on this machine, if it has one. tests/setup.sh installs jobmon for that interpreter in
.venv-oldest; tests/test_oldest_python.py runs the everyday commands there.

Run as a script it prints the interpreter's path, or nothing when the machine has none.
Debian 12 packages no Python 3.9; EL9's /usr/bin/python3 is one, and pyenv or uv install
one anywhere."""
import glob
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def oldest():
    """(major, minor) of requires-python's lower bound."""
    with open(os.path.join(REPO, "pyproject.toml"), encoding="utf-8") as f:
        m = re.search(r'^requires-python\s*=\s*">=\s*(\d+)\.(\d+)', f.read(), re.M)
    return int(m.group(1)), int(m.group(2))


def candidates(version):
    """Where an interpreter of `version` may be, most explicit first."""
    name = "python%d.%d" % version
    out = [os.environ.get("JOBMON_TEST_OLDEST_PYTHON", "")]
    out += [os.path.join(d, name) for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    out += [f"/usr/bin/{name}", f"/usr/local/bin/{name}"]
    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    out += sorted(glob.glob(os.path.join(pyenv, "versions", "%d.%d.*" % version, "bin", name)),
                  reverse=True)
    uv = os.path.expanduser("~/.local/share/uv/python")
    out += sorted(glob.glob(os.path.join(uv, "cpython-%d.%d.*" % version, "bin", name)),
                  reverse=True)
    return [p for p in out if p]


def is_version(path, version):
    """Whether `path` runs and is that version (a pyenv shim on PATH may only say which of
    its versions has the command)."""
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return False
    try:
        r = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0 and r.stdout.strip() == "%d.%d" % version


def find(version=None):
    """The path of an interpreter of the oldest supported version, or None."""
    version = version or oldest()
    for path in candidates(version):
        if is_version(path, version):
            return path
    return None


if __name__ == "__main__":
    print(find() or "")
    sys.exit(0)
