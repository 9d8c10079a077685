"""`jobmon run` as root making the job's cgroup on a pure cgroup v2 system: in the guest as
it boots (the root hands out no controllers) and in one shaped like a systemd host (the
caller in a login session scope that holds processes)."""
import os

import jobrun
import tree
from jobrun import check_tree, run_tree


def _gone(path):
    return not os.path.exists(tree.path(path))


def test_create_v2_in_raw_guest(raw_guest):
    """The root's subtree_control is empty at boot: jobmon enables what it measures with
    there (the root may hold processes and hand out controllers at once)."""
    assert tree.words(raw_guest, "cgroup.subtree_control") == []
    r, t = run_tree(["--cgroup=create", "--cgroup-version=2"])
    assert t.cgroup == f"/jobmon-{r.pid}"
    check_tree(r, t)
    assert _gone(t.cgroup)
    assert set(tree.words(raw_guest, "cgroup.subtree_control")) >= {"memory", "pids", "io", "cpu"}


def test_auto_is_v2_in_raw_guest(raw_guest):
    r, t = run_tree([])
    assert t.cgroup == f"/jobmon-{r.pid}"
    check_tree(r, t)
    assert _gone(t.cgroup)


def test_create_beside_a_login_session(systemd_host):
    """The session scope holds processes (the shell, the caller): it may not hand out
    controllers, so the job's cgroup goes beside it, in the user's slice; the scope is left
    as it was."""
    r, t = run_tree(["--cgroup=create", "--cgroup-version=2"])
    slice_rel = systemd_host.slice[len(tree.root()):]
    assert t.cgroup == f"{slice_rel}/jobmon-{r.pid}"
    check_tree(r, t)
    assert _gone(t.cgroup)
    assert tree.words(systemd_host.scope, "cgroup.subtree_control") == []
    assert set(tree.procs(systemd_host.scope)) == {os.getpid(), systemd_host.shell.pid}


def test_create_inside_a_job_cgroup_it_has_alone(systemd_host):
    """jobmon alone in a cgroup (a scheduler's job cgroup, a wrapper's scope) keeps the job
    inside it: it moves itself into a leaf there, so the cgroup may hand out controllers,
    and puts everything back when the job is over."""
    scope = tree.make("system.slice/job-7.scope")
    r, t = run_tree(["--cgroup=create", "--cgroup-version=2"], cgroup=scope)
    assert t.cgroup == f"/system.slice/job-7.scope/jobmon-{r.pid}"
    assert t.jobmon_cgroup == f"/system.slice/job-7.scope/jobmon-{r.pid}-monitor"
    check_tree(r, t)
    assert tree.below(scope) == []
    assert tree.words(scope, "cgroup.subtree_control") == []


def test_procs_max_from_pids_peak(raw_guest):
    """Eight processes alive for a moment, never sampled (the one sample before the final
    one comes while the job is alone): the pids controller's high-water mark has them."""
    r = jobrun.Run(["--cgroup=create", "--cgroup-version=2"], jobrun.job("fan_out", 8, 3),
                   interval=60)
    assert r.summary["method"] == "cgroup-v2"
    assert all(x.get("procs", 0) < 8 for x in r.samples), r.samples
    assert r.summary["procs_max"] == 8, r.summary


def test_procs_max_from_pids_peak_with_a_zombie_sampled(raw_guest):
    """The same, but the samples (every second) first see the job with an exited child it
    has not reaped yet."""
    r = jobrun.Run(["--cgroup=create", "--cgroup-version=2"],
                   jobrun.job("fan_out", 8, 4, "zombie"), interval=1)
    print("samples (procs, threads):", [(x.get("procs"), x.get("threads")) for x in r.samples],
          "procs_max", r.summary["procs_max"], "threads_max", r.summary["threads_max"])
    assert r.summary["method"] == "cgroup-v2"
    assert r.summary["procs_max"] == 8, (r.summary, r.samples)


def test_a_near_zero_job_never_has_a_negative_figure(raw_guest):
    """`true` in a v2 cgroup jobmon makes, 3 times: no CPU figure of the summary or of
    any sample is below zero (the exec trampoline's CPU, which the cgroup counts as system
    time, comes off system time first)."""
    for _ in range(3):
        r = jobrun.Run(["--cgroup=create", "--cgroup-version=2"], ["true"], interval=0.05)
        assert r.summary["method"] == "cgroup-v2", r.stderr
        bad = [(k, v) for d in [r.summary] + r.samples for k, v in d.items()
               if k.startswith("cpu_") and isinstance(v, (int, float)) and v < 0]
        assert not bad, bad
