"""Advice on a job: small named rules over its summary, thresholds from the config's
[report] section (docs/reports.md lists every rule). Nothing is evaluated from strings.

Each rule takes (summary, cfg) -- the summary with the efficiency figures of
jobmon.summary.efficiency, cfg the [report] section -- and returns one line or None.
"""
import math

from .completeness import below
from .efficiency import BASIS_TEXT, SAMPLED, sizing_peak
from ..metrics.declared import RULES as DECLARED
from ..printable import fixed, size

GIB = 1 << 30


def _cores_used(s):
    wall = s.get("wall_seconds") or 0
    cpu = (s.get("cpu_user_seconds") or 0) + (s.get("cpu_system_seconds") or 0)
    return cpu / wall if wall > 0 else None


def _cpu_demand(s):
    """(cores used, cores' worth its threads waited for a CPU, how the wait was measured)
    per second of wall, or None without a wall time; the wait None where nothing measured
    it. The run-queue wait is exact: thread-seconds waited, summed over the job's threads.
    PSI counts the wall time during which at least one thread waited: that many seconds
    to as many times its threads (threads_max; its cores where not known), and never more
    than its threads could have wanted -- the most it may have waited is taken, so that a
    job that really waited is never told to ask for fewer cores, while a single-threaded
    job (at most 1 core wanted) or an idle one (hardly ever waiting) still is."""
    wall = s.get("wall_seconds") or 0
    if wall <= 0:
        return None
    cpu = (s.get("cpu_user_seconds") or 0) + (s.get("cpu_system_seconds") or 0)
    used = cpu / wall
    psi, rq = s.get("cpu_pressure_seconds"), s.get("cpu_wait_seconds")
    if psi is None and s.get("cpu_pressure_percent") is not None:   # older summaries
        psi = s["cpu_pressure_percent"] / 100.0 * wall
    if rq is None and s.get("cpu_wait_percent") is not None and s["cpu_wait_percent"] < 100:
        rq = cpu * s["cpu_wait_percent"] / (100.0 - s["cpu_wait_percent"])
    if psi is not None:
        some = psi / wall
        threads = s.get("threads_max") or s.get("cores_allocated") or 1
        return used, max(some, min(some * threads, threads - used)), "PSI"
    if rq is not None:
        return used, rq / wall, "run queue"
    return used, None, ""


def _cores_needed(demand, cfg):
    """Cores to ask for: what the job wanted (used + waited for) plus headroom."""
    return max(1, math.ceil(demand * (1 + cfg["cpu_headroom_percent"] / 100)))


def _contention(s, cfg):
    """(used, waited, how) when the wait held the job back: what it wanted, CPU used + CPU
    waited for, reached what it was given -- at least `cpu_low_percent` of its cores (of 1
    core where none is known): had it got every CPU it waited for, its efficiency would
    not be low -- and the wait is at least `cpu_wait_percent` of what it wanted. An idle
    or under-using job never is, however busy the node: its demand is below its cores."""
    d = _cpu_demand(s)
    if d is None or d[1] is None:
        return None
    used, waited, how = d
    demand, cores = used + waited, s.get("cores_allocated") or 1.0
    if demand <= 0 or 100 * waited / demand < cfg["cpu_wait_percent"]:
        return None
    if 100 * demand / cores < cfg["cpu_low_percent"]:
        return None
    return used, waited, how


def cpu_contended(s, cfg):
    """The job's threads wanted the cores it was given but waited for a CPU much of that
    time: the node was busy, so a low CPU efficiency is its neighbours' doing, and no rule
    tells it to ask for fewer cores."""
    c = _contention(s, cfg)
    if c is None:
        return None
    used, waited, how = c
    cores = s.get("cores_allocated")
    given = f"of the {cores:g} cores it was given" if cores else "cores"
    if how == "PSI":
        wall = s["wall_seconds"]
        some = s.get("cpu_pressure_seconds")
        some = s["cpu_pressure_percent"] if some is None else 100 * some / wall
        why = f"a thread of it waited for a CPU {fixed(some, '.0f')} % of the run (PSI)"
    else:
        why = (f"its threads waited for a CPU {fixed(waited, '.1f')} cores' worth more, "
               f"{fixed(100 * waited / (used + waited), '.0f')} % of what they wanted "
               "(run queue)")
    return (f"the node was busy: it got {fixed(used, '.1f')} {given}, and {why}; its CPU "
            "use says what it got, not what it needs: no advice on cores from this run")


