"""The Slurm plugin's side of things that need no cluster: the job's identity from the
Prolog environment slurmd gave (recorded: tests/fixtures/slurm/prolog), its name for
array tasks, het components, SLUIDs and runs; which cgroup directories are the job's,
found by the core's search in every shape Slurm makes (tests/fixtures/slurm/
cgroup_shapes, built as directory trees here); the wrappers slurm.conf names; and the
Prolog's and the sampler's imports (standard library only)."""
import glob
import os
import subprocess
import sys

import pytest

from helpers import REPO, fixture, shared_tmpdir
from jobmon.cgroups import search as cgroup_search
from jobmon import plugins
from jobmon.plugins.slurm import job as slurm
from jobmon.plugins.slurm import cgroup_names
from slurm_site import HOOKS, PYTHON, install
from test_layout import GRAPH, HEAVY, reach, under

STDLIB = sys.stdlib_module_names


def env_of(name, kind="prolog"):
    with open(fixture("slurm", kind, f"{name}.env")) as f:
        return dict(l.split("=", 1) for l in f.read().splitlines() if "=" in l)


def test_registered_and_detected():
    assert plugins.SCHEDULERS["slurm"] == ".slurm"
    env = env_of("plain")
    assert plugins.identify(env).scheduler == "slurm"
    assert not slurm.detect({"SLURM_JOB_ID": "1"})       # a job's own env: no Prolog's
    assert not slurm.detect({})


def test_identity_from_the_prolog_environment():
    ident = slurm.identify(env_of("plain"))
    assert ident.job == "2" and ident.scheduler == "slurm" and ident.run == 1
    assert ident.tags == {"cluster": "jobmon", "job_id": "2", "user": "jobmon-test",
                          "uid": "999", "account": "jobmon", "partition": "debug",
                          "node": "node01", "num_nodes": "1", "restart_count": "0",
                          "alloc_cpus": "1"}
    # the Epilog's environment names the same job
    assert slurm.identify(env_of("plain", "epilog")).tags == ident.tags


def test_the_cpus_allocated_on_this_node():
    """SLURM_JOB_CPUS_PER_NODE counts in the order of SLURM_NODELIST ("72(x2),36"): this
    node's from SLURMD_NODENAME; a list it cannot place says nothing."""
    base = env_of("plain")
    many = dict(base, SLURM_JOB_CPUS_PER_NODE="72(x2),36", SLURM_NODELIST="node[01-02],gpu7",
                SLURM_JOB_NUM_NODES="3")
    assert slurm.identify(dict(many, SLURMD_NODENAME="node02")).tags["alloc_cpus"] == "72"
    assert slurm.cpus_on_node(dict(many, SLURMD_NODENAME="gpu7")) == 36
    assert slurm.cpus_on_node(dict(many, SLURMD_NODENAME="other")) is None
    assert slurm.cpus_on_node(dict(base, SLURM_JOB_CPUS_PER_NODE="4(x3)")) == 4
    assert "alloc_cpus" not in slurm.identify(dict(base, SLURM_JOB_CPUS_PER_NODE="")).tags
    assert slurm.expand_hostlist("n[1-3,10],a09,b[08-09]x") == \
        ["n1", "n2", "n3", "n10", "a09", "b08x", "b09x"]


def test_array_het_sluid_and_runs():
    base = env_of("plain")
    arr = slurm.identify(dict(base, SLURM_JOB_ID="21", SLURM_ARRAY_JOB_ID="20",
                              SLURM_ARRAY_TASK_ID="7"))
    assert arr.job == "20_7" and arr.tags["job_id"] == "21"
    het = slurm.identify(dict(base, SLURM_JOB_ID="31", SLURM_HET_JOB_ID="30"))
    assert het.job == "30+1" and het.tags["het_job_id"] == "30"
    lead = slurm.identify(dict(base, SLURM_JOB_ID="30", SLURM_HET_JOB_ID="30"))
    assert lead.job == "30+0"
    s = slurm.identify(dict(base, SLURM_JOB_SLUID="sBR1JB8J1YM400", SLURM_JOB_RESTART_COUNT="2"))
    assert s.tags["sluid"] == "sBR1JB8J1YM400" and s.run == 3 and s.job == "2"


