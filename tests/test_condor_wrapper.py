"""jobmon-condor-wrapper under the condor_starter's contract, reproduced exactly (HTCondor's
daemons cannot be installed here): the wrapper runs as an unprivileged user, in a scratch
directory of its own, with the argv and the environment a real 25.14 starter gave
(fixtures/htcondor/real-pool-25.14/wrapper-argv-env.txt) and the starter's .job.ad and
.machine.ad; it is killed as the starter kills: the soft kill to the top pid only, SIGKILL
to the whole process group after a grace period."""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
import weakref

import pytest

from helpers import (PYTHON, TEST_USER, as_user, cpu_tolerance, fixture, needs_test_user, root,
                     shared_tmpdir)
from test_process_model import ECHO_ARGV, HOSTILE_ARGS, PROBE_ENV

WRAPPER = shutil.which("jobmon-condor-wrapper", path=os.path.dirname(PYTHON))
REAL = fixture("htcondor", "real-pool-25.14")
CAPTURED_SCRATCH = "/var/lib/condor/execute/dir_11963/scratch"
pytestmark = [root, needs_test_user]


def captured_env():
    """The environment the real starter gave its USER_JOB_WRAPPER (no PATH: the job's
    environment had none)."""
    with open(os.path.join(REAL, "wrapper-argv-env.txt")) as f:
        text = f.read().split("--- env\n", 1)[1]
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


class Starter:
    """One slot's condor_starter: an execute directory, the ads, the environment, the kills."""

    def __init__(self, base=None, job_ad=None, machine_ad=None, site="", user=TEST_USER,
                 machine_attrs=None, **attrs):
        import pwd
        self.base = base or shared_tmpdir("jobmon-condor-")
        if base is None:   # gone with the Starter, once the test has read what it needs
            weakref.finalize(self, shutil.rmtree, self.base, True)
        self.user = pwd.getpwnam(user)
        self.store = os.path.join(self.base, "store.db")
        self.config = os.path.join(self.base, "jobmon.toml")
        with open(self.config, "w") as f:
            f.write(site or "")
        self.job_ad_text = _read(job_ad or os.path.join(REAL, ".job.ad"))
        self.machine_ad_text = edit_ad(_read(machine_ad or os.path.join(REAL, ".machine.ad")),
                                       machine_attrs or {})
        self.attrs = attrs
        self.n = 0

    def prepare(self, **attrs):
        """A fresh execute dir (dir_N/scratch, owned by the user, mode 0700) with the ads."""
        self.n += 1
        self.execute = os.path.join(self.base, "execute", f"dir_{os.getpid()}{self.n}")
        self.scratch = os.path.join(self.execute, "scratch")
        os.makedirs(self.scratch)
        os.chmod(os.path.join(self.base, "execute"), 0o755)
        edits = dict(self.attrs, **attrs)
        self.job_ad = os.path.join(self.scratch, ".job.ad")
        _write(self.job_ad, edit_ad(self.job_ad_text, edits))
        self.machine_ad = os.path.join(self.scratch, ".machine.ad")
        _write(self.machine_ad, self.machine_ad_text)
        for d in (self.execute, self.scratch):
            os.chown(d, self.user.pw_uid, self.user.pw_gid)
            os.chmod(d, 0o700)
        self.error_file = os.path.join(self.scratch, ".job_wrapper_failure")
        env = {k: v.replace(CAPTURED_SCRATCH, self.scratch)
               .replace(os.path.dirname(CAPTURED_SCRATCH), self.execute)
               for k, v in captured_env().items() if k != "_"}
        env.update(CONDOR_STARTER_PID=str(os.getpid()), HOME=self.user.pw_dir,
                   JOBMON_STORE=self.store, JOBMON_CONFIG=self.config)
        self.env = env
        return self

    def popen(self, argv, wrapper=None, **kw):
        """The wrapper as the job's user, in the scratch dir, in a session of its own."""
        self.prepare()
        return self.popen_prepared(argv, wrapper, **kw)

    def popen_prepared(self, argv, wrapper=None, **kw):
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        return subprocess.Popen(as_user(list(wrapper or [WRAPPER]) + list(argv), self.user.pw_name),
                                cwd=self.scratch, env=self.env, start_new_session=True, **kw)

    def run(self, argv, input=None, timeout=60, **kw):
        p = self.popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                       **kw)
        out, err = p.communicate(input, timeout=timeout)
        return p.returncode, out, err

    def hard_kill(self, p, soft=signal.SIGTERM, vacate=1.0, timeout=30):
        """How the starter ends a job on condor_rm, condor_hold or a vacate: the soft kill
        (SIGTERM, or the job's KillSig / RemoveKillSig) to the top pid only; a job still
        running after the vacate time (MachineMaxVacateTime) is SIGKILLed with its whole
        process group, the wrapper with it. Returns the wrapper's status."""
        os.kill(p.pid, soft)
        try:
            return p.wait(timeout=vacate)
        except subprocess.TimeoutExpired:
            pass
        os.killpg(p.pid, signal.SIGKILL)
        status = p.wait(timeout=timeout)
        _wait_group_gone(p.pid)
        return status

    def error(self):
        return _read(self.error_file) if os.path.exists(self.error_file) else None

    def records(self, job):
        return records(self.store, job)


