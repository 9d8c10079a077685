"""A job user is hostile to whoever reads their jobs: everything a job user can put in a
job's id, command line, tags or figures, played here as the unprivileged test users,
through the real shipper (as an unprivileged service user) and a real InfluxDB, or the
embedded store, and read back by an administrator with every reader jobmon has.

Each test plays one attack; its docstring says what must hold. docs/security.md lists
them ("What a job user cannot do").
"""
import json
import os
import pty
import re
import subprocess
import time

import pytest

from helpers import JOBMON, as_user, shared_tmpdir
from test_security import ATTACKER, VICTIM, node, plant  # noqa: F401  (node: the fixture)

pytestmark = [pytest.mark.root]

# set the terminal's title, clear the screen, go up a line and forge one; a bidi
# override; a C1 CSI (U+009B, which some terminals obey as ESC [)
EVIL = "\x1b]2;PWNED-TITLE\x07\x1b[2J\x1b[1A\x1b[2Kfake line\u202eevil\u009b31m"
# what no output for a person may hold (a newline aside; CR only before one)
DRIVES_A_TERMINAL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f"
                               "\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def on_a_terminal(argv, env):
    """(exit status, what `argv` wrote to its standard output, a terminal)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdout=slave, stderr=subprocess.DEVNULL, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:          # EIO: the program has closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return p.wait(timeout=60), out.decode().replace("\r\n", "\n")   # the terminal's own CR


def harmless(text):
    """The text drives no terminal: no control character, no bidi control."""
    found = DRIVES_A_TERMINAL.findall(text.replace("\r\n", "\n"))
    assert not found, sorted(set(found))
    assert not re.search(r"\d{30}", text), "a figure printed in hundreds of digits"
    return text


@pytest.mark.parametrize("store", ["influxdb", "local"])
def test_no_job_string_reaches_a_readers_terminal_raw(node, store):
    """A job whose id, command line and tags carry terminal escapes and a bidi override,
    a pilot and its payload named alike, and a forged record whose figures are 1e308 (put
    straight into the database: the shipper sets such lines aside), its figures left out:
    `jobmon query` (terminal, CSV on a terminal), `list`, `report --by account` (terminal,
    CSV on a terminal), `pilot` and the HTML page show every one of them as visible
    text (ESC as U+241B), every figure short, and none of them fails."""
    env = dict(node.env)
    args = []
    if store == "local":
        env["JOBMON_STORE"] = os.path.join(shared_tmpdir(), "jobs.db")
        args = [f"--store={env['JOBMON_STORE']}"]
    job, pilot = "j" + EVIL, "p" + EVIL

    def run(job_id, *cmd, tags=()):
        r = subprocess.run(as_user([JOBMON, "run", "--interval=0.05", f"--job-id={job_id}",
                                    f"--tag=account=a{EVIL}", "--tag=alloc_cpus=1", *tags,
                                    *args, "--", *cmd], ATTACKER),
                           env=env, capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr
    run(job, "true", EVIL)
    run(pilot, JOBMON, "run", "--interval=0.05", f"--job-id=q{EVIL}", f"--tag=pilot={pilot}",
        "--tag=alloc_cpus=1", *args, "--", "true")
    forged = []
    if store == "influxdb":
        t = time.time_ns()
        forged = ["forged"]
        # the shipper sets such lines aside (tests/test_figure_ranges.py): written straight
        # into the database, as by whoever else can write there, the readers must cope
        node.influx.write(node.db, b'jobmon_job,job=forged,scheduler=local,user=%s '
                          b'method="procfs",command="[]",'
                          b'tags="{\\"account\\":\\"b\\"}",start_time=%d,end_time=1e308,'
                          b'ended=1i,wall_seconds=1e308,cpu_user_seconds=1e308,'
                          b'cpu_system_seconds=0,cores_allocated=1,'
                          b'rss_peak_bytes=9223372036854775807i,'
                          b'mem_growth_bytes_per_hour=1e308,mem_rising=1i,exit_code=0i %d\n'
                          % (ATTACKER.encode(), t // 10**9, t))
        node.influx.write(node.samples_db, b'jobmon_sample,job=forged,user=%s cpu_cores=1e308,'
                          b'cpu_user_seconds=1e308,elapsed_seconds=1e308,'
                          b'mem_resident_bytes=9223372036854775807i %d\n'
                          % (ATTACKER.encode(), t + 1000))
        node.ship()

    def reader(*argv):
        r = subprocess.run([JOBMON, *argv], env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (argv, r.stderr)
        return harmless(r.stdout) + harmless(r.stderr)

    shown = "\u241b]2;PWNED-TITLE\u2407\u241b[2J\u241b[1A\u241b[2Kfake line\ufffdevil\ufffd31m"
    assert shown in reader("query", job)                       # the command line, the tags
    for argv in (["list"], ["report", "--by", "account"], ["pilot", pilot],
                 ["report", job, "--html", "-"]):
        assert "PWNED-TITLE" in reader(*argv)
    for job_id in forged:
        text = reader("query", job_id)       # its figures out of any range: left out
        assert "e+308" not in text and "job forged" in text
        reader("report", job_id, "--html", "-")
    for argv in (["query", "--csv", job], ["report", "--by", "account", "--csv"]):
        rc, out = on_a_terminal([JOBMON, *argv], env)
        assert rc == 0 and "PWNED-TITLE" in harmless(out), out
    # CSV for a file or a program keeps the data exactly as stored
    assert "line\u202eevil\u009b31m" in subprocess.run([JOBMON, "query", "--csv", job], env=env,
                                                  capture_output=True, text=True).stdout


@pytest.mark.parametrize("store", ["influxdb", "local"])
def test_ids_that_differ_only_by_a_cr_or_a_tab_stay_apart(node, store):
    """The victim's job "run\\t1" and the attacker's "run\\r1" and "run\\x1b1" (in the
    embedded store, all the victim's): three jobs, not one job with three runs. `jobmon
    query` of each id finds that job alone (its exit code, its user); `jobmon list` shows
    three ids, each control character as its picture."""
    env, args = dict(node.env), []
    if store == "local":
        env["JOBMON_STORE"] = os.path.join(shared_tmpdir(), "jobs.db")
        args = [f"--store={env['JOBMON_STORE']}"]
    jobs = {"run\t1": (VICTIM, 3), "run\r1": (ATTACKER, 5), "run\x1b1": (ATTACKER, 7)}
    for job_id, (user, code) in jobs.items():
        user = VICTIM if store == "local" else user
        r = subprocess.run(as_user([JOBMON, "run", "--interval=0.05", f"--job-id={job_id}",
                                    *args, "--", "sh", "-c", f"exit {code}"], user),
                           env=env, capture_output=True, timeout=120)
        assert r.returncode == code, r.stderr
    if store == "influxdb":
        node.ship()
    for job_id, (user, code) in jobs.items():
        r = subprocess.run([JOBMON, "query", "--json", job_id], env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0 and "runs by users" not in r.stderr, r.stderr
        rep = json.loads(r.stdout)
        assert rep["job"]["status"] == f"exit code {code}" and len(rep["runs"]) == 1
        assert rep["job"]["user"] == (VICTIM if store == "local" else user)
    out = subprocess.run([JOBMON, "list"], env=dict(env, COLUMNS="250"), capture_output=True,
                         text=True, timeout=120).stdout
    ids = {line.split()[0] for line in out.splitlines()[2:] if line.strip()}
    assert {"run\u24091", "run\u240d1", "run\u241b1"} <= ids, out


def test_a_spool_file_name_reaches_the_shippers_log_as_text(node):
    """The attacker names a spool file with terminal escapes and fills it with what is
    not line protocol: the shipper quarantines it and says so, and its log (an admin's
    terminal when run by hand, the journal as a service) shows the name as text."""
    plant(node, b"not line protocol\n", name=f"{time.time_ns()}.999.1.{EVIL}.lp")
    r = node.ship()
    assert "quarantined spool file" in r.stderr and "PWNED-TITLE" in harmless(r.stderr)
