"""jobmon-condor-wrapper doing what the site configuration and the job ad ask, under the
starter's contract (tests/test_condor_wrapper.py): failing open, quietly; the runs of one
job; opting out; the interval a job asks for; the summary file; the per-job path staying
standard library only."""
import json
import os
import re
import sqlite3
import subprocess
import sys

import pytest

from helpers import PYTHON, needs_test_user, root
from test_condor_wrapper import FAST, WRAPPER, Starter, one_record, py
from test_layout import PER_JOB_AVOIDS

pytestmark = [root, needs_test_user]

# the write and read path also as configured for InfluxDB 3 (conftest: site_flavour)
SITE_FLAVOURS = ("1.x", "3.x")


@pytest.fixture
def starter():
    return Starter(site=FAST)


# --- failing open ---------------------------------------------------------------------------------

BROKEN_SITE = {
    "syntax error": "[condor\ninterval = ",
    "unknown key": "[condor]\nintervall = 5\n",
    "spool unusable": "[store]\nkind = \"influxdb\"\n[spool]\ndir = \"/proc/nope\"\n",
}


@pytest.mark.parametrize("name", BROKEN_SITE)
def test_broken_site_configuration_job_runs_and_stderr_stays_the_jobs(name):
    """Fail open, quietly: jobmon's warnings go to syslog, never into the job's stderr."""
    s = Starter(site=BROKEN_SITE[name])
    rc, out, err = s.run(py("import sys; print('ran'); sys.stderr.write('own\\n'); sys.exit(4)"))
    assert (rc, out, err) == (4, b"ran\n", b"own\n")
    assert s.error() is None


def test_warnings_to_stderr_when_the_site_asks():
    s = Starter(site="[condor]\nwarnings = \"stderr\"\n[store]\nkind = \"influxdb\"\n"
                     "[spool]\ndir = \"/proc/nope\"\n")
    rc, out, err = s.run(py("print('ran')"))
    assert (rc, out) == (0, b"ran\n")
    assert err.startswith(b"jobmon: ") and b"spool" in err


def test_broken_installation_runs_the_job_unmonitored(starter):
    """A jobmon module that will not import: the wrapper becomes the job (exec), so the
    job's pid is the wrapper's and its parent the starter."""
    broken = ("import sys; sys.modules['jobmon.job.runner'] = None; "
              "from jobmon.plugins.condor.wrapper import main; main()")
    p = starter.popen(py("import os; print(os.getpid(), os.getppid()); raise SystemExit(6)"),
                      wrapper=[PYTHON, "-c", broken])
    out, err = p.communicate(timeout=30)
    assert p.returncode == 6 and err == b""
    assert [int(x) for x in out.split()] == [p.pid, os.getpid()]
    assert starter.records("5.0") == []


STATE = ("import ctypes, os\n"
         "v = ctypes.c_int(); ctypes.CDLL(None).prctl(37, ctypes.byref(v), 0, 0, 0)\n"
         "blk = [l.split()[1] for l in open('/proc/self/status') if l.startswith('SigBlk')][0]\n"
         "print(os.getpid(), os.getppid(), blk, v.value)\n")


def test_jobmon_failing_before_the_job_starts_still_runs_it(starter):
    """A bug in jobmon after it blocked signals and became a subreaper, before the job
    started: the job is exec'd with neither (PR_GET_CHILD_SUBREAPER = 37)."""
    broken = ("import jobmon.job.launcher as l\n"
              "def spawn(*a): raise RuntimeError('simulated bug')\n"
              "l.spawn = spawn\n"
              "from jobmon.plugins.condor.wrapper import main; main()\n")
    p = starter.popen(py(STATE), wrapper=[PYTHON, "-c", broken], stdin=subprocess.DEVNULL)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and err == b""
    pid, ppid, blocked, subreaper = out.split()
    assert (int(pid), int(ppid)) == (p.pid, os.getpid())
    assert (blocked, subreaper) == (b"0000000000000000", b"0")


def test_unreadable_job_ad_still_monitored(starter):
    starter.prepare()
    starter.env["_CONDOR_JOB_AD"] = "/nonexistent/.job.ad"
    p = starter.popen_prepared(["/bin/sh", "-c", "exit 2"], stdin=subprocess.DEVNULL)
    p.communicate(timeout=30)
    assert p.returncode == 2
    db = sqlite3.connect(starter.store)
    (info,), = db.execute("SELECT info FROM runs").fetchall()
    info = json.loads(info)
    assert info["scheduler"] == "htcondor" and info["job"].startswith("local-")


# --- runs, requests, opt-out ----------------------------------------------------------------------

