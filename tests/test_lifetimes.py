"""The procfs census on made-up lifetimes: what it may count together and what not (the
real processes are in test_procfs_census.py)."""
from jobmon.probes.lifetimes import NS, Census, Life

TICK0 = 1_000_000        # a start time in ticks
T = TICK0 * NS           # ns at the beginning of that tick


class Proc:
    """What the census reads of a process the walk has in its tree."""

    def __init__(self, pid, start, seen, sid=1, state=b"S", orphan=False):
        self.pid, self.start, self.seen, self.sid, self.state = pid, start, seen, sid, state
        self.died, self.orphan, self.not_parent = None, orphan, None


def test_a_walk_counts_what_it_found_zombies_too():
    c = Census()
    tree = {1: Proc(1, TICK0, T), 2: Proc(2, TICK0, T, state=b"Z")}
    c.count(T + 5 * NS, tree, [])
    assert c.peak == 2


def test_a_process_gone_before_a_birth_is_not_counted_with_it():
    """The parent and a child last seen at the first walk; the child went, another was born
    after that walk: never provably two children at once."""
    c = Census()
    parent, first = Proc(10, TICK0, T + NS), Proc(11, TICK0, T + NS)
    c.count(T + NS, {10: parent, 11: first}, [parent, first])
    c.ended.append(Life(11, TICK0, T + NS, 1))            # gone, last known at the walk
    second = Proc(12, TICK0 + 50, T + 100 * NS)           # born 0.5 s later
    c.count(T + 100 * NS, {10: parent, 12: second}, [second])
    assert c.peak == 2


def test_a_process_reaped_after_a_birth_is_counted_with_it():
    """jobmon reaped the first child (its moment known) after the second was born."""
    c = Census()
    parent, first = Proc(10, TICK0, T + NS), Proc(11, TICK0, T + NS)
    c.count(T + NS, {10: parent, 11: first}, [parent, first])
    c.ended.append(Life(11, TICK0, T + 90 * NS, 1))       # known to exist till 0.9 s
    second = Proc(12, TICK0 + 50, T + 100 * NS)
    c.count(T + 100 * NS, {10: parent, 12: second}, [second])
    assert c.peak == 3


def test_an_orphan_counts_its_unseen_parent_unless_a_dead_one_may_be_it():
    # the command (pid 10, session 1) is alive: the orphan's parent was never seen
    c = Census()
    top = Proc(10, TICK0, T)
    c.count(T, {10: top}, [top])
    orphan = Proc(20, TICK0 + 10, T + 50 * NS, sid=15, orphan=True)
    c.count(T + 50 * NS, {10: top, 20: orphan}, [orphan])
    assert c.peak == 3
    # the same with the command dead by then and of the orphan's session: it may have been
    # the parent, so nothing is added
    c = Census()
    top = Proc(10, TICK0, T)
    c.count(T, {10: top}, [top])
    c.ended.append(Life(10, TICK0, T + 60 * NS, 1, died=T + 60 * NS))
    orphan = Proc(20, TICK0 + 10, T + 70 * NS, sid=1, orphan=True)
    c.count(T + 70 * NS, {20: orphan}, [orphan])
    assert c.peak == 2
    # of another session (the orphan's intermediate called setsid): not its parent
    c = Census()
    c.count(T, {10: top}, [top])
    c.ended.append(Life(10, TICK0, T + 60 * NS, 1, died=T + 60 * NS))
    orphan = Proc(20, TICK0 + 10, T + 70 * NS, sid=19, orphan=True)
    c.count(T + 70 * NS, {20: orphan}, [orphan])
    assert c.peak == 3


def test_within_one_tick_the_lower_pid_was_born_first():
    """Two orphans born in one tick by one unseen parent that died at once: at the second's
    birth lived the first, it and their parent."""
    c = Census()
    c.count(T, {}, [])
    a = Life(30, TICK0 + 5, T + 20 * NS, 29, died=T + 20 * NS, orphan=True)
    b = Life(31, TICK0 + 5, T + 20 * NS, 29, died=T + 20 * NS, orphan=True)
    c.reaped += [a, b]
    c.count(T + 30 * NS, {}, [])
    # a and b are of one session (29, their dead parent's): a may have been b's parent
    assert c.peak == 2
    c = Census()
    c.count(T, {}, [])
    a = Life(30, TICK0 + 5, T + 20 * NS, 30, died=T + 20 * NS, orphan=True)   # setsid'd
    b = Life(31, TICK0 + 5, T + 20 * NS, 29, died=T + 20 * NS, orphan=True)
    c.reaped += [a, b]
    c.count(T + 30 * NS, {}, [])
    assert c.peak == 3
