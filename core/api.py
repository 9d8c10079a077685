"""Library use: sample the current process and its children into the same store.

    import jobmon

    with jobmon.monitor(job_id="fit-42", interval=1.0) as m:
        train()
    print(m.summary["cpu_user_seconds"], m.summary["rss_peak_bytes"])

    @jobmon.monitor(job_id="nightly")
    def nightly(): ...

A background thread samples this process and everything it starts (procfs probe,
the process itself included, plus its GPUs through NVML where there are any); the
summary is written when the block ends.
"""
import functools
import os
import threading
import time
import warnings
from types import SimpleNamespace

from .probes import select, with_gpus
from .sampler import Sampler


class Monitor:
    def __init__(self, job_id=None, interval=1.0, tags=None, store=None, out=None, fmt="jsonl"):
        self.job_id = job_id
        self.interval = interval
        self.tags = dict(tags or {})
        self.store = store
        self.out, self.fmt = out, fmt
        self.summary = None
        self._stop = threading.Event()
        self._thread = None

    def __enter__(self):
        from .runner import describe_job, open_sinks
        probe = select(root=os.getpid(), include_root=True)
        probe = with_gpus(probe, lambda msg: warnings.warn(f"jobmon: {msg}"))
        job = describe_job(self.job_id, probe, time.time(), self.tags,
                           ["python", "(jobmon.monitor)"], self.interval)
        self.job_id = job["job"]
        sinks = open_sinks(SimpleNamespace(store=self.store, out=self.out, format=self.fmt))
        self._sampler = Sampler(probe, sinks, job, self.interval)
        self._sampler.zero()  # the process has a past: count from here
        self._thread = threading.Thread(target=self._loop, name="jobmon-monitor", daemon=True)
        self._thread.start()
        return self

    def _loop(self):
        while not self._stop.wait(self.interval):
            self._sampler.tick()

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        s = self._sampler
        s.tick(final=True)
        self.summary = s.summary()
        self.summary["exit_code"] = 1 if exc[0] else 0
        s.close(self.summary)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*a, **kw):
            with Monitor(self.job_id, self.interval, self.tags, self.store, self.out, self.fmt):
                return fn(*a, **kw)
        return wrapped


def monitor(job_id=None, interval=1.0, tags=None, store=None, out=None, fmt="jsonl"):
    """Context manager and decorator: see the module docstring."""
    return Monitor(job_id, interval, tags, store, out, fmt)
