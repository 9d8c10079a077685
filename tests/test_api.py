"""The library API: jobmon.monitor as a context manager and a decorator."""
import resource
import subprocess
import sys
import time

import jobmon
from jobmon.stores.local import LocalStore


def _cpu():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def test_context_manager_counts_from_its_start_and_stores_the_job(tmp_path):
    store = str(tmp_path / "api.db")
    t = time.process_time()
    while time.process_time() - t < 0.3:  # CPU before the block: must not be counted
        pass
    with jobmon.monitor(job_id="api-test", interval=0.1, tags={"k": "v,= x"}, store=store) as m:
        before = _cpu()   # after the monitor's own start-up (NVML's set-up takes ~60 ms)
        t = time.process_time()
        while time.process_time() - t < 0.4:
            pass
        subprocess.run([sys.executable, "-c",
                        "import time\nt = time.process_time()\n"
                        "while time.process_time() - t < 0.3: pass"], check=True)
    truth = _cpu() - before
    s = m.summary
    cpu = s["cpu_user_seconds"] + s["cpu_system_seconds"]
    # /proc ticks are 10 ms per process; the sampler thread's own CPU is part of the process
    assert abs(cpu - truth) <= max(0.05, 0.05 * truth), (cpu, truth)
    assert s["procs_max"] >= 2 and s["samples"] >= 3 and s["exit_code"] == 0
    rec = LocalStore(store).job("api-test")
    assert rec.summary["cpu_user_seconds"] == s["cpu_user_seconds"]
    assert rec.info["tags"] == {"k": "v,= x"} and len(rec.samples) == s["samples"]


def test_decorator_returns_the_result_and_marks_exceptions(tmp_path):
    store = str(tmp_path / "api.db")

    @jobmon.monitor(job_id="deco", interval=0.05, store=store)
    def work(x):
        time.sleep(0.1)
        return x * 2

    assert work(21) == 42
    assert LocalStore(store).job("deco").summary["exit_code"] == 0

    @jobmon.monitor(job_id="deco-fail", interval=0.05, store=store)
    def fails():
        raise ValueError("boom")

    try:
        fails()
    except ValueError:
        pass
    else:
        raise AssertionError("the exception must propagate")
    assert LocalStore(store).job("deco-fail").summary["exit_code"] == 1
