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

from .job.session import Session, describe_job, open_probe, open_sinks


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
        def warn(msg):
            warnings.warn(f"jobmon: {msg}")
        probe = open_probe(None, warn, root=os.getpid(), include_root=True)
        job = describe_job(self.job_id, probe.method, time.time(), self.tags,
                           ["python", "(jobmon.monitor)"], self.interval, hashed=False)
        self.job_id = job["job"]
        self._session = Session(job, probe, open_sinks(self.store, self.out, self.fmt, warn),
                                self.interval, own_process=False)
        self._session.zero()  # the process has a past: count from here
        self._thread = threading.Thread(target=self._loop, name="jobmon-monitor", daemon=True)
        self._thread.start()
        return self

    def _loop(self):
        while not self._stop.wait(self.interval):
            self._session.tick()

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.summary = self._session.finish((1 if exc[0] else 0) << 8)  # a wait status
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