def test_refined_from_the_jobs_own_processes():
    """22.05's Prolog has no array ids; the batch shell's environment does. Only the
    job's own processes count (same SLURM_JOB_ID), and only those ids are taken."""
    ident = slurm.identify(dict(env_of("plain"), SLURM_JOB_ID="9"))
    assert slurm.needs_refining(ident)
    assert slurm.refine(ident, {}) is None                       # the extern step's sleep
    assert slurm.refine(ident, {"SLURM_JOB_ID": "8", "SLURM_ARRAY_TASK_ID": "4"}) is None
    better = slurm.refine(ident, {"SLURM_JOB_ID": "9", "SLURM_ARRAY_JOB_ID": "8",
                                  "SLURM_ARRAY_TASK_ID": "4", "SLURM_JOB_ACCOUNT": "other"})
    assert better.job == "8_4" and better.tags["account"] == "jobmon"
    plain = slurm.refine(ident, {"SLURM_JOB_ID": "9"})
    assert plain.job == "9" and plain.tags == ident.tags
    nxt = slurm.next_run(ident)
    assert (nxt.run, nxt.tags["restart_count"]) == (2, "1")
    assert slurm.refine(nxt, {"SLURM_JOB_ID": "9", "SLURM_RESTART_COUNT": "3"}).run == 4


def test_cgroup_names():
    env = dict(env_of("plain"), SLURM_JOB_SLUID="sBR1JB8J1YM400")
    assert cgroup_names.wanted(env) >= {"job_2", "sBR1JB8J1YM400"}
    skip = cgroup_names.skipper(env)
    assert skip("job_3") and skip("step_batch") and skip("task_0") and skip("uid_0")
    assert skip("sEKNKTV3WPV500") and not skip("uid_999") and not skip("slurm_node01")
    assert not skip("system.slice") and not skip("node01_slurmstepd.scope")
    assert cgroup_names.step_name("step_batch") == "batch"
    assert cgroup_names.step_name("step_0") == "0" and cgroup_names.step_name("user") is None


def build_shape(path, root):
    """A shape file -> (environ, {controller: expected dir}, roots) with its tree made
    below `root`."""
    env, expect, section, mountinfo = {}, {}, None, []
    with open(path) as f:
        for line in f.read().splitlines():
            if line.startswith("# job:"):
                env = dict(kv.split("=", 1) for kv in line[6:].split())
            elif line.startswith("# expect:"):
                expect = dict(kv.split("=", 1) for kv in line[9:].split())
            elif line.startswith("["):
                section = line.strip("[]")
            elif line and not line.startswith("#"):
                if section == "mountinfo":
                    mountinfo.append(line)
                elif section == "dirs":
                    os.makedirs(root + line, exist_ok=True)
                elif section == "files":
                    p, _, text = line.partition("=")
                    os.makedirs(os.path.dirname(root + p), exist_ok=True)
                    with open(root + p, "w") as fh:
                        fh.write(text + "\n")
    where = cgroup_search.roots("\n".join(mountinfo) + "\n", root_of=lambda p: root + p)
    return env, {k: root + v for k, v in expect.items()}, where


SHAPES = sorted(glob.glob(fixture("slurm", "cgroup_shapes", "*.txt")))


@pytest.mark.parametrize("shape", SHAPES, ids=[os.path.basename(s)[:-4] for s in SHAPES])
def test_job_cgroup_found_in_every_shape(shape, tmp_path):
    env, expect, where = build_shape(shape, str(tmp_path))
    cg = cgroup_search.find(cgroup_names.wanted(env), cgroup_names.skipper(env),
                            cgroup_names.chooser(env), where)
    assert cg is not None and not cg.created
    got = {k: v for k, v in cg.dirs.items() if k in expect}
    assert got == expect, cg.dirs
    assert cg.version == (2 if "v2" in expect else 1)
    # another job of the same shape is not this one
    other = dict(env, SLURM_JOB_ID="424242")
    other.pop("SLURM_JOB_SLUID", None)
    assert cgroup_search.find(cgroup_names.wanted(other), cgroup_names.skipper(other),
                              cgroup_names.chooser(other), where) is None


def test_sluid_directory_needs_the_sluid(tmp_path):
    env, _expect, where = build_shape(fixture("slurm", "cgroup_shapes", "v2_sluid.txt"),
                                      str(tmp_path))
    env.pop("SLURM_JOB_SLUID")                 # a Prolog before 25.11: only job_<id>
    assert cgroup_search.find(cgroup_names.wanted(env), cgroup_names.skipper(env),
                              cgroup_names.chooser(env), where) is None


