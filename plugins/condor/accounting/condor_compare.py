"""jobmon's summary of one run beside HTCondor's record of the same run: where the two
disagree, and why (for `jobmon query` to show; it renders nothing itself).

They measure differently. HTCondor's CPU comes from condor_procd snapshots of the job's
process family, or from its cgroup, in whole seconds, and includes the wrapper (jobmon is
the job's top process). Its MemoryUsage is a polled maximum in MB: anon + shmem of the
job's cgroup every CGROUP_POLLING_INTERVAL (5 s), or the family's summed RSS on procd
nodes; the wrapper is in it too. jobmon reads the kernel's totals once the job's last
process has been reaped, and its resident peak includes the kernel's high-water marks,
so a spike between two samples still counts.
"""
from jobmon.accounting import disagreement, status_text, total
from jobmon.printable import size

MiB = 1 << 20
WRAPPER_RSS = 15 * MiB   # the wrapper's own resident memory, inside HTCondor's figure

REASONS = {
    "exit": "HTCondor records the status the wrapper exits with, which is the job's; a "
            "different one means the run was not started through jobmon's wrapper, or the "
            "wrapper was killed (SIGKILL to the job's processes) before it could exit like "
            "the job",
    "cpu_low": "HTCondor missed CPU time: on nodes without usable cgroups it adds up "
               "condor_procd snapshots of the process family, so processes that ended between "
               "snapshots, jobs shorter than a snapshot interval and processes that left the "
               "family are lost, and it keeps whole seconds; jobmon read the kernel's totals "
               "after the last process was reaped ({method})",
    "cpu_high": "HTCondor counted more CPU than the job and the wrapper together: processes "
                "jobmon did not see ({method}), or a figure from another run of the job",
    "mem_low": "HTCondor's MemoryUsage is the largest of values it polled (anon+shmem of the "
               "job's cgroup every 5 s, or the summed RSS of the process family on procd "
               "nodes), in whole MB: a peak between two polls is missed; jobmon's "
               "rss_peak_bytes also takes the kernel's per-process high-water marks",
    "mem_high": "HTCondor's MemoryUsage counts more than jobmon's resident footprint: the "
                "wrapper's own ~15 MiB, pages shared between processes once per process (RSS, "
                "not PSS) on procd nodes; jobmon's mem_peak_bytes (charged, page cache "
                "included) is {charged}",
    "wall_high": "HTCondor's time runs from the starter's spawn of the job wrapper to its "
                 "exit, in whole seconds; jobmon's from the job's own start to the end of its "
                 "last process",
    "wall_low": "jobmon's run is longer than HTCondor's: the job's processes outlived its "
                "top process (jobmon waited for them), or a figure from another run",
}


def compare(summary, record):
    """[{field, unit, jobmon, htcondor, difference, reason}] where jobmon's `summary` (the
    end-of-job record of one run) and HTCondor's `record` (condor_history.Record of that
    run) disagree beyond what their ways of measuring explain. [] when they agree."""
    out = []
    method = summary.get("method") or "?"
    if record.status == "completed" and (summary.get("exit_code"), summary.get("signal")) \
            != (None, None):
        mine = (summary.get("exit_code"), summary.get("signal"))
        theirs = (record.exit_code, record.signal)
        if mine != theirs:
            out.append(_row("exit", "", status_text(*mine), status_text(*theirs), REASONS["exit"]))
    j = total(summary.get("cpu_user_seconds"), summary.get("cpu_system_seconds"))
    c = total(record.cpu_user_seconds, record.cpu_system_seconds)
    if j is not None and c is not None:
        expected = j + (summary.get("monitor_cpu_seconds") or 0)
        tol = max(1.5, 0.02 * expected)   # two figures in whole seconds
        if c < expected - tol:
            out.append(_row("cpu_seconds", "s", j, c, REASONS["cpu_low"].format(method=method)))
        elif c > expected + tol:
            out.append(_row("cpu_seconds", "s", j, c, REASONS["cpu_high"].format(method=method)))
    j, c = summary.get("rss_peak_bytes"), record.memory_usage_bytes
    if j and c is not None:
        tol = max(8 * MiB, 0.1 * j)
        if c < j - tol:
            out.append(_row("memory_bytes", "bytes", j, c, REASONS["mem_low"]))
        elif c > j + WRAPPER_RSS + tol:
            charged = summary.get("mem_peak_bytes")
            out.append(_row("memory_bytes", "bytes", j, c, REASONS["mem_high"].format(
                charged=size(charged) if charged else "not measured (procfs)")))
    j = summary.get("wall_seconds")
    c = record.execute_seconds if record.execute_seconds is not None else record.wall_seconds
    if j is not None and c is not None:
        tol = max(2.0, 0.02 * j)
        if c > j + tol:
            out.append(_row("wall_seconds", "s", j, c, REASONS["wall_high"]))
        elif c < j - tol:
            out.append(_row("wall_seconds", "s", j, c, REASONS["wall_low"]))
    return out


def _row(field, unit, jobmon, htcondor, reason):
    return disagreement("htcondor", field, unit, jobmon, htcondor, reason)
