"""The end-of-job report card: the pure card (<= 8 lines of <= 80 columns, from summaries
with or without the efficiency fields, with the advice rules' lines); the HTCondor
wrapper appending it to the job's stderr after the job ended, only where the site and the
job ask; the Slurm sampler's file and mail; and that nothing of it ever changes the job's
exit status or output when it fails, or when nobody asked (the default)."""
import json
import os
import signal
import stat
import subprocess
import time

import pytest

from helpers import PYTHON, TEST_USER, as_user, jobmon_run, needs_test_user, shared_tmpdir
from jobmon.sinks import card_text as card
from jobmon.sinks import card as delivery
from jobmon.plugins.slurm import card as slurm_card

GIB = 1 << 30

FULL = {"job": "4711.0", "host": "node01", "user": "alice", "exit_code": 0, "signal": None,
        "wall_seconds": 3723.0, "cpu_user_seconds": 4000.0, "cpu_system_seconds": 467.6,
        "cpu_cores_avg": 1.2, "rss_peak_bytes": 3 * GIB, "read_bytes": 5 * GIB,
        "write_bytes": 300 << 20, "cores_allocated": 8.0, "cores_requested": 8.0,
        "mem_allocated_bytes": 32 * GIB, "mem_requested_bytes": 32 * GIB,
        "cpu_efficiency_percent": 15.0, "mem_efficiency_percent": 9.375,
        "gpu_count": 1, "gpu_util_avg_percent": 35.0, "gpu_mem_peak_bytes": 2 * GIB}


def report_cfg():
    from jobmon import config
    return config.load(env={"JOBMON_CONFIG": os.devnull})["report"]


def check_shape(lines):
    assert 1 <= len(lines) <= card.MAX_LINES, lines
    assert all(len(x) <= card.MAX_COLUMNS for x in lines), [x for x in lines if len(x) > 80]


# --- the card itself (pure) ----------------------------------------------------------------

def test_card_of_a_full_summary_with_real_advice():
    advice = card.advice_for(FULL, report_cfg())
    assert [r for r, _ in advice][:2] == ["cpu_underused", "memory_overrequested"]
    lines = card.card_lines(FULL, advice)
    check_shape(lines)
    text = "\n".join(lines)
    assert lines[0] == "jobmon: job 4711.0 exit code 0 after 1:02:03 on node01"
    assert "CPU: 1.20 of 8 cores busy on average (15 % efficiency)" in text
    assert "Memory: resident peak 3.0 GiB of 32.0 GiB given (9 %)" in text
    assert "GPU: 1 GPU, 35 % busy on average, memory peak 2.0 GiB" in text
    assert "advice: used 1.2 of the 8 cores it was given (15 %): ask for 2 cores" in text
    assert lines[-1] == "  details: jobmon query 4711.0"


def test_card_without_the_efficiency_fields():
    s = {k: FULL[k] for k in ("job", "exit_code", "wall_seconds", "cpu_user_seconds",
                              "cpu_system_seconds", "rss_peak_bytes")}
    lines = card.card_lines(s, card.advice_for(s, report_cfg()))
    check_shape(lines)
    assert lines[1] == "  CPU: 1.20 cores busy on average (cores given: not known)"
    assert lines[2] == "  Memory: resident peak 3.0 GiB"
    assert not [x for x in lines if "GPU" in x or "efficiency)" in x]
    # an empty summary still gives a card, and a broken advice module none of its lines
    check_shape(card.card_lines({}))
    assert card.advice_for(FULL, {}) == []       # thresholds missing: the rules fail


