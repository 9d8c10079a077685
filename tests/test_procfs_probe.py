"""The procfs probe: the real probe on a recorded tree (golden figures), and on real
processes: orphans counted at their birth, idle processes not re-read, the PSS of a pool
of forked workers estimated within the budget."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from jobmon.probes.files import parse_pss
from jobmon.probes.procfs import ProcfsProbe

from helpers import fixture

# tests/fixtures/record_proc.py: a parent that reaped a CPU-burning child, a sleeper, a
# child that copied 8 MiB on write, a 4-thread child whose second thread forked a grandchild,
# a zombie; the figures as the recorder summed them from the copied files
TREE_ROOT, ZOMBIE, GRANDCHILD = 25010, 25016, 25018
TREE = {"cpu_user_seconds": 0.18, "cpu_system_seconds": 0.34, "procs": 5, "threads": 8,
        "rchar_bytes": 802662, "wchar_bytes": 1048604, "read_bytes": 0, "write_bytes": 1056768,
        "mem_resident_bytes": 33536000, "mem_cache_bytes": 1533952, "mem_swap_bytes": 0,
        # run-queue waits (schedstat), the zombie's too; of the 4-thread child only its main
        # thread's (the others have no schedstat recorded)
        "cpu_wait_seconds": 0.36010497}


@pytest.fixture
def tree():
    return fixture("proc", "tree")


def test_recorded_tree_golden(tree):
    probe = ProcfsProbe(TREE_ROOT, proc=tree, pss_share=None)
    try:
        first = probe.read()
        assert first == pytest.approx(TREE)
        assert probe.read() == first      # nothing ran: the same figures from what it kept
        # the zombie counts its CPU only; the grandchild hangs off a thread that is not main
        assert probe.pids() == [25010, 25012, 25013, 25014, GRANDCHILD]
        assert ZOMBIE in probe.procs and probe.procs[ZOMBIE].state == b"Z"
        assert probe.alive() and probe.procs_peak() == 6   # the zombie exists too
    finally:
        probe.close()


def test_recorded_tree_without_budget_is_estimated(tree):
    """No budget at all: no page-table walk, yet no process counts its shared pages whole."""
    probe = ProcfsProbe(TREE_ROOT, proc=tree, pss_share=0.0)
    try:
        out = probe.read()
        assert {k: out[k] for k in ("procs", "threads", "write_bytes")} == \
            {"procs": 5, "threads": 8, "write_bytes": TREE["write_bytes"]}
        rss = sum(int(open(os.path.join(tree, str(p), "statm")).read().split()[1])
                  for p in probe.pids()) * os.sysconf("SC_PAGE_SIZE")
        assert out["mem_resident_bytes"] < rss / 2   # RSS counts the shared 16 MiB 4 times
    finally:
        probe.close()


# a stand-in for `jobmon run`: a child subreaper that started `cmd`; it samples once at
# 0.5 s, waits for everything, and says what the probe saw
SUPERVISOR = r"""
import json, os, sys, time
from jobmon.job import launcher
from jobmon.probes.procfs import ProcfsProbe
launcher.set_subreaper()
pid = launcher.spawn(sys.argv[1:])
probe = ProcfsProbe(os.getpid(), command=pid)
time.sleep(0.5)
out = probe.read()
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
print(json.dumps({"procs": out["procs"], "procs_peak": probe.procs_peak()}))
"""
ESCAPE = r"""
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork():
        os._exit(0)
    time.sleep(1)
    os._exit(0)
