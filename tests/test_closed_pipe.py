"""A closed pipe spares the job: `jobmon run --out -` into a reader that goes away (`| head
-1`), or the HTCondor wrapper's warnings into a closed stderr, end jobmon's output only.
The job runs to its own end with its own exit status and its whole run is stored; a
SIGPIPE another process sends to jobmon still reaches the job."""
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from helpers import IS_ROOT, JOBMON, TEST_USER, as_user, have_user, shared_tmpdir
from test_condor_wrapper import FAST, Starter, py

MODES = {"procfs": ["--cgroup=none"],
         "cgroup-v1": ["--cgroup=create", "--cgroup-version=1"],
         "cgroup-v2": ["--cgroup=create", "--cgroup-version=2"]}
# the job outlives several samples, then says it ran to its end and exits 3
JOB = "sleep 1.2; echo done > {marker}; exit 3"


def runs(store):
    """[(info, summary, samples stored, the last one's elapsed_seconds)]."""
    db = sqlite3.connect(store)
    try:
        return db.execute("SELECT r.info, r.summary, (SELECT count(*) FROM samples s "
                          "WHERE s.run = r.id), (SELECT json_extract(data, '$.elapsed_seconds') "
                          "FROM samples s WHERE s.run = r.id ORDER BY time DESC LIMIT 1) "
                          "FROM runs r").fetchall()
    finally:
        db.close()


def head_1(argv):
    """argv | head -1: the reader takes one line and closes its end of the pipe."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read()
    p.wait(timeout=60)
    return p.returncode, first, err.decode()


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("mode", list(MODES))
def test_out_into_a_closed_pipe_spares_the_job(mode, fmt):
    user = None
    if mode == "procfs":
        if IS_ROOT and not have_user():
            pytest.skip(f"needs user {TEST_USER} (tests/setup.sh)")
        user = TEST_USER if IS_ROOT else None
    elif not IS_ROOT:
        pytest.skip("needs root")
    tmp = shared_tmpdir()
    store, summary, marker = (os.path.join(tmp, n) for n in ("s.db", "s.json", "marker"))
    argv = [JOBMON, "run", "--job-id=x", f"--format={fmt}", "--out=-", "--interval=0.1",
            f"--summary={summary}", f"--store={store}"] + MODES[mode] + \
        ["--", "sh", "-c", JOB.format(marker=marker)]
    rc, first, err = head_1(as_user(argv) if user else argv)
    assert first, err
    assert rc == 3, err
    assert open(marker).read() == "done\n", err
    assert err.count("its reader is gone") == 1, err
    assert "Traceback" not in err, err
    import json
    s = json.load(open(summary))
    if s["method"] != mode:
        pytest.skip(f"{mode} not available here")
    assert (s["exit_code"], s["signal"], s["outcome"]) == (3, None, "badput"), s
    assert s["wall_seconds"] >= 1.2, s
    [(info, stored, n, last)] = runs(store)
    stored = json.loads(stored)
    assert (stored["exit_code"], stored["signal"]) == (3, None)
    # sampled and stored all along, to the job's end, not only until the pipe closed (its
    # reader took the first line, at the first sample: 0.1 s)
    assert n == stored["samples"] >= 3 and last >= 1.2, (n, stored["samples"], last)


def test_a_sigpipe_sent_to_jobmon_still_reaches_the_job(tmp_path):
    """Only jobmon's own writes are kept from the job: a SIGPIPE another process sends is
    forwarded like any other signal."""
    p = subprocess.Popen([JOBMON, "run", "--store=none", "--cgroup=none", "--", "sh", "-c",
                          "echo up; exec sleep 30"], stdout=subprocess.PIPE)
    assert p.stdout.readline() == b"up\n"
    time.sleep(0.2)
    os.kill(p.pid, signal.SIGPIPE)
    assert p.wait(timeout=20) == -signal.SIGPIPE




@pytest.mark.root
@pytest.mark.skipif(not (IS_ROOT and have_user()), reason="needs root and the test user")
def test_the_condor_wrappers_warning_into_a_closed_stderr_spares_the_job():
    """The wrapper's warnings go to the job's stderr where the site says so; that pipe's
    reader is gone when the wrapper warns (its spool is unusable, the embedded store
    takes the samples): the job ends as it would have, its run stored."""
    site = FAST + 'warnings = "stderr"\n[store]\nkind = "influxdb"\n' \
        '[spool]\ndir = "/nonexistent/jobmon-spool"\n'
    starter = Starter(site=site).prepare()
    marker = os.path.join(starter.scratch, "marker")
    r, w = os.pipe()
    os.close(r)   # the reader went away before anything was written
    try:
        p = starter.popen_prepared(py(f"import time; time.sleep(1.2); open({marker!r}, 'w')"
                                      ".write('done'); raise SystemExit(3)"),
                                   stdout=subprocess.DEVNULL, stderr=w,
                                   stdin=subprocess.DEVNULL)
    finally:
        os.close(w)
    assert p.wait(timeout=60) == 3
    assert open(marker).read() == "done"
    [(info, summary, samples)] = starter.records("5.0")
    assert (summary["exit_code"], summary["signal"]) == (3, None)
    assert summary["wall_seconds"] >= 1.2 and len(samples) == summary["samples"] >= 5


def test_a_file_size_limit_jobmon_runs_into_spares_the_job(tmp_path):
    """jobmon's own write past RLIMIT_FSIZE raises SIGXFSZ on jobmon (the kernel's, sent as
    by jobmon itself): jobmon gets EFBIG, the job runs to its end with its own status."""
    import resource
    marker = tmp_path / "marker"
    out = tmp_path / "samples.jsonl"

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
    r = subprocess.run([JOBMON, "run", f"--out={out}", "--store=none", "--cgroup=none",
                        "--interval=0.05", "--", "sh", "-c", JOB.format(marker=marker)],
                       preexec_fn=small_files, capture_output=True, text=True, timeout=60)
    assert r.returncode == 3, r.stderr
    assert marker.read_text() == "done\n"
    assert 0 < out.stat().st_size <= 2048 and "Traceback" not in r.stderr