def test_two_runs_of_one_job_are_two_records(starter):
    """An evicted job restarts: NumJobStarts in its ad at start counts the earlier runs."""
    for starts, code in ((0, 1), (1, 0)):
        starter.attrs["NumJobStarts"] = starts
        rc, _, _ = starter.run(py(f"import time; time.sleep(0.5); raise SystemExit({code})"))
        assert rc == code
    (i1, s1, x1), (i2, s2, x2) = starter.records("5.0")
    assert (i1["run"], i2["run"]) == (1, 2)
    assert (i1["tags"]["run"], i2["tags"]["run"]) == ("1", "2")
    assert (s1["exit_code"], s2["exit_code"]) == (1, 0)
    assert x1 and x2 and len(x1) == s1["samples"] and len(x2) == s2["samples"]
    end1 = (s1["start_time"] + s1["wall_seconds"] + 0.01) * 1e9
    assert all(x["time"] <= end1 for x in x1) and all(x["time"] > end1 for x in x2)


def test_opt_out_runs_the_job_as_the_starter_would(starter):
    starter.attrs["JobMonitor"] = "false"
    code = "import os; print(os.getpid(), os.getppid())"
    p = starter.popen(py(code), stdin=subprocess.DEVNULL)
    out, _ = p.communicate(timeout=30)
    assert [int(x) for x in out.split()] == [p.pid, os.getpid()]   # exec'd: no wrapper left
    assert starter.records("5.0") == []


@pytest.mark.parametrize("site", ["[condor]\nallow_opt_out = false\n",
                                  "[condor]\nenabled = false\n"])
def test_site_decides_about_opt_out_and_monitoring(site):
    s = Starter(site=site, JobMonitor="false")
    rc, _, _ = s.run(["/bin/true"])
    assert rc == 0
    assert len(s.records("5.0")) == (1 if "allow_opt_out" in site else 0)


def test_opt_out_refused_from_the_environment():
    """JOBMON_CONDOR_ALLOW_OPT_OUT (STARTER_JOB_ENVIRONMENT) counts like the file."""
    s = Starter(site=FAST, JobMonitor="false")
    s.prepare()
    s.env["JOBMON_CONDOR_ALLOW_OPT_OUT"] = "false"
    p = s.popen_prepared(["/bin/true"], stdin=subprocess.DEVNULL)
    p.communicate(timeout=30)
    assert p.returncode == 0 and len(s.records("5.0")) == 1


def test_wrapper_defaults_are_the_schemas():
    from jobmon import config
    from jobmon.plugins.condor import wrapper
    assert wrapper._DEFAULTS.items() <= wrapper.defaults().items()
    assert wrapper.defaults() == {k: d for k, (_t, d) in config.SCHEMA["condor"].items()}


def test_monitoring_switched_off_by_the_site():
    """Read once the job runs: the job goes on unmonitored, its status passed on."""
    s = Starter(site="[condor]\nenabled = false\n")
    rc, out, err = s.run(["/bin/sh", "-c", "echo ran; exit 6"])
    assert (rc, out, err) == (6, b"ran\n", b"")
    assert s.records("5.0") == []


@pytest.mark.parametrize("asked, used", [(None, 0.4), ("0.01", 0.2), ("5", 2.0), ("1", 1.0),
                                         ('"soon"', 0.4), ("-3", 0.4)])
def test_interval_request_clamped_to_site_bounds(asked, used):
    site = "[condor]\ninterval = 0.4\nmin_interval = 0.2\nmax_interval = 2.0\n"
    s = Starter(site=site) if asked is None else Starter(site=site, JobMonitorInterval=asked)
    assert s.run(["/bin/true"])[0] == 0
    info, summary, _ = one_record(s)
    assert info["interval"] == used and summary["interval_seconds"] == used
    valid = asked is not None and re.fullmatch(r"[0-9.]+", asked) and float(asked) > 0
    assert info["tags"].get("interval_requested") == (asked if valid else None)


def test_summary_file_on_request(starter):
    starter.attrs["JobMonitorSummary"] = '"jobmon-summary.json"'
    rc, _, _ = starter.run(["/bin/sh", "-c", "exit 9"])
    assert rc == 9
    with open(os.path.join(starter.scratch, "jobmon-summary.json")) as f:
        s = json.load(f)
    assert (s["job"], s["exit_code"], s["tags"]["run"]) == ("5.0", 9, "1")


# --- the per-job path stays small -------------------------------------------------------------

def test_wrapper_loads_only_the_standard_library(starter):
    """The wrapper as it really runs, with -X importtime: everything it loaded beyond the
    bare interpreter is standard library or jobmon (no htcondor2, classad2, typer ...)."""
    def loaded(argv):
        starter.prepare()
        p = starter.popen_prepared(argv, wrapper=[PYTHON, "-X", "importtime"],
                                   stdin=subprocess.DEVNULL)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        return {m.decode().strip().split(".")[0] for m in
                re.findall(rb"^import time:\s+\d+ \|\s+\d+ \|\s+(.+)$", err, re.M)}
    mods = loaded([WRAPPER, "/bin/sh", "-c", "sleep 0.3"]) - loaded(["-c", "pass"])
    foreign = {m for m in mods if m not in sys.stdlib_module_names and m != "jobmon"
               and not m.startswith("_")}
    assert foreign <= {"tomli"}, foreign
    assert "jobmon" in mods
    assert not mods & set(PER_JOB_AVOIDS), mods & set(PER_JOB_AVOIDS)   # as `jobmon run`