os.wait()
time.sleep(1)
"""
LEFT_BEHIND = "import os, time\nif os.fork() == 0:\n    time.sleep(1)\n    os._exit(0)\n"
NO_ORPHAN = "import os, time\nif os.fork() == 0:\n    time.sleep(1)\n    os._exit(0)\nos.wait()\n"


def supervise(code):
    out = subprocess.run([sys.executable, "-c", SUPERVISOR, sys.executable, "-c", code],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_orphans_counted_at_their_birth():
    # a child forks a setsid daemon and exits at once: 3 lived together, 2 are ever sampled
    assert supervise(ESCAPE) == {"procs": 2, "procs_peak": 3}
    # the command forks and exits: the orphan and its parent lived together
    assert supervise(LEFT_BEHIND) == {"procs": 1, "procs_peak": 2}
    assert supervise(NO_ORPHAN) == {"procs": 2, "procs_peak": 2}


IDLE = r"""
import os, sys, time
for _ in range(int(sys.argv[1])):
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
time.sleep(60)
"""


def start(code, *args):
    p = subprocess.Popen([sys.executable, "-c", code] + [str(a) for a in args],
                         start_new_session=True)
    return p


def stop(p):
    os.killpg(p.pid, 9)
    p.wait()


def wait_for(probe, n):
    deadline = time.monotonic() + 20
    while probe.read()["procs"] < n:
        assert time.monotonic() < deadline, "processes did not start"
        time.sleep(0.05)


def test_idle_processes_are_not_read_again():
    p = start(IDLE, 30)
    try:
        probe = ProcfsProbe(p.pid)
        wait_for(probe, 31)
        time.sleep(0.3)
        probe.read()
        reread = []
        full = probe._full
        probe._full = lambda q, scan: reread.append(q.pid) or full(q, scan)
        out = probe.read()
        assert out["procs"] == 31 and len(reread) <= 2, reread
        os.kill(probe.pids()[-1], 9)       # one goes: seen at once, its parent read again
        time.sleep(0.2)
        assert probe.read()["procs"] == 30
        probe.close()
    finally:
        stop(p)


def test_a_process_found_idle_costs_two_files_until_it_runs():
    """Forked workers that ran under 2 ms when found: stat and children opened, not io nor
    schedstat; once one runs again (a signal wakes it), all four, its wait from its birth."""
    p = start(IDLE, 5)
    opened, real = [], os.open

    def files(pid):   # (PSS walks aside: smaps_rollup and statm, within their budget)
        return sorted({x.rsplit(b"/", 1)[1] for x in opened if x.startswith(b"/proc/%d/" % pid)}
                      - {b"smaps_rollup", b"statm"})
    try:
        probe = ProcfsProbe(p.pid, include_root=True)
        wait_for(probe, 6)
        kids = [k for k in probe.pids() if k != p.pid]
        probe.close()
        os.open = lambda path, *a, **k: opened.append(os.fsencode(path)) or real(path, *a, **k)
        probe = ProcfsProbe(p.pid, include_root=True)
        assert probe.read()["procs"] == 6
        assert files(p.pid) == [b"children", b"io", b"schedstat", b"stat"], opened
        assert all(files(k) == [b"children", b"stat"] for k in kids), opened
        del opened[:]
        os.kill(kids[0], signal.SIGSTOP)
        os.kill(kids[0], signal.SIGCONT)
        time.sleep(0.1)
        probe.read()
        assert files(kids[0]) == [b"children", b"io", b"schedstat", b"stat"], opened
        assert probe.procs[kids[0]].sched is not None   # its run-queue wait, from its birth
        probe.close()
    finally:
        os.open = real
        stop(p)


# processes of 4 threads, idle; a byte written to the last one's pipe has one of its other
# threads burn 0.2 s of CPU
THREADED = r"""
import os, sys, threading, time
r, w = os.pipe()
def burn():
    os.read(r, 1)
    end = time.process_time() + 0.2
    while time.process_time() < end:
        pass
print(w, flush=True)
for i in range(int(sys.argv[1])):
    if i == int(sys.argv[1]) - 1 or os.fork() == 0:
        for _ in range(3):
            threading.Thread(target=burn if i == int(sys.argv[1]) - 1 else time.sleep,
                             args=() if i == int(sys.argv[1]) - 1 else (60,),
                             daemon=True).start()
        time.sleep(60)
        os._exit(0)
