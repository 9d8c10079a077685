"""The machine's load during a benchmark: known busy loops added to it, and what it was.

A figure "at load 4" means little on a shared machine unless the load is measured while
the figure is: `Load` samples the run queue (procs_running in /proc/stat, the reader
itself left out) every 0.1 s in a thread and gives its mean, beside the 1-minute load
average; `hogs(n)` adds n processes that spin at normal priority for the duration, and
`hogs_to_reach(target)` says how many bring the run queue measured now to the target.
"""
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time


@contextlib.contextmanager
def hogs(n):
    """n busy loops (each wants a whole CPU), stopped on the way out."""
    procs = [subprocess.Popen([sys.executable, "-S", "-c", "while True: pass"])
             for _ in range(n)]
    try:
        yield procs
    finally:
        for p in procs:
            p.send_signal(signal.SIGKILL)
            p.wait()


def running():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("procs_running"):
                return int(line.split()[1]) - 1


class Load:
    """with Load() as load: ...; then load.mean (run queue), load.avg1 (loadavg)."""

    def __init__(self, period=0.1):
        self.period, self.samples = period, []
        self._stop = threading.Event()

    def __enter__(self):
        self.avg1_before = os.getloadavg()[0]
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(self.period):
            self.samples.append(running())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.avg1 = os.getloadavg()[0]

    @property
    def mean(self):
        return sum(self.samples) / len(self.samples) if self.samples else float("nan")

    def text(self):
        return (f"run queue {self.mean:.2f} on average (sampled every {self.period:g} s), "
                f"load average {self.avg1_before:.2f} before, {self.avg1:.2f} after, "
                f"{os.cpu_count()} CPUs")


def hogs_to_reach(target, seconds=3.0):
    """(busy loops to add, the run queue measured now): enough to bring the run queue
    to about `target`, none where others' load is there already."""
    with Load() as now:
        time.sleep(seconds)
    return max(0, round(target - now.mean)), now.mean
