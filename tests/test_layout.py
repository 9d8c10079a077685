"""What the layout must keep: the per-job path is standard library only, modules stay
small, data flows one way (write path, node path, read path), plugins stay apart, and
every package is installed by a plain `pip install .`."""
import ast
import os
import re
import subprocess
import sys
import warnings

import pytest

from helpers import JOBMON, PYTHON, REPO

CORE = os.path.join(REPO, "core")
PLUGINS = os.path.join(REPO, "plugins")
MAX_LINES = 400
HEAVY = {"typer", "rich", "click", "influxdb_client", "htcondor", "htcondor2", "classad",
         "classad2", "pyslurm", "psutil", "urllib3", "reactivex", "dateutil"}


def modules():
    """{dotted name: path} of every module of the jobmon package."""
    out = {}
    for base, pkg in ((CORE, "jobmon"), (PLUGINS, "jobmon.plugins")):
        for d, _dirs, files in os.walk(base):
            if "__pycache__" in d:
                continue
            rel = os.path.relpath(d, base)
            prefix = pkg if rel == "." else pkg + "." + rel.replace(os.sep, ".")
            for f in files:
                if f.endswith(".py"):
                    name = prefix if f == "__init__.py" else f"{prefix}.{f[:-3]}"
                    out[name] = os.path.join(d, f)
    return out


