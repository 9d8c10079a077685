"""An unprivileged user on a pure v2 system: in a subtree delegated to them the way
systemd delegates user@.service, `jobmon run` measures through a cgroup of the job's own
(auto) or the user's cgroup (existing); outside one, through procfs."""
import os

import tree
from helpers import TEST_USER, cpu_tolerance
from jobrun import check_tree, run_tree


def _rel(d):
    return d[len(tree.root()):]


def test_alone_in_delegated_cgroup_gets_a_child(delegated):
    """jobmon is the only process in the user's delegated cgroup (a wrapper started in it):
    it moves itself into a leaf there, enables memory, io, pids, cpu for children, and runs
    the job in a cgroup of its own beside that leaf; afterwards all is as before."""
    r, t = run_tree([], user=TEST_USER, cgroup=delegated)
    assert t.cgroup == f"{_rel(delegated)}/jobmon-{r.pid}", r.stderr
    assert t.jobmon_cgroup == f"{_rel(delegated)}/jobmon-{r.pid}-monitor"
    check_tree(r, t)
    assert r.summary["user"] == TEST_USER
    assert tree.below(delegated) == []
    assert tree.words(delegated, "cgroup.subtree_control") == []


def test_beside_the_users_shell(delegated, test_user):
    """The user's own manager has made app.slice (controllers on) and a scope holding their
    shell, where jobmon starts: the job's cgroup goes beside that scope, in app.slice."""
    app = os.path.join(delegated, "app.slice")
    term = os.path.join(app, "term.scope")
    os.mkdir(app)
    os.mkdir(term)
    for d in (app, term):
        tree.delegate(d, test_user.pw_uid, test_user.pw_gid)
    tree.enable(delegated)
    tree.enable(app)
    shell = tree.sleeper(term, user=TEST_USER)
    try:
        r, t = run_tree([], user=TEST_USER, cgroup=term)
        assert t.cgroup == f"{_rel(app)}/jobmon-{r.pid}", r.stderr
        check_tree(r, t)
        assert tree.procs(term) == [shell.pid]
        assert [os.path.basename(d) for d in tree.below(app)] == ["term.scope"]
    finally:
        tree.stop(shell)


def test_existing_delegated_cgroup(delegated):
    """--cgroup=existing measures the user's cgroup itself, jobmon included, counted from
    the start: between the job's own CPU and what jobmon and the job used together."""
    r, t = run_tree(["--cgroup=existing"], user=TEST_USER, cgroup=delegated)
    assert t.cgroup == _rel(delegated)
    s = r.summary
    assert s["method"] == "cgroup-v2", r.stderr
    assert t.cpu - cpu_tolerance(t.cpu) <= r.cpu <= r.total_cpu + cpu_tolerance(t.cpu), \
        (r.cpu, t.cpu, r.total_cpu)
    assert s["mem_peak_bytes"] >= t.spike


def test_not_delegated_is_procfs(systemd_host, test_user):
    """A login session scope owned by root (not delegated): procfs, as exact for CPU."""
    uid = test_user.pw_uid
    scope = tree.make(f"user.slice/user-{uid}.slice/session-2.scope")
    r, t = run_tree([], user=TEST_USER, cgroup=scope)
    assert t.cgroup == _rel(scope)
    check_tree(r, t, method="procfs")
    assert tree.below(scope) == []