def test_card_never_over_8_lines_or_80_columns():
    long_id = "schedd.example.org#" + "9" * 30 + ".0#1700000000"   # 62 columns
    s = dict(FULL, job=long_id, signal=9, exit_code=None, host="h" * 50)
    advice = [("r%d" % i, "x" * (100 + i)) for i in range(12)]
    lines = card.card_lines(s, advice)
    check_shape(lines)
    assert len(lines) == card.MAX_LINES
    # the id cannot be cut to make room: the ending gets a line of its own
    assert lines[0] == f"jobmon: job {long_id}" and "killed by SIGKILL" in lines[1]
    # CPU, memory, GPU; no room for I/O; no footer (it would cut the id): 4 advice lines
    assert sum(x.startswith("  advice: ") for x in lines) == card.MAX_LINES - 5
    assert not [x for x in lines if "details" in x or "I/O" in x]


def test_where_site_and_job_decide():
    off, stderr = {"card": "off"}, {"card": "stderr"}
    assert delivery.where(off, True) is None
    assert delivery.where(stderr, None) is None
    assert delivery.where(stderr, True) == "stderr"
    assert delivery.where(dict(stderr, card_all_jobs=True), None) == "stderr"
    assert delivery.where(dict(stderr, card_all_jobs=True), False) is None
    assert slurm_card.comment_asks("project=x, jobmon-card") is True
    assert slurm_card.comment_asks("jobmon-card=no") is False
    assert slurm_card.comment_asks("jobmon-cards") is None and slurm_card.comment_asks(None) is None


# --- HTCondor: the wrapper, under the starter's contract -----------------------------------

# the job writes to both streams; its last stderr line comes after a pause, so a card
# written before the job ended would come before it
JOB = ("import sys, time\n"
       "sys.stdout.write('out\\n'); sys.stderr.write('err\\n'); sys.stderr.flush()\n"
       "time.sleep(0.5)\n"
       "sys.stderr.write('last words\\n')\n"
       "sys.exit(int(sys.argv[1]))\n")


def condor(site, **attrs):
    from test_condor_wrapper import FAST, Starter
    return Starter(site=FAST + site, **attrs)


def run_job(starter, code=3, env=None, argv=None):
    starter.prepare()
    if env:
        starter.env.update(env)
    p = starter.popen_prepared(argv or [PYTHON, "-c", JOB, str(code)],
                               stdin=subprocess.DEVNULL)
    out, err = p.communicate(timeout=60)
    return p.returncode, out.decode(), err.decode()


@pytest.mark.root
@needs_test_user
@pytest.mark.parametrize("site,attrs,env", [
    ("", {"JobMonitorReportCard": "true"}, {"JOBMON_CARD": "1"}),       # site: off (default)
    ('[report]\ncard = "stderr"\n', {}, {}),                           # the job did not ask
    ('[report]\ncard = "stderr"\ncard_all_jobs = true\n', {"JobMonitorReportCard": "false"}, {}),
])
def test_condor_no_card_unless_asked(site, attrs, env):
    rc, out, err = run_job(condor(site, **attrs), env=env)
    assert (rc, out, err) == (3, "out\n", "err\nlast words\n")


@pytest.mark.root
@needs_test_user
@pytest.mark.parametrize("site,attrs,env", [
    ('[report]\ncard = "stderr"\n', {"JobMonitorReportCard": "true"}, {}),
    ('[report]\ncard = "stderr"\n', {}, {"JOBMON_CARD": "1"}),
    ('[report]\ncard = "stderr"\ncard_all_jobs = true\n', {}, {}),
])
def test_condor_card_appended_to_the_jobs_stderr_after_it_ended(site, attrs, env):
    starter = condor(site, **attrs)
    rc, out, err = run_job(starter, env=env)
    assert rc == 3 and out == "out\n"            # its status and stdout: untouched
    assert err.startswith("err\nlast words\njobmon: job 5.0 exit code 3 after ")
    lines = err.splitlines()[2:]
    check_shape(lines)
    assert lines[-1] == "  details: jobmon query 5.0"
    (_, summary, _), = starter.records("5.0")
    assert summary["exit_code"] == 3


