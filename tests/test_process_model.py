"""The wrapper process model through the real `jobmon run`: exact exit status,
signal forwarding, stdio/cwd/environment untouched, start errors, hostile command lines,
failing open when monitoring cannot start."""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from helpers import JOBMON, PYTHON, jobmon_run, py

# every run here writes nowhere but the test's tmp dir
pytestmark = pytest.mark.usefixtures("isolated_store")


@pytest.fixture
def isolated_store(tmp_path, monkeypatch):
    path = tmp_path / "store.db"
    monkeypatch.setenv("JOBMON_STORE", str(path))
    return path


def run(cmd, *args, **kw):
    return jobmon_run(list(args) + ["--interval=0.2"], cmd, **kw)


# --- exit status ---------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [0, 1, 3, 255])
def test_exit_code(code, tmp_path):
    summary = tmp_path / "s.json"
    r = run(["sh", "-c", f"exit {code}"], f"--summary={summary}")
    assert r.returncode == code, r.stderr
    s = json.loads(summary.read_text())
    assert (s["exit_code"], s["signal"]) == (code, None)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT])
def test_death_by_signal(sig, tmp_path):
    """jobmon dies by the command's signal, so a scheduler records ExitBySignal correctly."""
    summary = tmp_path / "s.json"
    r = run(py(f"import os; os.kill(os.getpid(), {int(sig)})"), f"--summary={summary}")
    assert r.returncode == -sig, (r.returncode, r.stderr)
    s = json.loads(summary.read_text())
    assert (s["exit_code"], s["signal"]) == (None, int(sig))
    # jobmon adds no core dump of its own next to the command's
    assert not any(p.name.startswith("core") for p in tmp_path.iterdir())


TRAP = r"""
import os, signal, sys, time
def h(n, f):
    sys.stdout.write("got %d\n" % n); sys.stdout.flush(); os._exit(100 + n)
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
          signal.SIGQUIT, signal.SIGCONT, signal.SIGWINCH, signal.SIGALRM):
    signal.signal(s, h)
sys.stdout.write("ready\n"); sys.stdout.flush()
# short sleeps: a signal that lands after Python's last check for one and before it
# enters a long sleep would wait for that sleep to end (a Python race, not jobmon's)
for _ in range(600):
    time.sleep(0.05)
os._exit(99)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1,
                                 signal.SIGUSR2, signal.SIGQUIT, signal.SIGCONT, signal.SIGWINCH,
                                 signal.SIGALRM])
def test_signal_to_jobmon_reaches_command(sig):
    p = subprocess.Popen([JOBMON, "run", "--interval=0.1", "--", PYTHON, "-c", TRAP],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert p.stdout.readline() == b"ready\n"
        p.send_signal(sig)
        out, err = p.communicate(timeout=20)
    finally:
        p.kill()
    assert out == b"got %d\n" % sig, err
    assert p.returncode == 100 + sig, err


def test_signal_forwarded_once_while_sampling():
    """Many signals in a row, between samples: each reaches the command exactly once."""
    code = r"""
import os, signal, sys, time
n = [0]
def h(s, f): n[0] += 1
signal.signal(signal.SIGUSR1, h)
signal.signal(signal.SIGTERM, lambda s, f: (sys.stdout.write("%d\n" % n[0]), sys.stdout.flush(), os._exit(0)))
sys.stdout.write("ready\n"); sys.stdout.flush()
while True: time.sleep(0.01)
"""
    p = subprocess.Popen([JOBMON, "run", "--interval=0.01", "--", PYTHON, "-c", code],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert p.stdout.readline() == b"ready\n"
        for _ in range(20):
            p.send_signal(signal.SIGUSR1)
            time.sleep(0.02)  # standard signals coalesce: give each time to be delivered
        time.sleep(0.2)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=20)
    finally:
        p.kill()
    assert p.returncode == 0, err
    # never twice; a pending standard signal may coalesce with the next under heavy load
    assert 15 <= int(out) <= 20


# --- commands that cannot be started ----------------------------------------------------------------

def test_missing_command_127(tmp_path):
    for cmd in ("jobmon-no-such-command-xyz", str(tmp_path / "nope")):
        r = run([cmd, "arg"])
        assert r.returncode == 127
        err = r.stderr.decode()
        assert err.count("\n") == 1 and "jobmon:" in err and cmd in err
        assert "not found" in err or "no such file" in err.lower()
        assert r.stdout == b""


def test_not_executable_126(tmp_path):
    f = tmp_path / "script.sh"
    f.write_text("#!/bin/sh\necho hi\n")
    f.chmod(0o644)
    d = tmp_path / "adir"
    d.mkdir()
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x7fELF\x00\x01garbage")
    garbage.chmod(0o755)
    for cmd in (str(f), str(d), str(garbage)):
        r = run([cmd])
        assert r.returncode == 126, (cmd, r.returncode, r.stderr)
        err = r.stderr.decode()
        assert err.count("\n") == 1 and "jobmon:" in err and cmd in err
        assert r.stdout == b""


def test_start_error_leaves_no_transient_cgroup():
    from jobmon import cgroups
    mounts, paths = cgroups.own()
    bases = [b for b in (cgroups.resolve(mounts, paths, k)
                         for k in ("memory", "cpuacct", "pids", "blkio", "v2")) if b]

    def job_cgroups():
        return {(b, n) for b in bases for n in os.listdir(b) if n.startswith("jobmon-")}
    before = job_cgroups()
    p = subprocess.Popen([JOBMON, "run", "--", "jobmon-no-such-command-xyz"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.communicate(timeout=30)
    assert p.returncode == 127
    assert job_cgroups() <= before


# --- stdio, cwd, environment ----------------------------------------------------------------------

def test_stdin_to_stdout_binary_exact():
    data = os.urandom(1 << 20) + b"\x00\n\r\xff" * 1000
    r = run(["cat"], input=data)
    assert r.returncode == 0
    assert r.stdout == data
    assert r.stderr == b""


def test_large_output_and_stderr_untouched():
    code = ("import sys, os\n"
            "sys.stdout.buffer.write(bytes(range(256)) * 4096)\n"   # 1 MiB
            "sys.stderr.buffer.write(b'err\\x00\\xff\\n' * 20000)\n")
    r = run(py(code))
    assert r.returncode == 0
    assert r.stdout == bytes(range(256)) * 4096
    assert r.stderr == b"err\x00\xff\n" * 20000


def test_closed_stdin_and_pipe_break():
    # stdin at EOF reaches the command as EOF
    r = run(["cat"], stdin=subprocess.DEVNULL)
    assert (r.returncode, r.stdout) == (0, b"")
    # a reader that goes away: the command gets SIGPIPE as without jobmon
    p = subprocess.Popen([JOBMON, "run", "--", "yes"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.read(100000)
    p.stdout.close()
    p.wait(timeout=20)
    assert p.returncode == -signal.SIGPIPE


PROBE_ENV = r"""
import os, sys, resource
def status(k):
    with open("/proc/self/status") as f:
        return [l for l in f if l.startswith(k)][0]