"""


def cpu(out):
    return out["cpu_user_seconds"] + out["cpu_system_seconds"]


def test_idle_processes_of_many_threads_are_not_read_again():
    """A process's CPU clock counts all its threads: one whose threads all idle is not read
    again; one whose other thread runs is, with that thread's CPU."""
    p = subprocess.Popen([sys.executable, "-c", THREADED, "10"], stdout=subprocess.PIPE,
                         start_new_session=True)
    try:
        w = int(p.stdout.readline())
        probe = ProcfsProbe(p.pid, include_root=True)
        wait_for(probe, 10)
        while probe.read()["threads"] < 40:
            time.sleep(0.05)
        time.sleep(0.3)
        before = probe.read()
        reread = []
        full = probe._full
        probe._full = lambda q, scan: reread.append(q.pid) or full(q, scan)
        assert probe.read()["threads"] == 40 and reread == [], reread
        fd = os.open(f"/proc/{p.pid}/fd/{w}", os.O_WRONLY)
        os.write(fd, b"x")
        os.close(fd)
        deadline = time.monotonic() + 20
        while cpu(probe.read()) < cpu(before) + 0.15:    # (however long a busy machine takes)
            assert time.monotonic() < deadline, (before, probe.read())
            time.sleep(0.1)
        assert set(reread) == {p.pid}, reread
        probe.close()
    finally:
        stop(p)


POOL = r"""
import os, sys, time
shared = bytearray(64 << 20)
for i in range(0, len(shared), 4096):
    shared[i] = 1
for _ in range(int(sys.argv[1])):
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
time.sleep(60)
"""


def exact_pss(pids):
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            anon, shmem, file = parse_pss(f.read())[:3]
        total += anon + shmem + file
    return total


def test_pool_of_forked_workers_estimated_within_10_percent():
    """64 MiB shared by a parent and 100 forked workers: RSS summed says 6.4 GiB; PSS,
    ~70 MiB; the probe, reading a few page tables within its budget, within 10 % of PSS."""
    p = start(POOL, 100)
    try:
        probe = ProcfsProbe(p.pid, pss_share=0.001)
        wait_for(probe, 101)
        for _ in range(2):               # sampled as jobmon does, once the pool is up
            time.sleep(1)
            out = probe.read()
        est = out["mem_resident_bytes"] + out["mem_cache_bytes"]
        truth = exact_pss(probe.pids())
        assert abs(est - truth) <= 0.1 * truth, (est, truth)
        probe.close()
    finally:
        stop(p)


BIG = r"""
import os, sys, time
heap = bytearray(int(sys.argv[1]) << 20)
for i in range(0, len(heap), 4096):
    heap[i] = 1
os.posix_spawn("/bin/sleep", ["sleep", "60"], os.environ)   # a small one beside it
print("up", flush=True)
time.sleep(60)
"""


def test_a_process_too_large_to_walk_is_never_walked():
    """A page-table walk holds the process's mmap lock (~10-25 ms per GB): one larger than a
    sample may walk (PSS_WALK_BYTES) is counted from its own counters, never walked; its
    small child (a fork would share its pages, and be as large) is walked."""
    from jobmon.probes.pss import PSS_WALK_BYTES
    mib = (PSS_WALK_BYTES >> 20) + 64
    p = subprocess.Popen([sys.executable, "-c", BIG, str(mib)], stdout=subprocess.PIPE,
                         start_new_session=True)
    try:
        assert p.stdout.readline() == b"up\n"
        probe = ProcfsProbe(p.pid)
        for _ in range(3):
            out = probe.read()
            time.sleep(0.2)
        big, small = probe.procs[p.pid], [q for q in probe.procs.values() if q.pid != p.pid][0]
        assert big.pss_at is None and small.pss_at is not None
        assert mib << 20 <= out["mem_resident_bytes"] <= (mib + 64) << 20, out
        probe.close()
    finally:
        stop(p)
