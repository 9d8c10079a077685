"""jobmon's summary of one run beside Slurm's record of it (sacct.Record): where they
disagree, and why (for `jobmon query` to show; nothing is rendered here).

How each measures (DESIGN §4, measured on Slurm 22.05 here):
- CPU: Slurm sums its steps' accounting (jobacct_gather: the cgroup's or the task's
  tree); a daemon that escapes the task tree is counted by mixing whole seconds from the
  cgroup with fractions from wait3 (+50 % seen). jobmon reads the job cgroup's total.
- MaxRSS: the largest of samples taken every JobAcctGatherFrequency, per task: a spike
  between samples is missed, a job shorter than one sample shows 0. On cgroup v1 it is
  anonymous memory only; on v2 memory.current/peak, page cache included, and 22.05
  counts transparent huge pages twice (411752K for a 200 MiB job). jobmon's
  mem_peak_bytes is the kernel's high-water mark of the whole job (cache included);
  rss_peak_bytes its sampled resident memory plus the kernel's marks.
- Disk bytes: each step's leader process only (0 for what children wrote); jobmon's are
  the job cgroup's io.stat (v2; Slurm makes no blkio cgroup on v1).
- Exit: a cancelled job's Epilog gets status 0 (jobmon takes the Epilog's), sacct says
  CANCELLED; 22.05's JSON loses plain exit codes (sacct.py reads them from the text).
"""
from jobmon.accounting import disagreement, status_text, total

MiB = 1 << 20

REASONS = {
    "cpu_high": "Slurm counted more CPU than the job's cgroup holds: a process that left "
                "the task tree (an escaped daemon) is counted by adding whole seconds from "
                "the cgroup to fractions from wait3",
    "cpu_low": "Slurm counted less CPU than the job's cgroup holds: its per-step accounting "
               "polls every JobAcctGatherFrequency and misses what ran after the last poll "
               "or outside the step's tasks",
    "rss_sampled": "sacct's MaxRSS is the largest of samples taken every "
                   "JobAcctGatherFrequency: a peak between two samples is missed, and a job "
                   "shorter than one sample shows 0; jobmon's peaks are the kernel's "
                   "high-water marks",
    "rss_anon": "on cgroup v1 sacct's MaxRSS counts anonymous memory only; jobmon's "
                "mem_peak_bytes is everything the job was charged, page cache included",
    "rss_cache": "on cgroup v2 sacct's MaxRSS is the cgroup's memory, file cache included "
                 "(unless JobAcctGatherParams=no_file_cache), and Slurm before 23.02.6 "
                 "counts transparent huge pages twice",
    "io_leader": "sacct's disk bytes count each step's leader process only: what its "
                 "children read or wrote is missing; jobmon's are the job cgroup's io.stat",
    "exit_cancelled": "a cancelled job's Epilog gets exit status 0 (jobmon records the "
                      "Epilog's); sacct records the cancellation",
    "exit": "the Epilog's exit status (jobmon's) differs from sacct's ExitCode",
    "wall": "sacct's Elapsed runs from the allocation's start to its end, in whole "
            "seconds; jobmon's from the job's first process to its last",
}


def compare(summary, record):
    """[{field, unit, jobmon, slurm, difference, reason}] where jobmon's `summary` (the
    end-of-job record of one run on one node) and Slurm's `record` of that run disagree
    beyond what their ways of measuring explain. [] when they agree."""
    out = []
    method = summary.get("method") or ""
    j = total(summary.get("cpu_user_seconds"), summary.get("cpu_system_seconds"))
    c = record.cpu_seconds
    if j is not None and c is not None:
        tol = max(0.1, 0.02 * j)      # sacct keeps milliseconds; its polls, some more
        if c > j + tol:
            out.append(_row("cpu_seconds", "s", j, c, REASONS["cpu_high"]))
        elif c < j - tol:
            out.append(_row("cpu_seconds", "s", j, c, REASONS["cpu_low"]))
    out += _memory(summary, record, method)
    for field, theirs in (("read_bytes", record.read_bytes), ("write_bytes", record.write_bytes)):
        mine = summary.get(field)
        if mine is not None and theirs is not None and \
                abs(mine - theirs) > max(1 * MiB, 0.05 * mine):
            out.append(_row(field, "bytes", mine, theirs, REASONS["io_leader"]))
    mine = (summary.get("exit_code"), summary.get("signal"))
    theirs = (record.exit_code, record.signal)
    if mine != (None, None) and theirs != (None, None) and mine != theirs:
        why = REASONS["exit_cancelled"] if record.state == "CANCELLED" else REASONS["exit"]
        out.append(_row("exit", "", status_text(*mine), status_text(*theirs), why))
    j, c = summary.get("wall_seconds"), record.elapsed_seconds
    if j is not None and c is not None and abs(j - c) > max(2.0, 0.05 * j):
        out.append(_row("wall_seconds", "s", j, c, REASONS["wall"]))
    return out


def _memory(summary, record, method):
    """sacct's MaxRSS against jobmon's peaks, with the reason that fits the node's cgroup
    version (jobmon's method says which)."""
    theirs = record.max_rss_bytes
    peak = summary.get("mem_peak_bytes") or summary.get("rss_peak_bytes")
    if theirs is None or not peak:
        return []
    resident = summary.get("rss_peak_bytes") or peak
    tol = max(8 * MiB, 0.1 * resident)
    if theirs < resident - tol:
        why = REASONS["rss_sampled"]
        if method == "cgroup-v1" and peak > resident + tol:
            why += "; " + REASONS["rss_anon"]
        return [_row("max_rss_bytes", "bytes", peak, theirs, why)]
    if method == "cgroup-v1" and theirs < peak - max(8 * MiB, 0.1 * peak):
        # jobmon's own resident samples may have missed a short peak too: the kernel's
        # mark has it, and either reason may be sacct's
        return [_row("max_rss_bytes", "bytes", peak, theirs,
                     REASONS["rss_anon"] + "; or " + REASONS["rss_sampled"])]
    if theirs > peak + tol:
        why = REASONS["rss_cache"] if method == "cgroup-v2" else REASONS["rss_sampled"]
        return [_row("max_rss_bytes", "bytes", peak, theirs, why)]
    return []


def _row(field, unit, jobmon, slurm, reason):
    return disagreement("slurm", field, unit, jobmon, slurm, reason)