def cpu_underused(s, cfg):
    """Fewer cores busy than allocated: suggest what it wanted (the average used, plus what
    it waited for a CPU) plus headroom -- on a busy node too, unless the wait held it back
    (cpu_contended): then the cores were busy with others' work."""
    eff, cores, d = s.get("cpu_efficiency_percent"), s.get("cores_allocated"), _cpu_demand(s)
    if eff is None or d is None or cores is None or cores <= 1:
        return None
    if eff >= cfg["cpu_low_percent"] or _contention(s, cfg):
        return None
    used, waited, _how = d
    ask = _cores_needed(used + (waited or 0), cfg)
    if ask >= cores:
        return None
    wait = f" and waited for a CPU {fixed(waited, '.1f')} cores more" \
        if waited and waited >= 0.05 else ""
    return (f"used {fixed(used, '.1f')} of the {cores:g} cores it was given "
            f"({fixed(eff, '.0f')} %){wait}: "
            f"ask for {ask} core{'s' if ask > 1 else ''}"), {"cores": ask}


def cpu_oversubscribed(s, cfg):
    """More cores busy than allocated: its threads compete (or it escaped a limit)."""
    cores, used = s.get("cores_allocated"), _cores_used(s)
    if cores and used is not None and used > cores * 1.1:
        return (f"kept {fixed(used, '.1f')} cores busy on {cores:g} allocated: ask for "
                f"{math.ceil(used)} or cap its threads (OMP_NUM_THREADS and the like)"), \
            {"cores": math.ceil(used)}
    return None


def _peak(s):
    """The peak that sizes the job (jobmon.summary.efficiency.sizing_peak) and how to name it."""
    peak, basis = sizing_peak(s)
    return peak, BASIS_TEXT.get(basis, "peak")


def memory_overrequested(s, cfg):
    """A memory peak well below the memory given: suggest the peak plus headroom."""
    mem, (peak, name) = s.get("mem_allocated_bytes"), _peak(s)
    if not mem or not peak or 100 * peak / mem >= cfg["mem_low_percent"]:
        return None
    ask = math.ceil(peak * (1 + cfg["mem_headroom_percent"] / 100) / (GIB / 2)) * (GIB / 2)
    if mem - ask < cfg["mem_min_waste_bytes"]:
        return None
    return (f"{name} {size(peak)} of {size(mem, True)} memory: ask for {size(ask, True)}",
            {"memory_bytes": int(ask)})


def memory_near_limit(s, cfg):
    """A memory peak close to the memory limit: the next run may be killed."""
    mem, (peak, name) = s.get("mem_allocated_bytes"), _peak(s)
    if not mem or not peak or 100 * peak / mem < cfg["mem_near_limit_percent"]:
        return None
    ask = math.ceil(peak * (1 + cfg["mem_headroom_percent"] / 100) / (GIB / 2)) * (GIB / 2)
    return (f"{name} {size(peak)} is {fixed(100 * peak / mem, '.0f')} % of its "
            f"{size(mem, True)}: ask for {size(ask, True)} so it is not killed for memory"), \
        {"memory_bytes": int(ask)}


def oom_killed(s, cfg):
    """The kernel killed processes of the job for memory: it needs more than its limit."""
    n, limit, (peak, name) = s.get("oom_kills"), s.get("oom_limit_bytes") or \
        s.get("mem_allocated_bytes"), _peak(s)
    if not n:
        return None
    at = f" at its {size(limit, True)} limit" if limit else ""
    return (f"{n} process{'es were' if n > 1 else ' was'} killed for memory{at} "
            f"(`jobmon query` tells which, when): ask for more memory"
            + (f" than its {name} {size(peak)}" if peak else ""))


