"""Contention judged against what the job could have used, on real jobs in each source of
the wait: PSI (the cgroup a root job gets here: on a hybrid host the controller-less v2
cgroup jobmon makes beside the job's v1 ones, on a pure v2 host its own) and the run-queue
wait of its threads (procfs mode, as an unprivileged user). Three jobs in each, at the
machine's own load and beside CPU hogs: one that sleeps (idle), one that spins on as many
processes as it asked cores for (contended when hogs are beside it), one that spins on one
process of the four cores it asked for (under-using). A job that waited for a CPU is not told to ask for fewer cores; an idle or
under-using one is, however busy the node."""
import pytest

from contention import SPIN, cpu_hogs
from helpers import (PYTHON, TEST_USER, job_cgroup_method, needs_root, needs_test_user, root,
                     shared_tmpdir)
from test_advice_jobs import advice, needs_psi, query, run
from jobmon.config.report import defaults
from jobmon.summary.advice import advise

# the reproduction: sleeps in 0.1 s steps, asleep nearly all of its run
SLEEP = "import time\nfor _ in range(int(float(__import__('sys').argv[1]) * 10)):\n" \
        "    time.sleep(0.1)\n"
JOBS = {   # name -> (command, cores asked for)
    "idle": ([PYTHON, "-c", SLEEP, "4"], 2),
    "contended": ([PYTHON, "-c", SPIN, "2", "3"], 2),
    "underused": ([PYTHON, "-c", SPIN, "1", "3"], 4),
}


def job(source, name, hogs):
    """The report of job `name` run with the wait measured by `source`, beside CPU hogs
    or not."""
    cmd, cores = JOBS[name]
    jid = f"{name}-{source}-{'hogs' if hogs else 'load'}"
    if source == "psi":
        needs_psi()
        tmp, args, user = shared_tmpdir(), ["--cgroup=create"], None
    else:
        tmp, args, user = shared_tmpdir(), [], TEST_USER
    args = args + [f"--tag=request_cpus={cores}"]
    if hogs:
        with cpu_hogs():
            store = run(tmp, jid, cmd, args, user=user)
    else:
        store = run(tmp, jid, cmd, args, user=user)
    rep = query(store, jid)
    s = rep["summary"]
    assert s["pressure_source"] == source, s
    assert s["method"] == (job_cgroup_method() if source == "psi" else "procfs"), s
    return s, advice(rep)


def figures(s):
    return {k: s.get(k) for k in ("wall_seconds", "cpu_user_seconds", "cpu_system_seconds",
                                  "cpu_pressure_seconds", "cpu_wait_seconds",
                                  "cpu_efficiency_percent", "cores_allocated", "threads_max",
                                  "procs_max")}


SOURCES = [pytest.param("psi", marks=[root, needs_root]),
           pytest.param("run-queue", marks=[needs_test_user])]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("hogs", [True, False], ids=["hogs", "load"])
def test_an_idle_job_is_told_to_ask_for_fewer_cores_however_busy_the_node(source, hogs):
    """The issue's job: 2 cores, asleep in 0.1 s steps. Beside hogs each wake-up waits for
    a CPU -- a large share of the little it wanted, none of the cores it was given."""
    s, got = job(source, "idle", hogs)
    print(figures(s), got)
    assert s["cpu_efficiency_percent"] < 10, s
    assert "cpu_contended" not in got, got
    assert got["cpu_underused"].endswith("ask for 1 core"), got


@pytest.mark.parametrize("source", SOURCES)
def test_a_job_that_waited_for_the_cores_it_was_given_is_contended(source):
    """2 processes spinning on the 2 cores asked for, beside twice as many hogs as CPUs:
    they got a fraction of a CPU each and waited the rest."""
    s, got = job(source, "contended", True)
    print(figures(s), got)
    assert s["cpu_efficiency_percent"] < 50, s      # it got little
    assert "cpu_underused" not in got, got
    assert got["cpu_contended"].startswith("the node was busy: it got "), got
    assert "of the 2 cores it was given" in got["cpu_contended"], got
    assert f"({'PSI' if source == 'psi' else 'run queue'})" in got["cpu_contended"], got


@pytest.mark.parametrize("source", SOURCES)
def test_a_job_spinning_on_what_it_asked_for_at_the_machines_load_gets_no_core_advice(
        source):
    """The same job at the machine's own load: whether or not it waited, it used or wanted
    the cores it was given -- never told to ask for fewer."""
    s, got = job(source, "contended", False)
    print(figures(s), got)
    assert "cpu_underused" not in got, got


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("hogs", [True, False], ids=["hogs", "load"])
def test_a_single_process_job_given_four_cores_is_told_to_ask_for_fewer(source, hogs):
    """One process spinning, 4 cores asked for: beside hogs it waited for a CPU most of
    its run, but wanted one core of the four -- the advice counts the wait in (1 core
    wanted + headroom: 2)."""
    s, got = job(source, "underused", hogs)
    print(figures(s), got)
    assert "cpu_contended" not in got, got
    assert got["cpu_underused"].startswith("used "), got
    assert "of the 4 cores it was given" in got["cpu_underused"], got
    assert got["cpu_underused"].endswith(("ask for 1 core", "ask for 2 cores")), got
    if hogs:
        assert "waited for a CPU" in got["cpu_underused"], got


@needs_test_user
def test_an_htcondor_job_given_two_cores_by_its_job_ad_is_told_the_same():
    """Through the HTCondor wrapper with the real pool's job ad, CpusProvisioned = 2 (the
    cores come from the ad: no cpuset narrows the job), the issue's sleeping job beside
    CPU hogs: the advice on its summary asks for 1 core, nothing says the node was busy."""
    from test_condor_wrapper import FAST, Starter, one_record
    starter = Starter(site=FAST, RequestCpus=2, CpusProvisioned=2)
    with cpu_hogs():
        code, _out, err = starter.run(JOBS["idle"][0])
    assert code == 0, err
    _info, s, _samples = one_record(starter)
    print(figures(s), s.get("advice"))
    assert s["cores_allocated"] == 2 and s["cpu_efficiency_percent"] < 10, s
    got = {a["rule"]: a["text"] for a in advise(s, defaults())}
    assert "cpu_contended" not in got and "no_allocation" not in got, got
    assert got["cpu_underused"].endswith("ask for 1 core"), got