def edit_ad(text, attrs):
    """The ad text with `Attr = value` lines set (value: ClassAd text) or added."""
    lines = text.splitlines()
    for name, value in attrs.items():
        line = f"{name} = {value}"
        for i, old in enumerate(lines):
            if old.split("=", 1)[0].strip().lower() == name.lower():
                lines[i] = line
                break
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def records(store, job):
    """[(description, summary or None, samples)] of every run of `job`, oldest first."""
    if not os.path.exists(store):
        return []
    db = sqlite3.connect(store)
    try:
        rows = db.execute("SELECT id, info, summary FROM runs WHERE job = ? ORDER BY id",
                          (job,)).fetchall()
        return [(json.loads(i), json.loads(s) if s else None,
                 [json.loads(d) for (d,) in db.execute(
                     "SELECT data FROM samples WHERE run = ? ORDER BY time", (rid,))])
                for rid, i, s in rows]
    finally:
        db.close()


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def py(code, *args):
    return [PYTHON, "-c", code] + [str(a) for a in args]


FAST = "[condor]\ninterval = 0.2\nmin_interval = 0.05\n"


@pytest.fixture
def starter():
    return Starter(site=FAST)


def one_record(starter, job="5.0"):
    recs = starter.records(job)
    assert len(recs) == 1, recs
    return recs[0]


# --- exit status -------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [0, 3, 255])
def test_exit_code_exact(starter, code):
    rc, out, err = starter.run(["/bin/sh", "-c", f"echo out; exit {code}"])
    assert (rc, out, err) == (code, b"out\n", b"")
    assert starter.error() is None
    info, summary, samples = one_record(starter)
    assert (info["job"], info["scheduler"], info["run"]) == ("5.0", "htcondor", 1)
    assert info["user"] == TEST_USER and info["method"] == "procfs"
    assert info["tags"]["measured"] == "process-tree"
    assert (summary["exit_code"], summary["signal"]) == (code, None)
    assert samples and summary["samples"] == len(samples)


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGKILL])
def test_death_by_signal_exact(starter, sig):
    """The wrapper dies of the job's signal: HTCondor records ExitBySignal/ExitSignal."""
    rc, out, err = starter.run(py(f"import os; os.kill(os.getpid(), {int(sig)})"))
    assert rc == -sig, err
    assert err == b"" and starter.error() is None
    _, summary, _ = one_record(starter)
    assert (summary["exit_code"], summary["signal"]) == (None, int(sig))
    assert not [f for f in os.listdir(starter.scratch) if f.startswith("core")]


TRAP = r"""
import os, signal, sys, time
def h(n, f):   # os.write: the signal may come while print() still holds stdout's lock
    os.write(1, b"got %d\n" % n); os._exit(100 + n)
for s in (signal.SIGTERM, signal.SIGQUIT, signal.SIGUSR1, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, h)
sys.stdout.write("ready\n"); sys.stdout.flush()
time.sleep(60)
"""


