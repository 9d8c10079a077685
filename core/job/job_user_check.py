"""Can a job's user run jobmon with a given interpreter? A scheduler's entry point runs as
the job's user (a wrapper; a sampler once it has dropped root's privileges): an
interpreter under a private directory (a pyenv build under root's home) or a package
that only root can read breaks every job's monitoring. The scheduler then holds every
job, or every record is lost.

This module really runs the interpreter as an unprivileged user, with the flags and
path the installed entry point uses, imports the per-job modules and checks that every
file of the package is readable; where that fails it finds the directory or file in the
way and says how to fix it. For the installers and `jobmon doctor`, never inside a job.
"""
import os
import pwd
import stat
import subprocess

CHECK_USER = "nobody"
# run with the interpreter under test; prints "ok", or the files nobody else can read
PROBE = """import sys
sys.path.extend({path!r})
if {site!r}:
    import site
    site.main()
import importlib, os
for m in {modules!r}:
    importlib.import_module(m)
import jobmon, jobmon.plugins
bad = []
for top in list(jobmon.__path__) + list(jobmon.plugins.__path__):
    for d, _, files in os.walk(top):
        bad += [os.path.join(d, f) for f in files
                if f.endswith(".py") and not os.access(os.path.join(d, f), os.R_OK)]
print("unreadable: " + " ".join(sorted(bad)[:5]) if bad else "ok " + jobmon.__path__[0])
"""
VENV_FIX = ("build jobmon's virtualenv on an interpreter every user can run, e.g. "
            "`/usr/bin/python3 -m venv /opt/jobmon` (a virtualenv's python is a link to the "
            "interpreter it was made from: `chmod -R a+rX` on the virtualenv does not help)")


class Problem(Exception):
    """What stops the user, and the fix."""

    def __init__(self, reason, fix):
        super().__init__(f"{reason}; fix: {fix}")
        self.reason, self.fix = reason, fix


def check(python, modules, flags=(), path=(), site=False, user=CHECK_USER, timeout=60):
    """Run `python FLAGS -c PROBE` as `user` (as root; otherwise as this unprivileged
    process), importing `modules`, what an entry point imports as the job's user (its
    scheduler object's per_job_modules): `path` is
    appended to sys.path and `site` runs site.main(), as the entry point does. Returns
    what the probe said ("ok DIR"); raises Problem."""
    who = _user(user)
    code = PROBE.format(path=list(path), site=site, modules=tuple(modules))
    argv = [python] + list(flags) + ["-c", code]
    kw = {}
    if os.geteuid() == 0:
        kw = {"user": who.pw_uid, "group": who.pw_gid, "extra_groups": []}
    name = who.pw_name if kw else pwd.getpwuid(os.geteuid()).pw_name
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd="/",
                           env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, **kw)
    except (PermissionError, FileNotFoundError) as e:
        raise _explain(python, who, f"{name} cannot execute {python}: {e.strerror}")
    except subprocess.TimeoutExpired:
        raise Problem(f"{python} did not finish importing jobmon within {timeout} s as {name}",
                      "look for a hung interpreter or a slow file system")
    out = r.stdout.strip()
    if r.returncode != 0 or not out.startswith(("ok", "unreadable")):
        last = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
        reason = f"{python} {' '.join(flags)} fails as {name}: {last}"
        if kw:   # as root it may work: then the package is what the user cannot read
            mine = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                  cwd="/", env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
            if mine.returncode == 0 and mine.stdout.startswith("ok "):
                blocked = unreadable_below(mine.stdout.split(" ", 1)[1].strip())
                if blocked:
                    raise Problem(f"{reason} ({blocked})",
                                  f"chmod -R a+rX {os.path.dirname(blocked.split()[0])}")
        raise _explain(python, who, reason)
    if out.startswith("unreadable"):
        files = out.split()[1:]
        raise Problem(f"{name} cannot read {', '.join(files)}",
                      f"chmod -R a+rX {os.path.dirname(files[0])}, and a+x on the "
                      "directories above it")
    if not kw and os.geteuid() != 0:      # only this user was tried: look for others too
        blocked = first_blocked(python, None, None)
        if blocked:
            raise Problem(f"other users cannot reach {python}: {blocked}", VENV_FIX)
    return out