out = {
  "cwd": os.getcwd(),
  "env": sorted(os.environ.items()),
  "fds": sorted(os.listdir("/proc/self/fd")),
  "umask": os.umask(0o22),
  "sigblk": status("SigBlk:"), "sigign": status("SigIgn:"),
  "limits": open("/proc/self/limits").read(),
  "uid": os.getresuid(), "gid": os.getresgid(), "groups": sorted(os.getgroups()),
  "nice": os.nice(0), "tty": [os.isatty(i) for i in range(3)],
}
sys.stdout.write(repr(out))
"""


def test_cwd_env_fds_signals_untouched(tmp_path):
    wd = tmp_path / "work dir ü"
    wd.mkdir()
    env = dict(os.environ, ODD="a\nb=c", EMPTY="", SPACES="  x  ")
    env.pop("JOBMON_STORE")  # the store comes from --store below
    store = f"--store={tmp_path / 'store.db'}"
    bare = subprocess.run([PYTHON, "-c", PROBE_ENV], cwd=wd, env=env, capture_output=True,
                          timeout=30, stdin=subprocess.DEVNULL)
    wrapped = subprocess.run([JOBMON, "run", store, "--", PYTHON, "-c", PROBE_ENV], cwd=wd,
                             env=env, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    assert wrapped.returncode == 0, wrapped.stderr
    assert wrapped.stderr == b""
    a, b = eval(bare.stdout), eval(wrapped.stdout)   # noqa: S307 (our own repr)
    for k in a:
        assert a[k] == b[k], k


def test_env_and_pwd_exact_with_env0(tmp_path):
    env = dict(os.environ, PWD=str(tmp_path), WEIRD="x\x01y")
    env.pop("JOBMON_STORE")
    store = f"--store={tmp_path / 'store.db'}"
    for cmd in (["env", "-0"], ["pwd"], ["pwd", "-P"]):
        bare = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, timeout=30)
        wrapped = subprocess.run([JOBMON, "run", store, "--"] + cmd, cwd=tmp_path, env=env,
                                 capture_output=True, timeout=30)
        assert wrapped.returncode == bare.returncode == 0
        assert wrapped.stdout == bare.stdout, cmd


# --- hostile command lines ------------------------------------------------------------------------

ECHO_ARGV = "import os, sys; sys.stdout.write(repr([os.fsencode(a) for a in sys.argv[1:]]))"

HOSTILE_ARGS = [
    "a b", "  leading and trailing  ", "line1\nline2\r\n", "tab\there", "'", '"', "`id`",
    "$(echo pwned)", "${HOME}", "*", "?", "~", ";", "|", "&&", "\\", "--", "-", "-x", "--help",
    "--interval=5", "--tag=a=b", "-- --", "", "=", "ünïcödé ✓", b"\xff\xfe\x80not-utf8",
    "x" * 100_000,
]


def test_hostile_argv_reach_command_exactly():
    r = run([PYTHON, "-c", ECHO_ARGV] + HOSTILE_ARGS)
    assert r.returncode == 0, r.stderr
    got = eval(r.stdout)  # noqa: S307
    assert got == [a if isinstance(a, bytes) else os.fsencode(a) for a in HOSTILE_ARGS]


def test_command_that_looks_like_an_option():
    # everything after -- is the command, even --help or --version
    r = run([PYTHON, "-c", ECHO_ARGV, "--help"])
    assert eval(r.stdout) == [b"--help"]
    r = jobmon_run(["--interval=0.2"], ["--", PYTHON, "-c", ECHO_ARGV])
    # a second "--" belongs to the command line: `--` runs as a command (not found) or is kept
    assert r.returncode in (0, 127)


def test_many_args():
    args = [str(i) for i in range(20000)]
    r = run([PYTHON, "-c", "import sys; print(len(sys.argv) - 1, sys.argv[-1])"] + args)
    assert r.stdout == b"20000 19999\n"


# --- failing open -------------------------------------------------------------------------------------

@pytest.mark.parametrize("store", ["/proc/nope/x.db", "/dev/null/x.db"])
def test_unwritable_store_command_still_runs(tmp_path, store):
    marker = tmp_path / "ran"
    code = f"import sys; open({str(marker)!r}, 'w').write('yes'); sys.stdout.write('out'); sys.exit(3)"
    summary = tmp_path / "s.json"
    r = jobmon_run(["--interval=0.1", f"--summary={summary}"], py(code), store=store)
    assert marker.read_text() == "yes"
    assert r.returncode == 3
    assert r.stdout == b"out"
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jobmon:"), r.stderr
    # the summary file still records the job
    assert json.loads(summary.read_text())["exit_code"] == 3


def test_unwritable_out_and_summary_command_still_runs(tmp_path):
    marker = tmp_path / "ran"
    code = f"import sys; open({str(marker)!r}, 'w').write('yes'); sys.exit(5)"
    r = jobmon_run(["--interval=0.1", "--out=/proc/nope/out.jsonl",
                    "--summary=/proc/nope/s.json"], py(code), store=str(tmp_path / "s.db"))
    assert marker.read_text() == "yes"
    assert r.returncode == 5
    assert r.stderr.decode().count("jobmon:") >= 1
    assert "Traceback" not in r.stderr.decode()


def test_jobmon_usage_errors_exit_2(tmp_path):
    marker = tmp_path / "ran"
    cmd = py(f"open({str(marker)!r}, 'w')")
    for bad in (["--interval=0"], ["--interval=-1"], ["--cgroup=weird"], ["--format=xml"]):
        r = jobmon_run(bad, cmd)
        assert r.returncode == 2, (bad, r.stderr)
        assert r.stderr and b"Traceback" not in r.stderr
    r = subprocess.run([JOBMON, "run"], capture_output=True, timeout=30)
    assert r.returncode == 2
    assert not marker.exists()


# --- the job's own memory peak, and its parent ---------------------------------------------------

@pytest.mark.parametrize("mode", ["--cgroup=none", "--cgroup=auto"])
def test_tiny_job_peak_is_its_own(tmp_path, mode):
    """A job smaller than jobmon: its resident peak is its own, not that of the copy of
    jobmon's Python process it was forked from (~9 MiB)."""
    summary = tmp_path / "s.json"
    r = run(["cat", "/proc/self/status"], f"--summary={summary}", mode)
    assert r.returncode == 0, r.stderr
    hwm = int(re.search(rb"VmHWM:\s+(\d+) kB", r.stdout).group(1)) * 1024
    peak = json.loads(summary.read_text())["rss_peak_bytes"]
    # the kernel keeps RSS in per-CPU counters (Linux 6.2+): the high-water mark it
    # records at exit may differ from the VmHWM the job read by a few dozen pages
    assert abs(peak - hwm) <= 256 * 1024, (peak, hwm)