def memory_thrashing(s, cfg):
    """Its working set did not fit in what it was given: it kept giving up pages and reading
    them back. Either PSI says it stalled on memory much of the run (reclaim, refaults of
    its working set), or its major page faults a second while it was at its memory limit
    say so (pages read back from disk: PSI counts those as I/O when the kernel never held
    them as a working set, as a pass over more than fits)."""
    mem, (peak, name) = s.get("mem_allocated_bytes"), _peak(s)
    share = s.get("mem_pressure_percent")
    wall, faults, hits = s.get("wall_seconds"), s.get("mem_major_faults"), s.get("mem_limit_hits")
    if share is not None and share >= cfg["mem_pressure_percent"]:
        why = f"stalled on memory {fixed(share, '.0f')} % of the run (PSI: reclaim, refaults)"
    elif wall and faults and hits and faults / wall >= cfg["major_faults_per_second"]:
        why = (f"{fixed(faults / wall, '.0f')} major page faults a second while at its memory "
               f"limit ({hits} times)")
    else:
        return None
    given = f" in the {size(mem, True)} it was given" if mem else ""
    seen = f" ({name} {size(peak)})" if peak else ""
    return f"thrashing: {why}: its working set does not fit{given}{seen}: ask for more memory"


def io_bound(s, cfg):
    """Waited for storage much of the run (PSI io): the job is I/O-bound."""
    share = s.get("io_pressure_percent")
    if share is None or share < cfg["io_pressure_percent"]:
        return None
    return (f"I/O-bound: waited for storage {fixed(share, '.0f')} % of the run (PSI): copy "
            "its input to local scratch, read and write in larger blocks, or spread its I/O "
            "over more nodes")


def stalled(s, cfg):
    """Many samples with next to no CPU while processes were alive: waiting on something."""
    idle, n = s.get("cpu_idle_samples"), s.get("samples")
    if not idle or not n or n < 5 or 100 * idle / n < cfg["idle_samples_percent"]:
        return None
    return (f"idle (under 0.01 cores) in {idle} of {n} samples: waiting on I/O, the "
            "network or a lock? `jobmon watch` shows it live")


def growth_text(rate, wall):
    """How much resident memory rose: per hour for a run of an hour or more; over the run
    for a shorter one (a 13 s ramp of 500 MiB is no "+140 GiB/h")."""
    rate = rate or 0
    if wall and 0 < wall < 3600:
        return f"+{size(rate * wall / 3600)} over its {fixed(wall, '.0f')} s"
    return f"+{size(rate)}/h"


def memory_leak(s, cfg):
    """Resident memory rose steadily over the run."""
    if not s.get("mem_rising"):
        return None
    wall = s.get("wall_seconds")
    grew = growth_text(s.get("mem_growth_bytes_per_hour"), wall)
    if wall and wall < 3600:
        return f"resident memory rose steadily ({grew}): a leak, or data it loads as it goes?"
    return f"resident memory rose steadily ({grew}): a leak?"


def gpu_idle(s, cfg):
    """GPUs allocated but hardly used."""
    gpus, util = s.get("gpus_allocated"), s.get("gpu_util_avg_percent")
    if not gpus or util is None or util >= cfg["gpu_low_percent"]:
        return None
    return (f"{gpus} GPU{'s' if gpus > 1 else ''} allocated, {fixed(util, '.0f')} % busy on "
            "average: "
            "ask for none, or fewer"), {"gpus": 0}


def one_node_busy(s, cfg):
    """A job given several nodes that did nearly all its work on one: the others sat
    idle (jobmon.report.nodes puts the nodes' balance in the summary)."""
    n, share = s.get("nodes") or 1, s.get("busiest_node_cpu_percent")
    cores = _cores_used(s)
    if n < 2 or share is None or share < cfg["node_busy_percent"] or not cores or cores < 0.1:
        return None
    return (f"node {s['busiest_node']} did {fixed(share, '.0f')} % of the CPU of the job's {n} "
            "nodes, the others sat idle: does it start its work on every node (srun, "
            "mpirun)? else ask for 1 node")


def short_job(s, cfg):
    """Very short jobs spend much of their slot on scheduling and start-up."""
    wall = s.get("wall_seconds")
    if wall is None or wall >= cfg["short_job_seconds"] or s.get("outcome") != "goodput":
        return None
    return f"ran {fixed(wall, '.0f')} s: jobs this short are better grouped into longer ones"


