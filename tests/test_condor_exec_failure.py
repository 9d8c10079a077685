"""A job whose executable cannot be executed, through jobmon's wrapper, ends as it would
without it: held. Without a wrapper the starter's exec fails and the shadow holds the job
(HoldReasonCode 6, subcode 13 for "Permission denied"); with one, the wrapper's exec of the
job fails. The wrapper tells the shadow why through the starter's Chirp server (delayed
job attributes, Chirp*), and the access points' policy that jobmon ships
(deploy/condor/jobmon-access-point.conf) holds the job when the shadow sees it exit.

The starter's side is reproduced: its Chirp server (the protocol of condor_starter's IO
proxy: a cookie line, then one request per line, words with backslash escapes, "0" for
done; only attributes named Chirp*, expressions up to 993 characters), the
_CONDOR_CHIRP_CONFIG file, the error file. The policy is evaluated by HTCondor's own
ClassAd library (classad2) on the job's ad, as the shadow evaluates SYSTEM_PERIODIC_HOLD
at a job's exit.
"""
import fnmatch
import os
import socket
import threading

import pytest

from helpers import REPO, TEST_USER, needs_test_user, root
from test_condor_wrapper import REAL, Starter, _read, _write

classad2 = pytest.importorskip("classad2")
pytestmark = [root, needs_test_user]
POLICY = os.path.join(REPO, "deploy", "condor", "jobmon-access-point.conf")


def unescape_word(text):
    """One word as the starter's IO proxy reads it (sscanf_chirp's %s)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            i += 1
        out.append(text[i])
        i += 1
    return "".join(out)


def split_words(line):
    words, cur, i = [], "", 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            cur += line[i:i + 2]
            i += 2
            continue
        if c.isspace():
            if cur:
                words.append(unescape_word(cur))
            cur = ""
        else:
            cur += c
        i += 1
    return words + ([unescape_word(cur)] if cur else [])


class ChirpServer:
    """The starter's Chirp server for one job: delayed updates only."""

    def __init__(self):
        self.cookie = os.urandom(8).hex()
        self.attrs = {}
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def write_config(self, path, user):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _write(path, f"127.0.0.1 {self.port} {self.cookie}\n")
        for p in (os.path.dirname(path), path):
            os.chown(p, user.pw_uid, user.pw_gid)

    def _serve(self):
        while True:
            conn, _ = self.sock.accept()
            with conn, conn.makefile("rwb") as f:
                authenticated = False
                for raw in f:
                    words = split_words(raw.decode().rstrip("\n"))
                    if not authenticated:
                        authenticated = words == ["cookie", self.cookie]
                        answer = "0" if authenticated else "-1"
                    elif words[:1] == ["set_job_attr_delayed"] and len(words) == 3:
                        name, expr = words[1:]
                        ok = fnmatch.fnmatch(name.lower(), "chirp*") and len(expr) <= 993
                        if ok:
                            self.attrs[name] = expr
                        answer = "0" if ok else "1"
                    else:
                        answer = "-8"
                    f.write(answer.encode() + b"\n")
                    f.flush()


def knobs(path):
    out = {}
    for line in _read(path).splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
    return out


def shadow_ad(attrs, **more):
    """The job's ad as the shadow holds it when the job exits: the starter's job ad, the
    job running, and the delayed updates the starter handed over."""
    ad = classad2.parseOne(_read(os.path.join(REAL, ".job.ad")), classad2.ParserType.Old)
    ad["JobStatus"] = 2
    for name, expr in attrs.items():
        ad[name] = classad2.ExprTree(expr)
    for name, value in more.items():
        ad[name] = value
    return ad


def test_a_job_that_cannot_be_executed_is_held_as_without_the_wrapper():
    starter = Starter(site="[condor]\ninterval = 0.2\nmin_interval = 0.05\n")
    chirp = ChirpServer()
    starter.prepare()
    chirp.write_config(starter.env["_CONDOR_CHIRP_CONFIG"], starter.user)
    plain = os.path.join(starter.base, "plain.sh")
    _write(plain, "#!/bin/sh\necho hi\n")
    os.chmod(plain, 0o644)
    p = starter.popen_prepared([plain, "a b", "c"])
    out, err = p.communicate(timeout=60)
    assert p.returncode == 126 and out == b""
    assert err.decode().startswith("jobmon-condor-wrapper: cannot execute the job: ")
    assert starter.error() is None       # no error file: the starter would requeue the job
    policy = knobs(POLICY)
    hold = classad2.ExprTree(policy["SYSTEM_PERIODIC_HOLD_JobmonExec"])
    reason = classad2.ExprTree(policy["SYSTEM_PERIODIC_HOLD_JobmonExec_REASON"])
    subcode = classad2.ExprTree(policy["SYSTEM_PERIODIC_HOLD_JobmonExec_SUBCODE"])
    assert "JobmonExec" in policy["SYSTEM_PERIODIC_HOLD_NAMES"].split()
    ad = shadow_ad(chirp.attrs)
    assert hold.eval(ad) is True
    assert reason.eval(ad) == (f"Failed to execute '{plain}' with arguments a b c: "
                               "(errno=13: 'Permission denied')")
    assert subcode.eval(ad) == 13
    # released once the executable is fixed: idle, then a new shadow runs it again
    assert hold.eval(shadow_ad(chirp.attrs, JobStatus=1)) is False
    assert hold.eval(shadow_ad(chirp.attrs, ShadowBday=ad["ShadowBday"] + 60)) is False
    # a job that never failed is never held by it
    assert hold.eval(shadow_ad({})) is False
    # jobmon keeps a record of the failed start
    [(info, summary, _samples)] = starter.records("5.0")
    assert info["tags"]["start_failed"] == f"{plain}: permission denied"
    assert (summary["exit_code"], summary["outcome"]) == (126, "badput")
    assert info["tags"]["measured"] == "none"


def test_without_chirp_the_error_file_as_before():
    """No Chirp server (ENABLE_CHIRP_DELAYED = false): the error file, which the starter
    reads only with JOB_EXECDIR_PERMISSIONS = world (and then requeues the job)."""
    starter = Starter(site="[condor]\ninterval = 0.2\n")
    missing = os.path.join(starter.base, "missing")
    rc, _out, _err = starter.run([missing])
    assert rc == 127
    assert "no such file or directory" in starter.error()
    [(info, summary, _)] = starter.records("5.0")
    assert summary["exit_code"] == 127 and info["tags"]["start_failed"].startswith(missing)
    assert info["user"] == TEST_USER
