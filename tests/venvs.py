"""Virtualenvs with jobmon installed the way a site installs it (a regular install, not
the suite's editable one), for the installers and `jobmon doctor`: a good one, one on an
interpreter only root can run (a copy of python3 under a mode-0700 directory, as a
pyenv build under root's home is), one whose package only root can read."""
import os
import shutil
import subprocess
import sys

from helpers import REPO

BASE_PYTHON = os.path.realpath("/usr/bin/python3") if os.path.exists("/usr/bin/python3") \
    else os.path.realpath(sys.executable)


def _scripts():
    """pyproject.toml's [project.scripts]: {name: "module:function"}."""
    out, inside = {}, False
    with open(os.path.join(REPO, "pyproject.toml")) as f:
        for line in f:
            if line.startswith("["):
                inside = line.strip() == "[project.scripts]"
            elif inside and "=" in line:
                k, v = line.split("=", 1)
                out[k.strip()] = v.strip().strip('"')
    return out


def _script_files():
    """pyproject.toml's tool.setuptools script-files: paths in the repository."""
    with open(os.path.join(REPO, "pyproject.toml")) as f:
        for line in f:
            if line.startswith("script-files"):
                inside = line.split("[", 1)[1].split("]")[0]
                return [p.strip().strip('"') for p in inside.split(",")]
    return []


SCRIPTS, SCRIPT_FILES = _scripts(), _script_files()


def make_venv(where, python=BASE_PYTHON):
    """A virtualenv at `where` made from `python`, with jobmon's package copied into its
    site-packages as `pip install .` lays it out (core/ is jobmon, plugins/ jobmon.plugins).
    Returns the virtualenv's python."""
    subprocess.run([python, "-m", "venv", "--without-pip", where], check=True, timeout=120)
    venv_python = os.path.join(where, "bin", "python3")
    site = subprocess.run([venv_python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip()
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(os.path.join(REPO, "core"), os.path.join(site, "jobmon"), ignore=ignore)
    shutil.copytree(os.path.join(REPO, "plugins"), os.path.join(site, "jobmon", "plugins"),
                    ignore=ignore)
    subprocess.run([venv_python, "-m", "compileall", "-q", os.path.join(site, "jobmon")],
                   check=True, timeout=300)
    # console scripts as pip before 25.1 (Debian 12's pip 23) writes them
    for name, entry in SCRIPTS.items():
        path = os.path.join(where, "bin", name)
        mod, func = entry.split(":")
        with open(path, "w") as f:
            f.write(f"#!{venv_python}\nimport re\nimport sys\nfrom {mod} import {func}\n"
                    f"sys.exit({func}())\n")
        os.chmod(path, 0o755)
    for src in SCRIPT_FILES:   # script files as pip installs them: the interpreter set
        with open(os.path.join(REPO, src)) as f:
            text = f.read().split("\n", 1)[1]
        path = os.path.join(where, "bin", os.path.basename(src))
        with open(path, "w") as f:
            f.write(f"#!{venv_python}\n{text}")
        os.chmod(path, 0o755)
    subprocess.run(["chmod", "-R", "a+rX", where], check=True)
    return venv_python


def site_packages(venv_python):
    return subprocess.run([venv_python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True,
                          check=True).stdout.strip()


def root_only_python(where):
    """A copy of the interpreter below `where`/private (mode 0700, root's), its standard
    library linked beside it: root can run it, nobody else can."""
    private = os.path.join(where, "private")
    os.makedirs(os.path.join(private, "bin"))
    os.makedirs(os.path.join(private, "lib"))
    os.chmod(private, 0o700)
    python = os.path.join(private, "bin", "python3")
    shutil.copy2(BASE_PYTHON, python)
    version = subprocess.run([BASE_PYTHON, "-c", "import sys; print('python%d.%d' % "
                              "sys.version_info[:2])"], capture_output=True, text=True,
                             check=True).stdout.strip()
    os.symlink(os.path.join(os.path.dirname(os.path.dirname(BASE_PYTHON)), "lib", version),
               os.path.join(private, "lib", version))
    return python
