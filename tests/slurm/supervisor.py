"""The parent of every process the test cluster runs (run as a script, one per cluster).

It makes itself a child subreaper, so the processes Slurm detaches from its daemons
(slurmstepd, double-forked Prolog helpers, `setsid -f` samplers) are re-parented to it
rather than to PID 1. At the end it can therefore find every one of them by pid, from
/proc, and stop them: no process is ever looked up by name.

Protocol: one JSON object per line on stdin, one JSON answer per line on stdout.
  {"op": "spawn", "argv": [...], "env": {...}, "log": PATH, "cwd": PATH} -> {"pid": N}
  {"op": "status", "pid": N}     -> {"alive": bool, "status": wait status or null}
  {"op": "signal", "pid": N, "sig": S}                         -> {"ok": bool}
  {"op": "descendants"}          -> {"procs": [[pid, ppid, comm], ...]}
  {"op": "stop", "grace": SECONDS} -> {"killed": [[pid, comm, how], ...]}, then it exits.
End of stdin, or SIGTERM (also sent by the kernel when the test process dies), means stop.
"""
import ctypes
import json
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

spawned = []          # pids started on request, in order
exited = {}           # pid -> wait status, for every child reaped
lock = threading.Lock()


def prctl(option, arg):
    if ctypes.CDLL(None, use_errno=True).prctl(option, arg, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl")


def reap_forever():
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            time.sleep(0.05)
            continue
        with lock:
            exited[pid] = status


def proc_table():
    """{pid: (ppid, comm)} of every process now."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] == "Z":
            continue
        table[int(name)] = (int(fields[1]), comm)
    return table


def descendants():
    """[(pid, ppid, comm)] of every living process below this one."""
    table = proc_table()
    children = {}
    for pid, (ppid, comm) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [os.getpid()]
    while todo:
        for pid in children.get(todo.pop(), []):
            out.append((pid, table[pid][0], table[pid][1]))
            todo.append(pid)
    return out


def alive(pid):
    with lock:
        if pid in exited:
            return False
    return any(p == pid for p, _, _ in descendants())


def wait_gone(pids, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        living = {p for p, _, _ in descendants()}
        if not living & set(pids):
            return True
        time.sleep(0.05)
    return False


def kill(pid, sig):
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def stop_all(grace):
    """SIGTERM the spawned daemons newest first, each given `grace` seconds; then every
    other descendant (detached helpers) SIGTERM, then SIGKILL whatever is still there."""
    killed = []
    names = {p: c for p, _, c in descendants()}
    for pid in reversed(spawned):
        if alive(pid):
            kill(pid, signal.SIGTERM)
            if wait_gone([pid], grace):
                killed.append((pid, names.get(pid, "?"), "SIGTERM"))
            else:
                kill(pid, signal.SIGKILL)
                killed.append((pid, names.get(pid, "?"), "SIGKILL"))
    for rnd in range(50):
        rest = descendants()
        if not rest:
            break
        sig = signal.SIGTERM if rnd == 0 else signal.SIGKILL
        for pid, _, comm in rest:
            if kill(pid, sig) and rnd < 2:
                killed.append((pid, comm, sig.name))
        wait_gone([p for p, _, _ in rest], grace if rnd == 0 else 1)
    wait_gone([p for p, _, _ in descendants()], 2)
    return killed


def spawn(req):
    log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.closerange(3, 65536)
            if req.get("cwd"):
                os.chdir(req["cwd"])
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            os.execve(req["argv"][0], req["argv"], req["env"])
        except BaseException as e:
            os.write(2, f"supervisor: cannot exec {req['argv']}: {e}\n".encode())
        os._exit(127)
    os.close(log)
    with lock:
        spawned.append(pid)
    return {"pid": pid}


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    stopping = threading.Event()

    def on_term(signum, frame):
        if not stopping.is_set():
            stopping.set()
            stop_all(5)
            os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    threading.Thread(target=reap_forever, daemon=True).start()
    answer({"ready": os.getpid()})
    for line in sys.stdin:
        req = json.loads(line)
        op = req["op"]
        if op == "spawn":
            answer(spawn(req))
        elif op == "status":
            with lock:
                status = exited.get(req["pid"])
            answer({"alive": status is None and alive(req["pid"]), "status": status})
        elif op == "signal":
            ok = req["pid"] in {p for p, _, _ in descendants()} and kill(req["pid"], req["sig"])
            answer({"ok": ok})
        elif op == "descendants":
            answer({"procs": descendants()})
        elif op == "stop":
            stopping.set()
            answer({"killed": stop_all(req.get("grace", 5))})
            return
    stopping.set()
    stop_all(5)


if __name__ == "__main__":
    main()
