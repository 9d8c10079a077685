"""What a job report says: totals, peaks and efficiency, from a stored JobRecord.

Renderers (jobmon.render.*) only lay this out; they compute nothing.
"""
from ..summary import Fold


def build(record):
    s = record.summary
    info = record.info
    samples = record.samples
    running = not s
    if running and samples:  # still running (or killed): what the samples say so far
        fold = Fold()
        for x in samples:
            fold.add(x)
        s = fold.totals()
    cpu = (s.get("cpu_user_seconds") or 0) + (s.get("cpu_system_seconds") or 0)
    wall = s.get("wall_seconds") or 0
    totals = [
        ("wall time", wall, "s"),
        ("CPU user", s.get("cpu_user_seconds"), "s"),
        ("CPU system", s.get("cpu_system_seconds"), "s"),
        ("CPU cores used (average)", round(cpu / wall, 3) if wall else None, "cores"),
        ("resident memory peak", s.get("rss_peak_bytes"), "bytes"),
        ("charged memory peak (incl. page cache)", s.get("mem_peak_bytes"), "bytes"),
        ("storage read", s.get("read_bytes"), "bytes"),
        ("storage written", s.get("write_bytes"), "bytes"),
        ("read() total", s.get("rchar_bytes"), "bytes"),
        ("write() total", s.get("wchar_bytes"), "bytes"),
        ("processes (peak)", s.get("procs_max"), "count"),
        ("threads (peak)", s.get("threads_max"), "count"),
        ("GPUs", s.get("gpu_count"), "count"),
        ("GPU utilization (average)", s.get("gpu_util_avg_percent"), "%"),
        ("GPU memory peak", s.get("gpu_mem_peak_bytes"), "bytes"),
        ("GPU energy", s.get("gpu_energy_joules"), "J"),
        ("samples", s.get("samples"), "count"),
    ]
    if s.get("signal"):
        status = f"killed by signal {s['signal']}"
    elif s.get("exit_code") is not None:
        status = f"exit code {s['exit_code']}"
    else:
        status = "running or ended without a summary"
    header = {
        "job": info.get("job"), "host": info.get("host"), "user": info.get("user"),
        "method": s.get("method") or info.get("method"), "status": status,
        "start_time": info.get("start_time"), "end_time": s.get("end_time"),
        "command": info.get("command"), "tags": info.get("tags") or {},
    }
    return {"header": header, "totals": [t for t in totals if t[1] is not None],
            "summary": record.summary, "samples": samples, "running": running}