def test_job_parent_is_jobmon():
    p = subprocess.Popen([JOBMON, "run", "--store=none", "--", PYTHON, "-c",
                          "import os; print(os.getppid())"], stdout=subprocess.PIPE)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 0 and int(out) == p.pid


def _my_children():
    """Pids whose parent is this process, zombies included."""
    out = set()
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except (OSError, ValueError):
            continue
        if int(stat[stat.rindex(b")") + 2:].split()[1]) == os.getpid():
            out.add(int(name))
    return out


@pytest.mark.parametrize("use_trampoline", [True, False])
def test_spawn_with_and_without_trampoline(tmp_path, use_trampoline):
    from jobmon.job import launcher, trampoline
    tramp = trampoline.load() if use_trampoline else None
    if use_trampoline and tramp is None:
        pytest.skip("no exec trampoline on this machine (x86-64 Linux with memfd only)")
    try:
        pid = launcher.spawn(["sh", "-c", "exit 7"], None, tramp)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 7
        garbage = tmp_path / "garbage"
        garbage.write_bytes(b"\x7fELF\x00\x01garbage")
        garbage.chmod(0o755)
        before = _my_children()
        with pytest.raises(launcher.StartError) as e:
            launcher.spawn([str(garbage)], None, tramp)
        assert e.value.status == 126
        assert _my_children() <= before   # nothing left behind, running or zombie
    finally:
        if tramp is not None:
            os.close(tramp)