def imports(name, path, precise=False):
    """Absolute names of the modules `name` imports (anywhere in it, lazily or not).
    precise: only jobmon's, and `from P import m` is module P.m where there is one (not
    P's __init__ as well), else P."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    pkg = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            if precise:
                out.update(f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod
                           for a in node.names)
                continue
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    if precise:
        return {m for m in out if m in MODULES and m != name}
    return {m for m in out if m}


MODULES = modules()
GRAPH = {n: imports(n, p) for n, p in MODULES.items()}


def under(name, *prefixes):
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def reach(start, stop=()):
    """Every jobmon module reachable from `start` through imports."""
    seen, todo = set(), [start]
    while todo:
        n = todo.pop()
        if n in seen or n not in GRAPH:
            continue
        seen.add(n)
        todo += [m for m in GRAPH[n] if m in GRAPH and not under(m, *stop)]
    return seen


# core's top: the command, the library API, the metric table and the text cleaner every side
# uses; every other module is in the folder of its concern (docs/developing.md)
TOP = {"jobmon", "jobmon.__main__", "jobmon.api", "jobmon.metrics", "jobmon.metrics_doc",
       "jobmon.printable"}


def test_core_top_holds_only_what_every_part_shares():
    loose = {n for n, p in MODULES.items() if os.path.dirname(p) == CORE} - TOP
    assert not loose, f"{sorted(loose)}: into the folder of its concern (docs/developing.md)"


def test_long_modules_are_listed():
    """A signal, not a cap: each module over MAX_LINES lines is named in a warning (split it
    by what it does); nothing fails for length, so nothing is cut from user-facing text or
    settings to fit."""
    lines = {n: sum(1 for _ in open(p)) for n, p in MODULES.items()}
    long = sorted((k, n) for n, k in lines.items() if k > MAX_LINES)
    if long:
        warnings.warn(f"modules over {MAX_LINES} lines: "
                      + ", ".join(f"{n} ({k})" for k, n in reversed(long)))


def _hands_names_on(node, top):
    """A statement an `__init__.py` may hold: a docstring, an import, `__all__`; the top
    package also its `__version__` and PEP 562's `__getattr__` that imports the library
    API when first used (an eager import would load it into every job's start)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
            and isinstance(node.value.value, str):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        return len(names) == len(targets) == 1 and (
            names == {"__all__"} or (top and names == {"__version__"}
                                     and isinstance(node.value, ast.Constant)))
    if top and isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
        return all(isinstance(n, (ast.If, ast.Import, ast.ImportFrom, ast.Return, ast.Raise))
                   for n in ast.walk(node) if isinstance(n, ast.stmt) and n is not node)
    return False


def test_init_files_only_hand_names_on():
    """Every package's `__init__.py` holds a docstring, imports that re-export names and
    `__all__`; its logic lives in modules named for what they do."""
    bad = []
    for base in (CORE, PLUGINS):
        for d, _dirs, files in os.walk(base):
            if "__init__.py" not in files or "__pycache__" in d:
                continue
            path = os.path.join(d, "__init__.py")
            rel = os.path.relpath(path, REPO)
            for node in ast.parse(open(path, encoding="utf-8").read()).body:
                if not _hands_names_on(node, top=path == os.path.join(CORE, "__init__.py")):
                    bad.append(f"{rel}:{node.lineno}: {type(node).__name__}")
    assert not bad, "logic in __init__.py (move it into a module named for it): " + \
        ", ".join(bad)


def test_the_map_in_developing_md_names_every_folder_and_plugin():
    """docs/developing.md's map: a row for every folder of core and every plugin, and every
    module a row names is in that row's folders."""
    rows = []
    for line in open(os.path.join(REPO, "docs", "developing.md"), encoding="utf-8"):
        cells = line.split(" | ")
        if line.startswith("| ") and len(cells) == 2:
            rows.append((re.findall(r"`([^`]+/)`", cells[0]) or ([""] if cells[0] == "| top"
                                                                  else []),
                         re.findall(r"`([\w/]+\.py)`", cells[1])))
    named = {f for folders, _m in rows for f in folders}
    for base, prefix in ((CORE, ""), (PLUGINS, "plugins/")):
        for d in sorted(os.listdir(base)):
            if os.path.isfile(os.path.join(base, d, "__init__.py")):
                assert f"{prefix}{d}/" in named, f"{prefix}{d}/ is not in the map"
    for folders, modules in rows:
        dirs = [os.path.join(REPO, f) if f.startswith("plugins/") else os.path.join(CORE, f)
                for f in folders]
        for m in modules:
            assert any(os.path.isfile(os.path.join(d, m)) for d in dirs) or \
                os.path.isfile(os.path.join(CORE, m)), (folders, m)


def _loaded(argv):
    r = subprocess.run([PYTHON, "-X", "importtime"] + argv, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return {m.group(1).strip().split(".")[0]
            for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s+(.+)$", r.stderr, re.M)}


def test_per_job_path_imports_only_the_standard_library_when_it_runs():
    """`jobmon run` as it really runs: every module it loaded beyond what the interpreter
    loads on its own (site hooks) is stdlib or jobmon's."""
    loaded = _loaded([JOBMON, "run", "--store=none", "--interval=0.05", "--", "sleep", "0.2"])
    loaded -= _loaded(["-c", "pass"])
    foreign = {m for m in loaded if m not in sys.stdlib_module_names and m != "jobmon"
               and not m.startswith("_")}
    assert foreign <= {"tomli"}, foreign   # tomli only where Python < 3.11 lacks tomllib


# what `import re` (json imports it), enum (signal's), datetime (sqlite3's) and
# collections would add to every job's start: ~25 ms of CPU together
PER_JOB_AVOIDS = ("re", "json", "enum", "datetime", "signal", "sqlite3", "collections")
DRIVER = """
import os, sys
for m in [m for m in sys.modules if m.split(".")[0] in AVOID]:
    del sys.modules[m]        # loaded by site hooks (an editable install's finder): forget
exit_ = os._exit
def report(code):
    print(sorted({m.split(".")[0] for m in sys.modules} & set(AVOID)))
    sys.stdout.flush()
    exit_(code)
os._exit = report             # the runner leaves with the job's status through os._exit
from jobmon.__main__ import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize("site_file", [False, True])
def test_per_job_path_does_without_costly_standard_modules(tmp_path, site_file):
    """`jobmon run` with the embedded store and a summary file imports none of them, with
    or without a site configuration file (read without tomllib)."""
    argv = ["run", f"--store={tmp_path / 'jobs.db'}", f"--summary={tmp_path / 's.json'}",
            "--interval=0.05", "--tag", "x=1", "--", "sleep", "0.2"]
    env = dict(os.environ)
    if site_file:
        env["JOBMON_CONFIG"] = str(tmp_path / "jobmon.toml")
        with open(env["JOBMON_CONFIG"], "w") as f:
            f.write('[store]\nkind = "local"   # the default\n\n[procs]\nevery_seconds = 30.0\n')
    r = subprocess.run([PYTHON, "-c", f"AVOID = {PER_JOB_AVOIDS!r}\n{DRIVER}"] + argv,
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", r.stdout
    assert (tmp_path / "s.json").stat().st_size > 0


@pytest.mark.parametrize("entry", ["jobmon.job.runner", "jobmon.api", "jobmon.job.session",
                                   "jobmon.attach.watch", "jobmon.sinks.spool",
                                   "jobmon.stores.local"])
def test_write_path_never_imports_read_side_or_heavy_packages(entry):
    for mod in reach(entry):
        assert not (GRAPH[mod] & HEAVY), (mod, GRAPH[mod] & HEAVY)
        assert not under(mod, "jobmon.cli", "jobmon.report", "jobmon.render",
                         "jobmon.accounting", "jobmon.ship"), (entry, mod)


def test_read_side_never_imports_the_in_job_writers():
    writers = ("jobmon.job", "jobmon.attach", "jobmon.probes", "jobmon.sinks", "jobmon.api")
    for name, deps in GRAPH.items():
        if under(name, "jobmon.report", "jobmon.render", "jobmon.accounting", "jobmon.ship",
                 "jobmon.serve"):
            bad = {d for d in deps if under(d, *writers)}
            if under(name, "jobmon.ship"):   # the spool directory's contract is the writer's
                bad = {d for d in bad if not under(d, "jobmon.sinks.spool")}
            assert not bad, (name, bad)


def test_renderers_get_a_model_and_never_query():
    for name, deps in GRAPH.items():
        if under(name, "jobmon.render"):
            assert not {d for d in deps if under(d, "jobmon.stores", "jobmon.accounting",
                                                 "jobmon.report")}, name


def test_no_module_imports_itself_back():
    """No import cycles in core and the plugins, lazy imports included: a cycle is one
    module where the layout shows two, and works only in one import order. A package's
    __init__ counts as a module of its own (a submodule that needs a name of it imports
    it, a name table that names its modules imports those)."""
    edges = {n: imports(n, p, precise=True) for n, p in MODULES.items()}
    for start in edges:
        via, todo = {}, [start]        # via: module -> the module that imports it
        while todo:
            n = todo.pop()
            for d in edges[n]:
                if d == start:
                    path = [n]
                    while path[-1] != start:
                        path.append(via[path[-1]])
                    raise AssertionError(" <- ".join([start] + path))
                if d not in via:
                    via[d] = n
                    todo.append(d)


def test_nothing_below_the_cli_imports_it():
    for name, deps in GRAPH.items():
        if not under(name, "jobmon.cli", "jobmon.__main__"):
            assert not {d for d in deps if under(d, "jobmon.cli")}, name


def test_plugins_never_import_each_other():
    plugins = {n.split(".")[2] for n in GRAPH if n.count(".") >= 2 and n.startswith("jobmon.plugins.")}
    for name, deps in GRAPH.items():
        if under(name, "jobmon.plugins") and name.count(".") >= 2:
            mine = name.split(".")[2]
            others = {f"jobmon.plugins.{p}" for p in plugins if p != mine}
            assert not {d for d in deps if under(d, *others)}, name


def test_every_package_is_installed_by_pip_install():
    text = open(os.path.join(REPO, "pyproject.toml")).read()
    listed = set(re.findall(r'"(jobmon(?:\.[a-z_]+)*)"', text))
    packages = {n for n, p in MODULES.items() if p.endswith("__init__.py")}
    assert packages <= listed, packages - listed