def test_search_stays_out_of_other_jobs(tmp_path):
    """The search does not descend below other jobs' or other users' directories: a node
    with a thousand jobs costs a thousand entries, not their steps and tasks."""
    env, _expect, where = build_shape(fixture("slurm", "cgroup_shapes", "v1_debian.txt"),
                                      str(tmp_path))
    seen = []
    real = os.scandir

    def counting(d):
        seen.append(str(d))
        return real(d)
    os.scandir, saved = counting, os.scandir
    try:
        cgroup_search.search(where["cpuacct"], cgroup_names.wanted(env),
                             cgroup_names.skipper(env))
    finally:
        os.scandir = saved
    assert not [d for d in seen if "job_13" in d or "uid_998" in d], seen


# --- the wrappers slurm.conf names ---------------------------------------------------------

def test_deploy_wrappers_are_what_install_writes():
    for kind in ("prolog", "epilog"):
        path = os.path.join(REPO, "deploy", "slurm", f"jobmon-{kind}")
        with open(path) as f:
            text = f.read()
        assert text == install.wrapper(kind, f"/etc/slurm/jobmon-{kind}", "/opt/jobmon/bin/python3",
                                       install.DEPLOY_HOOKS, "/etc/jobmon/jobmon.toml"), (
            f"deploy/slurm/jobmon-{kind} is out of date: regenerate it with "
            f"`python plugins/slurm/hooks.py deploy deploy/slurm`")
        assert os.access(path, os.X_OK)


def test_install_writes_working_wrappers(tmp_path):
    site = os.path.join(shared_tmpdir(), "jobmon.toml")    # every job user reads it
    with open(site, "w") as f:
        f.write("[slurm]\ninterval = 5.0\n")
    os.chmod(site, 0o644)
    r = subprocess.run([os.path.join(os.path.dirname(sys.executable), "jobmon-slurm-hooks"),
                        "install", str(tmp_path), f"--config={site}"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    for kind in ("prolog", "epilog"):
        text = (tmp_path / f"jobmon-{kind}").read_text()
        assert f"HOOKS={HOOKS}" in text and "exit 0" in text
        # with no Slurm environment at all: nothing to do, exit 0 at once
        r = subprocess.run([str(tmp_path / f"jobmon-{kind}")], env={}, timeout=30)
        assert r.returncode == 0


# --- imports --------------------------------------------------------------------------

@pytest.mark.parametrize("entry", ["jobmon.plugins.slurm.sampler", "jobmon.attach.watch",
                                   "jobmon.plugins.slurm.hooks"])
def test_sampler_path_is_write_side_and_light(entry):
    for mod in reach(entry):
        assert not (GRAPH[mod] & HEAVY), (mod, GRAPH[mod] & HEAVY)
        assert not under(mod, "jobmon.cli", "jobmon.render", "jobmon.accounting",
                         "jobmon.ship", "jobmon.stores.influx"), (entry, mod)
        if under(mod, "jobmon.report"):   # the layout's exception: stdlib-only pure modules
            assert all(d.startswith("jobmon.report") or d.split(".")[0] in STDLIB
                       for d in GRAPH[mod]), (entry, mod, GRAPH[mod])


def test_prolog_imports_nothing_but_os_and_sys(tmp_path):
    """`python -I -S hooks.py prolog`: nothing beyond os and sys before the sampler is
    out of the Prolog's way (its forks are os's). (Its sampler, for a job whose user
    cannot be, ends at once: not monitored.)"""
    env = {"SLURM_JOB_ID": "1", "SLURM_JOB_UID": "nobody-here", "SLURMD_NODENAME": "t"}

    def loaded(argv):
        r = subprocess.run([PYTHON, "-X", "importtime", "-I", "-S"] + argv, capture_output=True,
                           text=True, timeout=60, env=env)
        assert r.returncode == 0
        return {l.split("|")[-1].strip() for l in r.stderr.splitlines()
                if l.startswith("import time:") and "|" in l}
    extra = loaded([HOOKS, "prolog", f"--run-dir={tmp_path}"]) - loaded(["-c", "import os"])
    assert extra == set(), extra


def test_sampler_loads_only_the_standard_library():
    code = ("import sys; import jobmon.plugins.slurm.sampler, jobmon.attach.watch, "
            "jobmon.cgroups.search, jobmon.sinks.spool, jobmon.stores.local, jobmon.config; "
            "print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=60,
                         check=True).stdout.split()
    base = subprocess.run([PYTHON, "-c", "import sys; print(' '.join(sys.modules))"],
                          capture_output=True, text=True, timeout=60).stdout.split()
    foreign = {m.split(".")[0] for m in set(out) - set(base)} - set(sys.stdlib_module_names)
    assert foreign <= {"jobmon", "tomli"}, foreign