def _user(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        raise Problem(f"no user {name!r} to check with", "name an unprivileged user that "
                      "exists (--check-user=NAME)")


def _explain(python, who, reason):
    """Problem for a failed run: the directory or file in the user's way, if one is."""
    uid, gid = (who.pw_uid, who.pw_gid) if os.geteuid() == 0 else (None, None)
    blocked = first_blocked(python, uid, gid)
    if blocked:
        return Problem(f"{reason} ({blocked})", VENV_FIX)
    return Problem(reason, "run the command above as that user to see why; the interpreter "
                           "and jobmon's package must be readable by every job's user")


def first_blocked(path, uid, gid, need=os.R_OK | os.X_OK):
    """The first directory on the way to `path` (as given, and with its links resolved:
    a virtualenv's python links to the interpreter it was made from) that the user (uid,
    gid; None: "other users") cannot search, or `path` itself if they lack `need` on it,
    as text; None if nothing is in the way."""
    seen = set()
    for p in (os.path.abspath(path), os.path.realpath(path)):
        parts = p.split("/")[1:]
        for i in range(len(parts)):
            d = "/" + "/".join(parts[:i + 1])
            if d in seen:
                continue
            seen.add(d)
            try:
                st = os.stat(d)
            except OSError:
                return f"{d} does not exist"
            last = i == len(parts) - 1
            if not _allowed(st, uid, gid, need if last else os.X_OK):
                what = ("cannot read" if need == os.R_OK else "cannot read and execute") \
                    if last else "cannot enter"
                return (f"{d} is mode {stat.S_IMODE(st.st_mode):04o}, owner "
                        f"{_owner(st.st_uid)}: {'other users' if uid is None else 'the user'}"
                        f" {what} it")
    return None


def site_file_problem(path, elsewhere="name the file it is in"):
    """Problem (the reason and the commands that make it right) when job users cannot
    read the site file `path`: it is missing, or a directory on the way is closed to other
    users, or the file is not readable by them. Every job's sampler reads it as the job's
    user; without it jobs run on the defaults and write to their users' home stores, and
    nothing reaches the spool. None when every user can read it. elsewhere: how to name
    another file instead, in the fix for a missing one."""
    import shlex
    if not os.path.isfile(path):
        return Problem(f"{path}: no such file (every job would run on the defaults, "
                       "writing to its user's home store, never to the spool)",
                       f"write the site file {path} (mode 644; `[store] kind = \"local\"` "
                       f"for the embedded store on purpose), or {elsewhere}")
    shut, unreadable = [], []
    for p in _on_the_way(path):
        st = os.stat(p)
        if p in (os.path.abspath(path), os.path.realpath(path)) and not stat.S_ISDIR(st.st_mode):
            if not _allowed(st, None, None, os.R_OK):
                unreadable.append(p)
        elif not _allowed(st, None, None, os.X_OK):
            shut.append(p)
    if not shut and not unreadable:
        return None
    fix = "; ".join(f"chmod {how} " + " ".join(shlex.quote(p) for p in paths)
                    for how, paths in (("a+x", shut), ("a+r", unreadable)) if paths)
    return Problem(f"job users cannot read {path} ({first_blocked(path, None, None, os.R_OK)}):"
                   " their samplers would run on the defaults, writing to their users' home "
                   "stores", fix)


def check_site_file(path):
    """Raise Problem where job users cannot read the site file `path` or it is no valid
    configuration: what both installers check first."""
    problem = site_file_problem(path)
    if problem:
        raise problem
    from .. import config
    try:
        config.load(path)
    except config.ConfigError as e:
        raise Problem(str(e), "correct the site configuration (`jobmon config check`)")


def _on_the_way(path):
    """Every directory from / to `path`, and `path`, as given and with its links resolved
    (each once, in order)."""
    out = []
    for p in (os.path.abspath(path), os.path.realpath(path)):
        parts = p.split("/")[1:]
        for i in range(len(parts)):
            d = "/" + "/".join(parts[:i + 1])
            if d not in out:
                out.append(d)
    return out


def unreadable_below(package):
    """The first directory of the package (or above it) other users cannot enter, or
    file they cannot read, as text; None."""
    blocked = first_blocked(package, None, None)
    if blocked:
        return blocked
    for d, dirs, files in os.walk(package):
        for name in dirs:
            st = os.stat(os.path.join(d, name))
            if not _allowed(st, None, None, os.R_OK | os.X_OK):
                return (f"{os.path.join(d, name)} is mode {stat.S_IMODE(st.st_mode):04o}: "
                        "other users cannot enter it")
        for name in files:
            st = os.stat(os.path.join(d, name))
            if not _allowed(st, None, None, os.R_OK):
                return (f"{os.path.join(d, name)} is mode {stat.S_IMODE(st.st_mode):04o}: "
                        "other users cannot read it")
    return None


def _allowed(st, uid, gid, need):
    mode = st.st_mode
    if uid == 0:
        return True
    if uid is not None and st.st_uid == uid:
        bits = mode >> 6
    elif gid is not None and st.st_gid == gid:
        bits = mode >> 3
    else:
        bits = mode
    want = (4 if need & os.R_OK else 0) | (1 if need & os.X_OK else 0)
    return bits & want == want


def _owner(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