@pytest.mark.root
@needs_test_user
def test_condor_card_of_a_job_killed_by_a_signal_keeps_the_signal():
    starter = condor('[report]\ncard = "stderr"\ncard_all_jobs = true\n')
    rc, out, err = run_job(starter, argv=[PYTHON, "-c",
                                          "import os; os.kill(os.getpid(), 11)"])
    assert rc == -signal.SIGSEGV and out == ""
    assert err.startswith("jobmon: job 5.0 killed by SIGSEGV after ")
    assert not [f for f in os.listdir(starter.scratch) if f.startswith("core")]


@pytest.mark.root
@needs_test_user
def test_condor_card_as_a_file_in_the_scratch_dir():
    starter = condor('[report]\ncard = "file"\n', JobMonitorReportCard="true")
    rc, out, err = run_job(starter, code=0)
    assert (rc, out, err) == (0, "out\n", "err\nlast words\n")
    path = os.path.join(starter.scratch, "jobmon-card-5.0.txt")
    st = os.stat(path)
    assert st.st_uid == starter.user.pw_uid and stat.S_ISREG(st.st_mode)
    text = open(path).read()
    assert text.startswith("jobmon: job 5.0 exit code 0 after ")
    check_shape(text.splitlines())


MAILER = """#!/bin/sh
cat > "{out}.tmp.$$" && mv "{out}.tmp.$$" "{out}"
exit {code}
"""


def fake_mailer(base, code=0, hang=False):
    """A mailer as the site configures one: reads the message on stdin (here: keeps it)."""
    out = os.path.join(base, "mail.txt")
    path = os.path.join(base, "fake-sendmail")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec sleep 60\n" if hang else MAILER.format(out=out, code=code))
    os.chmod(path, 0o755)
    return path, out


@pytest.mark.root
@needs_test_user
def test_condor_card_by_mail_through_the_sites_mailer():
    base = shared_tmpdir("jobmon-mailer-")
    mailer, got = fake_mailer(base)
    starter = condor(f'[report]\ncard = "mail"\nmailer = "{mailer} -t -oi"\n',
                     JobMonitorReportCard="true", NotifyUser='"alice@example.org"')
    rc, out, err = run_job(starter)
    assert (rc, out, err) == (3, "out\n", "err\nlast words\n")
    head, body = open(got).read().split("\n\n", 1)
    assert "To: alice@example.org" in head.splitlines()
    assert "Subject: jobmon: job 5.0 exit code 3" in head.splitlines()
    assert body.startswith("jobmon: job 5.0 exit code 3 after ")
    check_shape(body.splitlines())


@pytest.mark.root
@needs_test_user
@pytest.mark.parametrize("site", [
    '[report]\ncard = "file"\ncard_dir = "/nonexistent/cards"\n',    # cannot write
    '[report]\ncard = "mail"\nmailer = "/bin/false"\n',                # the mailer fails
    '[report]\ncard = "mail"\nmailer = "MAILER"\n',                    # the mailer hangs
    '[report]\ncard = "stderr"\nmailer = 7\n',                          # a broken config
])
def test_condor_card_failures_change_nothing(site):
    if "MAILER" in site:
        site = site.replace("MAILER", fake_mailer(shared_tmpdir("jobmon-mailer-"), hang=True)[0])
    starter = condor(site + "card_all_jobs = true\n")
    t = time.monotonic()
    rc, out, err = run_job(starter)
    assert (rc, out, err) == (3, "out\n", "err\nlast words\n")
    assert time.monotonic() - t < delivery.MAIL_SECONDS + 5
    (_, summary, _), = starter.records("5.0")
    assert summary["exit_code"] == 3             # the job was recorded all the same


# --- Slurm: the sampler's end (as the job's user, with the Prolog's environment) ---------

SLURM_END = """
import json, sys
from jobmon.plugins.slurm.card import after_job
summary = json.load(open(sys.argv[1]))
print(json.dumps(after_job([summary], dict(json.loads(sys.argv[2])),
                                 lambda m: sys.stderr.write(m + "\\n"))))
"""