def killed_at_end(s, cfg):
    """Processes the job left running that the scheduler killed when it ended: work that
    may never have finished, though the job's exit status says it succeeded."""
    n = s.get("procs_killed_at_end")
    if not n:
        return None
    return (f"{n} process{'es' if n > 1 else ''} still running when the job ended "
            f"{'were' if n > 1 else 'was'} killed by the scheduler: `wait` for background "
            "work before the job script ends, or it may be lost")


def _scheduler_job(s):
    """A job a scheduler ran (its record says what it was given): `scheduler` where the
    caller knows it, else the tags its plugin wrote (a job_id, a GlobalJobId)."""
    if s.get("scheduler") not in (None, "", "local"):
        return True
    t = s.get("tags") or {}
    return bool(t.get("GlobalJobId") or (t.get("job_id") and t.get("uid")))


def no_allocation(s, cfg):
    """Nothing says what a `jobmon run` job was given: no efficiency can be computed. Never
    for a scheduler's job: its allocation comes from the scheduler, never from a tag."""
    if s.get("cores_allocated") is not None or s.get("wall_seconds") is None \
            or _scheduler_job(s):
        return None
    return ("no allocation known: give `jobmon run --tag request_cpus=N "
            "--tag request_memory=SIZE` for efficiency figures")


def declared(d):
    """The rule a metric's declaration gives (jobmon.metrics.declared): its text where the
    summary's field reaches the [report] setting."""
    def rule(s, cfg):
        v = s.get(d["field"])
        if v is None or v < cfg.get(d["setting"], d["default"]):
            return None
        return d["text"].format_map(dict(s, value=v))
    rule.__name__, rule.__doc__ = d["rule"], d["doc"]
    return rule


RULES = (oom_killed, cpu_contended, cpu_underused, cpu_oversubscribed, memory_overrequested,
         memory_near_limit, memory_thrashing, io_bound, *map(declared, DECLARED), stalled,
         memory_leak, gpu_idle, one_node_busy, killed_at_end, short_job, no_allocation)


# rules that rest on what the samples saw (a gap, a failed read, a lost stretch takes
# from it): idle stretches, the memory trend, GPU use, nodes' shares; the other rules read
# counters each sample reads whole (CPU, PSI, I/O, throttling, limit hits, the kernel's
# peaks), which a gap does not lose
SAMPLED_RULES = ("stalled", "memory_leak", "gpu_idle", "one_node_busy")


def sampled_rules(s):
    """The rules a run's samples decide: the memory rules too where its sizing peak is the
    samples' own (no kernel high-water mark)."""
    if s.get("mem_sizing_basis") == SAMPLED:
        return SAMPLED_RULES + ("memory_overrequested", "memory_near_limit")
    return SAMPLED_RULES


def advise(summary, cfg):
    """[{"rule": name, "text": line, "ask": what}] for the rules that have something to
    say, in RULES order; rules named in cfg["disabled"] are left out. A rule that suggests a
    request returns (line, what): {"cores": N}, {"memory_bytes": B} or {"gpus": N}, which
    reports write in the job's own submit syntax (jobmon.report.verdict); else ask is
    None."""
    off = {x.strip() for x in (cfg.get("disabled") or "").split(",") if x.strip()}
    out = []
    short = below(summary, cfg.get("min_completeness_percent"))
    held = sampled_rules(summary) if short else ()
    if short and "data_incomplete" not in off:
        out.append({"rule": "data_incomplete", "ask": None,
                    "text": f"{short}: no advice from what its samples saw (idle stretches, "
                            "a memory trend, GPU use, sampled peaks)"})
    for rule in RULES:
        if rule.__name__ in off or rule.__name__ in held:
            continue
        text, ask = _split(rule(summary, cfg))
        if text:
            out.append({"rule": rule.__name__, "text": text, "ask": ask})
    return out


def _split(said):
    """(line, what to ask for) of a rule's answer: a line, or (line, what)."""
    return said if isinstance(said, tuple) else (said, None)


def summary_text(summary, cfg):
    """The advice as one line for the summary (`advice`): each rule's text and name,
    " | " between them; "" when none has any."""
    return " | ".join(f"{a['text']} ({a['rule']})" for a in advise(summary, cfg))