@pytest.mark.parametrize("kill_sig", ["SIGTERM", "SIGQUIT", "SIGUSR1", "SIGHUP", "SIGINT"])
def test_soft_kill_reaches_the_job(starter, kill_sig):
    """The starter's soft kill (SIGTERM, or the job's KillSig / RemoveKillSig) goes to the
    top pid only: the wrapper passes it on."""
    sig = getattr(signal, kill_sig)
    starter.attrs["KillSig"] = f'"{kill_sig}"'
    p = starter.popen(py(TRAP))
    try:
        assert p.stdout.readline() == b"ready\n"
        os.kill(p.pid, sig)
        out, err = p.communicate(timeout=30)
    finally:
        _kill_group(p)
    assert out == b"got %d\n" % sig and err == b""
    assert p.returncode == 100 + sig
    assert one_record(starter)[1]["exit_code"] == 100 + sig


IGNORE_TERM = r"""
import os, signal, sys, time
signal.signal(signal.SIGTERM, lambda n, f: os.write(1, b"TERM ignored\n"))
sys.stdout.write("ready\n"); sys.stdout.flush()
while True: sum(range(10000))
"""


def test_soft_kill_ignored_then_the_group_is_killed(starter):
    """A job that ignores SIGTERM: after the grace period (MachineMaxVacateTime) the starter
    SIGKILLs the whole process group; wrapper and job are gone, as without jobmon, and the
    samples taken until then are kept."""
    p = starter.popen(py(IGNORE_TERM), stderr=subprocess.DEVNULL)
    try:
        assert p.stdout.readline() == b"ready\n"
        assert starter.hard_kill(p, vacate=1.0) == -signal.SIGKILL
        assert p.stdout.read() == b"TERM ignored\n"   # it had the vacate time to end
    finally:
        _kill_group(p)
    info, summary, samples = one_record(starter)
    assert summary is None and len(samples) >= 3
    assert samples[-1]["cpu_user_seconds"] > samples[0]["cpu_user_seconds"]   # it was busy


LEAVES_A_DAEMON = r"""
import os, sys, time
if os.fork() == 0:                   # a daemon with a child of its own: two processes
    os.setsid()
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        child = os.fork() or time.sleep(60) or os._exit(0)
        with open(sys.argv[1], "w") as f:
            f.write(f"{os.getpid()} {child}")
        time.sleep(60)
        os._exit(0)
    os._exit(0)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.02)
"""


def test_processes_left_running_are_counted_as_the_starters_to_kill(starter):
    """The job's top process is the wrapper: when the job exits, the wrapper ends with it
    and the starter kills what is left of the job. The record counts those processes as
    left over and killed at the end."""
    starter.prepare()
    pids_file = os.path.join(starter.scratch, "daemon.pids")
    p = starter.popen_prepared(py(LEAVES_A_DAEMON, pids_file), stdin=subprocess.DEVNULL)
    try:
        out, err = p.communicate(timeout=30)
    finally:
        for pid in _read(pids_file).split():    # the starter's kill of the job's family
            os.kill(int(pid), signal.SIGKILL)
    assert (p.returncode, err) == (0, b"")
    _, summary, _ = one_record(starter)
    assert (summary["exit_code"], summary["leftover_procs"], summary["procs_killed_at_end"]) \
        == (0, 2, 2), summary


# --- a job that cannot run, a jobmon that cannot monitor --------------------------------------

def test_job_that_cannot_be_executed_writes_the_error_file(starter):
    garbage = os.path.join(starter.base, "garbage")
    _write(garbage, "\x7fELFgarbage")
    os.chmod(garbage, 0o755)
    plain = os.path.join(starter.base, "plain.sh")
    _write(plain, "#!/bin/sh\necho hi\n")
    os.chmod(plain, 0o644)
    for path, status, why in ((os.path.join(starter.base, "nope"), 127, "no such file"),
                              (plain, 126, "permission denied"),
                              (garbage, 126, "exec format error")):
        rc, out, err = starter.run([path, "arg"])
        assert rc == status, (path, rc, err)
        msg = starter.error()
        assert msg and msg.startswith("jobmon-condor-wrapper: cannot execute the job: ")
        assert path in msg and why in msg.lower() and msg.count("\n") == 1
        assert err.decode() == msg and out == b""   # the same line for the job's owner
    # a record of each failed start (docs/htcondor.md; held through Chirp where it works:
    # test_condor_exec_failure.py)
    assert [(s["exit_code"], i["tags"]["measured"]) for i, s, _ in starter.records("5.0")] == \
        [(127, "none"), (126, "none"), (126, "none")]


# --- stdio, cwd, environment, argv --------------------------------------------------------------