def slurm_end(tmp, site, comment, code=0):
    """A real job's summary (`jobmon run`), then the sampler's card step run as the test
    user with a Slurm Prolog environment; returns (its result, the work dir)."""
    work = shared_tmpdir("jobmon-slurm-work-")
    summary = os.path.join(work, "summary.json")
    r = jobmon_run([f"--summary={summary}", "--job-id=12345", "--store=none"],
                   ["/bin/sh", "-c", f"exit {code}"], user=TEST_USER)
    assert r.returncode == code, r.stderr
    config = os.path.join(work, "jobmon.toml")
    with open(config, "w") as f:
        f.write(site)
    os.chmod(config, 0o644)
    env = {"SLURM_JOB_ID": "12345", "SLURM_JOB_USER": TEST_USER,
           "SLURM_JOB_WORK_DIR": work, "SLURM_JOB_COMMENT": comment}
    p = subprocess.run(as_user([PYTHON, "-c", SLURM_END, summary, json.dumps(env)]),
                       env=dict(os.environ, JOBMON_CONFIG=config), capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), work, p.stderr


@pytest.mark.root
@needs_test_user
def test_slurm_card_file_beside_the_jobs_output(tmp_path):
    result, work, warned = slurm_end(tmp_path, '[report]\ncard = "stderr"\n', "jobmon-card", 4)
    assert result == os.path.join(work, "jobmon-card-12345.txt") and warned == ""
    st = os.stat(result)
    assert st.st_uid != 0                            # written as the job's user
    text = open(result).read()
    assert text.startswith("jobmon: job 12345 exit code 4 after ")
    check_shape(text.splitlines())


@pytest.mark.root
@needs_test_user
def test_slurm_no_card_by_default_or_when_the_job_says_no(tmp_path):
    for site, comment in (("", "jobmon-card"), ('[report]\ncard = "file"\ncard_all_jobs = true\n',
                                                 "jobmon-card=no")):
        result, work, _ = slurm_end(tmp_path, site, comment)
        assert result is None
        assert sorted(os.listdir(work)) == ["jobmon.toml", "summary.json"]


@pytest.mark.root
@needs_test_user
def test_slurm_card_by_mail(tmp_path):
    base = shared_tmpdir("jobmon-mailer-")
    mailer, got = fake_mailer(base)
    result, _, _ = slurm_end(tmp_path, f'[report]\ncard = "mail"\nmailer = "{mailer} -t"\n',
                             "jobmon-card")
    assert result == TEST_USER
    msg = open(got).read()
    assert f"To: {TEST_USER}\n" in msg and "\n\njobmon: job 12345 exit code 0 after " in msg


# --- Slurm, for real: the cluster's Prolog and Epilog are jobmon's ---------------------------

@pytest.mark.root
@pytest.mark.slow
def test_slurm_cluster_card_beside_the_jobs_output(jobmon_slurm):
    """sbatch --comment=jobmon-card on a site with cards in files: after the job (and the
    Epilog), jobmon-card-<id>.txt is in the job's working directory, next to its
    slurm-<id>.out, which is untouched; a job that did not ask gets none."""
    site, slurm = jobmon_slurm, jobmon_slurm.cluster
    site.write_config(extra='[report]\ncard = "file"\n')
    asked = slurm.submit("echo out\nexit 2\n", comment="jobmon-card")
    quiet = slurm.submit("echo out\n")
    for jid in (asked, quiet):
        slurm.wait_done(jid)
        site.wait_record(jid)
    work = slurm.jobs_dir
    path = os.path.join(work, f"jobmon-card-{asked}.txt")
    deadline = time.monotonic() + 15
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.1)
    text = open(path).read()
    assert text.startswith(f"jobmon: job {asked} exit code 2 after "), text
    check_shape(text.splitlines())
    import pwd
    assert os.stat(path).st_uid == pwd.getpwnam(TEST_USER).pw_uid   # the job's user's
    assert slurm.output(asked) == "out\n"
    assert not os.path.exists(os.path.join(work, f"jobmon-card-{quiet}.txt"))
