"""`jobmon top` and `jobmon watch` as an admin uses them: in a real pseudo-terminal of 80x24
(the screen clipped to its height, the title, header and least efficient jobs kept; `q`
quits), into a pipe (no escape codes), and `watch` on a job whose processes run, sleep in a
pipe and linger as zombies: their states, where they wait, and when the job last used CPU."""
import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest

from helpers import JOBMON, jobmon, needs_root
from jobmon.influx import schema

ROWS, COLS = 24, 80


def in_pty(argv, env, rows=ROWS, cols=COLS):
    """(process, master fd) of argv on a new pseudo-terminal of rows x cols (the master
    also shows the terminal's settings)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def own_terminal():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                         preexec_fn=own_terminal, close_fds=True)
    os.close(slave)
    return p, master


def read_until(master, done, timeout=30):
    """What the terminal showed until done(text) holds."""
    out, deadline = b"", time.time() + timeout
    while time.time() < deadline:
        if select.select([master], [], [], 0.2)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if done(out.decode("utf-8", "replace")):
                return out.decode("utf-8", "replace")
    raise AssertionError(f"the terminal showed: {out.decode('utf-8', 'replace')!r}")


def screens(text):
    """The screens drawn: what follows each clear-screen."""
    return [s for s in text.split("\x1b[H\x1b[2J")[1:]]


def quits_on_q(p, master):
    os.write(master, b"q")
    assert p.wait(timeout=10) == 0


@pytest.fixture
def spool_of_25(tmp_path):
    """A spool with 25 running jobs (their files locked as a live sampler locks them): 3
    stalled (the least efficient), 22 busy; (env, ids of the stalled, fds to close)."""
    from jobmon.ship.spooldir import prepare_spool
    spool = str(tmp_path / "spool")
    prepare_spool(spool)
    config = tmp_path / "jobmon.toml"
    config.write_text(f'[store]\nkind = "influxdb"\n[spool]\ndir = "{spool}"\n')
    env = dict(os.environ, JOBMON_CONFIG=str(config), TERM="xterm")
    env.pop("JOBMON_STORE", None)
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    now, fds = time.time(), []
    for i in range(25):
        stalled = i % 9 == 4                       # 4, 13, 22: not first in any listing
        job = {"job": f"{'stalled' if stalled else 'busy'}-{i:02d}", "start_time": now - 600,
               "interval": 1.0, "method": "procfs", "command": ["x"], "scheduler": "local",
               "tags": {"RequestCpus": "2"}}
        cpu = 0.5 + i if stalled else 900.0 + i
        line = schema.job_line(job) + schema.sample_line(schema.job_tags(job), {
            "time": time.time_ns(), "elapsed_seconds": 600.0, "cpu_user_seconds": cpu,
            "cpu_system_seconds": 0.0, "cpu_cores": 0.0 if stalled else 1.5, "procs": 2,
            "mem_resident_bytes": (i + 1) << 20})
        fd = os.open(os.path.join(spool, f"{time.time_ns()}.{i}.1.ab{i:02d}.lp"),
                     os.O_WRONLY | os.O_CREAT, 0o640)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line.encode())
        fds.append(fd)
    yield env, ["stalled-04", "stalled-13", "stalled-22"]
    for fd in fds:
        os.close(fd)


@needs_root
def test_top_in_a_terminal_keeps_its_title_header_and_first_rows_and_quits_on_q(spool_of_25):
    env, stalled = spool_of_25
    p, master = in_pty([JOBMON, "top", "--sort", "eff", "--interval", "0.3", "--store=none"],
                       env)
    try:
        text = read_until(master, lambda t: len(screens(t)) >= 2)
        screen = screens(text)[0].replace("\r\n", "\n")
        lines = screen.rstrip("\n").split("\n")
        assert len(lines) <= ROWS - 1, screen          # nothing scrolls away
        assert lines[0].startswith("jobmon top — ") and "25 running jobs" in lines[0]
        assert lines[1].split()[:3] == ["JOB", "USER", "CORES"]
        assert [x.split()[0] for x in lines[2:5]] == stalled   # the least efficient first
        assert re.match(r"… \d+ more lines below", lines[-1]), lines[-1]
        assert all(len(x) <= COLS for x in lines)
        lflag = termios.tcgetattr(master)[3]     # keys one by one, unechoed
        assert not lflag & (termios.ECHO | termios.ICANON)
        quits_on_q(p, master)
        lflag = termios.tcgetattr(master)[3]     # given back: echo on, line by line
        assert lflag & termios.ECHO and lflag & termios.ICANON
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)


@needs_root
def test_top_into_a_pipe_writes_no_escape_codes(spool_of_25):
    env, stalled = spool_of_25
    # Ctrl-C as a terminal gives it: a suite started in the background without job control
    # runs with SIGINT ignored, and a Python started so never raises KeyboardInterrupt
    p = subprocess.Popen([JOBMON, "top", "--interval", "0.2", "--store=none"], env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(2.5)          # several screens
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    text = out.decode()
    assert "\x1b" not in text and text.count("jobmon top — ") >= 2, (text, err)
    assert sum(stalled[0] in x for x in text.splitlines()) >= 2    # every job in each screen


# a job with a busy process, one asleep reading a pipe, and a zombie its parent never reaps
STATES = r"""
import os, sys, time
r, w = os.pipe()
if os.fork() == 0:           # asleep in the pipe's read
    os.read(r, 1); os._exit(0)
if os.fork() == 0:           # exits at once: a zombie
    os._exit(0)
if os.fork() == 0:           # busy for 2 s, then the job goes quiet
    end = time.time() + 2
    while time.time() < end: pass
    os._exit(0)
time.sleep(30)
"""


def test_watch_shows_states_waits_and_the_last_cpu_use_and_quits_on_q(tmp_path):
    store = str(tmp_path / "w.db")
    env = dict(os.environ, JOBMON_PROCS_EVERY_SECONDS="0.5", JOBMON_STORE=store)
    job = subprocess.Popen([JOBMON, "run", "--interval=0.25", "--cgroup=none",
                            "--job-id=stuck.1", "--", sys.executable, "-c", STATES],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        def quiet(text):     # the busy child is gone and the breakdown has seen the rest
            return ("CPU: last used" in text and " Z" in text and "S" in text
                    and "top processes" in text)
        deadline, out = time.time() + 40, ""
        while time.time() < deadline and not quiet(out):
            out = jobmon("watch", "stuck.1", "--once", "--spool=none", env=env).stdout
            time.sleep(0.3)
        assert quiet(out), out
        lines = out.splitlines()
        assert max(map(len, lines)) <= COLS
        assert re.search(r"CPU: last used \d+(\.\d)?s ago \(under 0\.01 cores since\)", out)
        row = next(x for x in lines if x.startswith("python"))
        state = row[23:31].split()
        assert {s[0] for s in state} >= {"Z", "S"}, row        # zombies, sleepers
        assert re.search(r"pipe_read|do_wait|nanosleep", row), row   # where they wait
        p, master = in_pty([JOBMON, "watch", "stuck.1", "--interval", "0.3", "--spool=none"],
                           env)
        read_until(master, lambda t: len(screens(t)) >= 1 and "top processes" in t)
        quits_on_q(p, master)
        os.close(master)
    finally:
        job.kill()
        job.wait()