def test_hostile_arguments_reach_the_job_exactly(starter):
    rc, out, err = starter.run(py(ECHO_ARGV) + HOSTILE_ARGS)
    assert rc == 0, err
    assert eval(out) == [a if isinstance(a, bytes) else os.fsencode(a) for a in HOSTILE_ARGS]  # noqa: S307


def test_stdin_passthrough_and_large_output(starter):
    data = os.urandom(1 << 20) + b"\0\n\r\xff" * 1000
    rc, out, err = starter.run(["/bin/cat"], input=data)
    assert (rc, out, err) == (0, data, b"")
    code = ("import sys; sys.stdout.buffer.write(bytes(range(256)) * 4096); "
            "sys.stderr.buffer.write(b'e\\x00\\xff\\n' * 70000)")
    rc, out, err = starter.run(py(code))
    assert rc == 0 and out == bytes(range(256)) * 4096 and err == b"e\x00\xff\n" * 70000


def test_cwd_environment_fds_signals_limits_untouched(starter):
    """What the job sees with the wrapper is what it sees when the starter runs it alone."""
    starter.prepare()
    bare = starter.popen_prepared(py(PROBE_ENV), wrapper=[], stdin=subprocess.DEVNULL)
    b_out, b_err = bare.communicate(timeout=30)
    wrapped = starter.popen_prepared(py(PROBE_ENV), stdin=subprocess.DEVNULL)
    w_out, w_err = wrapped.communicate(timeout=30)
    assert bare.returncode == wrapped.returncode == 0, (b_err, w_err)
    assert w_err == b""
    a, b = eval(b_out), eval(w_out)   # noqa: S307 (our own repr)
    for k in a:
        assert a[k] == b[k], k
    assert b["cwd"] == starter.scratch and dict(b["env"])["_CONDOR_SLOT"] == "slot1_2"


def test_relative_executable_script_and_container_command(starter):
    """+PreserveRelativeExecutable: a bare name resolved in the job's PATH (the default one
    here: the starter's environment has none), a relative path in the scratch dir; a
    script; a container runtime wrapping the command (the wrapper runs outside it)."""
    rc, out, _ = starter.run(["sh", "-c", "echo bare $0"])
    assert (rc, out) == (0, b"bare sh\n")
    starter.prepare()
    for name, body in (("job.sh", "#!/bin/sh\necho script \"$@\"\nexit 5\n"),
                       ("apptainer", "#!/bin/sh\n[ \"$1\" = exec ] && shift 2\nexec \"$@\"\n")):
        path = os.path.join(starter.scratch, name)
        _write(path, body)
        os.chmod(path, 0o755)
        os.chown(path, starter.user.pw_uid, starter.user.pw_gid)
    p = starter.popen_prepared(["./job.sh", "a b", "c"], stdin=subprocess.DEVNULL)
    out, _ = p.communicate(timeout=30)
    assert (p.returncode, out) == (5, b"script a b c\n")
    p = starter.popen_prepared(["./apptainer", "exec", "image.sif", "/bin/sh", "-c", "exit 7"],
                               stdin=subprocess.DEVNULL)
    p.communicate(timeout=30)
    assert p.returncode == 7


def test_wrapper_stays_the_top_process_and_takes_the_last_sample(starter):
    code = ("import os, resource, time\n"
            "print(os.getppid(), flush=True)\n"
            "t = time.process_time()\n"
            "while time.process_time() - t < 0.5: pass\n"
            "ru = resource.getrusage(resource.RUSAGE_SELF)\n"
            "print(ru.ru_utime + ru.ru_stime)\n")
    p = starter.popen(py(code), stdin=subprocess.DEVNULL)
    out, err = p.communicate(timeout=30)
    ppid, cpu = out.split()
    assert p.returncode == 0 and int(ppid) == p.pid
    _, summary, samples = one_record(starter)
    jobmon_cpu = summary["cpu_user_seconds"] + summary["cpu_system_seconds"]
    assert abs(jobmon_cpu - float(cpu)) <= cpu_tolerance(float(cpu)), (jobmon_cpu, cpu)
    assert samples[-1]["elapsed_seconds"] >= 0.5


# --- helpers ---------------------------------------------------------------------------------------

def _kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(timeout=30)


def _wait_group_gone(pgid):
    for _ in range(200):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"process group {pgid} still has processes")
