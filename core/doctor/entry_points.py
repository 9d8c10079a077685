"""Checks a scheduler's entry points share (its plugin's doctor module runs them): the
interpreter they start, and where their warnings go."""
import os

from .. import schedulers
from ..job import job_user_check
from .check import FAIL, OK, WARN, Check


def interpreter(name, python, kind, node, **how):
    """Check: `python` (with the flags and path the entry point uses) starts and imports
    jobmon's per-job code as an unprivileged user."""
    try:
        said = job_user_check.check(python, kind, user=node.check_user, **how)
    except job_user_check.Problem as e:
        return Check(name, FAIL, e.reason, e.fix)
    return Check(name, OK, f"{python} imports jobmon ({said.split(' ', 1)[1]}) as "
                           f"{node.check_user if os.geteuid() == 0 else 'this user'}")


def syslog_receives(path="/dev/log"):
    """Whether a syslog daemon listens on `path` (without one, Python's syslog drops
    every message without a word)."""
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


# where else a scheduler entry point's warnings may go, as its section accepts it: {the
# site file's section: the registered scheduler's word}
WARNINGS_ELSEWHERE = {s.config_section: s.warnings_elsewhere for s in schedulers.all()}


def warnings_to(name, where, node, fallback=None, syslog="/dev/log", *, section):
    """Check: where a scheduler entry point's warnings go, and whether anything gets
    them. fallback: where they go instead when syslog receives nothing, if anywhere;
    section: the site file's section that says where (a scheduler's config_section)."""
    elsewhere = WARNINGS_ELSEWHERE[section]
    if where == "none":
        return Check(name, WARN, "warnings are dropped (warnings = \"none\"): a job that "
                                 "runs unmonitored says so nowhere",
                     f"[{section}] warnings = \"syslog\" with a syslog daemon running, or "
                     f"{elsewhere}")
    if where == "stderr":
        return Check(name, OK, "warnings go to the job's own stderr")
    if where == "syslog":
        if syslog_receives(syslog):
            return Check(name, OK, f"warnings go to syslog ({syslog} receives)")
        also = f"; the samplers write them to {fallback} instead" if fallback else ""
        return Check(name, FAIL, f"warnings go to syslog, and nothing receives syslog here "
                                 f"({syslog}: no listener){also}",
                     f"start a syslog daemon (rsyslog, systemd-journald), or {elsewhere}")
    blocked = _unwritable_by_users(where)
    if blocked:
        return Check(name, FAIL, f"warnings go to {where}, which job users cannot write "
                                 f"({blocked})", f"touch {where}; chmod 622 {where}")
    return Check(name, OK, f"warnings go to {where} (each job's user appends to it)")


def _unwritable_by_users(path):
    """Why other users cannot append to `path` (or create it), or None."""
    try:
        st = os.stat(path)
        return None if st.st_mode & 0o002 else f"mode {st.st_mode & 0o7777:04o}"
    except FileNotFoundError:
        d = os.path.dirname(path) or "."
        try:
            st = os.stat(d)
        except OSError:
            return f"{d} does not exist"
        return None if st.st_mode & 0o002 else f"it does not exist and {d} is not " \
                                                "writable by them"
    except OSError as e:
        return e.strerror
