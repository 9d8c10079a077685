"""The single-job dashboard: one job (and run) over time, its summary, efficiency and the
scheduler's figures."""
from dashlib import (JOB, SAMPLE, SANE, Grid, dashboard, filter_vars, match, row, stat, table,
                     table_target, tag_var, target, text, timeseries, unit_override)
from jobmon.metrics.declared import PANELS

# the job of the user chosen (two users may run jobs of one id), narrowed like the chain of
# variables that lists it
SELECTED = ("job", "user", "cluster", "account", "group", "host")
# an HTCondor id is its schedd's: two schedds' 4711.0 are two jobs
F = match(*SELECTED, "schedd", "run") + " AND $__timeFilter"
BY_TIME = "GROUP BY time($__interval), \"host\", \"schedd\" fill(none)"
# an allocation is one figure per job (its summary point, at the job's start): carried
# forward over the range so it draws as a line against the samples
ALLOC = "GROUP BY time($__interval), \"host\", \"schedd\" fill(previous)"
PERCENT = [(None, "red"), (25, "orange"), (50, "yellow"), (75, "green")]

ENERGY = ("The job's energy (where the node reader runs): its GPUs' own counter (scope "
          "device: a shared GPU's whole energy), plus its share of the node's CPU package and "
          "DRAM energy by its share of the node's CPU time (scope job, method apportioned); "
          "CO2e at the site's carbon intensity (estimated). docs/energy.md.")

ADVICE = """\
**Reading the signals.** `cpu_idle_samples`: samples in which the job used under 1 % of a
core while it ran (a stalled job). `mem_rising` = 1: resident memory rose steadily
(a leak?), by `mem_growth_bytes_per_hour`. `gpu_idle_samples`: samples with GPUs allocated
but idle. `leftover_procs`: processes still running when the command exited. CPU efficiency
under 50 %: ask for fewer cores; memory efficiency under 50 %: ask for less memory.
The Advice table below has the advice itself; `jobmon query $job` the whole report."""

# a declared panel's column (jobmon.metrics.declared): per second, mean or largest
HOW = {"rate": 'non_negative_derivative(last("{}"), 1s)', "mean": 'mean("{}")',
       "max": 'max("{}")'}


def declared_panels(g, titles):
    """The panels the metrics declared beside their probes ask for, one per title: a
    column per field, the first field's unit (and decimals) the panel's, its descriptions
    joined."""
    out = []
    for title in titles:
        fields = PANELS[title]
        unit = fields[0][1]["unit"]
        cols = [HOW[d["how"]].format(name) + (f' * {d["scale"]}' if d.get("scale", 1) != 1
                                              else "") + f' AS {d["alias"]}'
                for name, d in fields]
        out.append(timeseries(g, title, [target(
            f'SELECT {", ".join(cols)} FROM "{SAMPLE}" WHERE {F} {BY_TIME}',
            alias="$col $tag_host $tag_schedd")], unit=unit,
            decimals=fields[0][1].get("decimals"),
            overrides=[unit_override(d["alias"], d["unit"]) for _n, d in fields
                       if d["unit"] != unit],
            description=" ".join(d["description"] for _n, d in fields if d.get("description"))))
    return out


# where the declared panels go among the ones built here, by title; a declared panel not
# named here goes after the run queue's
BEFORE_OOM = ("I/O rates", "Stalled on CPU, memory, I/O (PSI)", "Waiting for a CPU (run queue)")
BEFORE_GPU = ("Processes and threads",)
AFTER_GPU = ("GPU memory and energy", "Power and network")
OTHERS = tuple(t for t in PANELS if t not in BEFORE_OOM + BEFORE_GPU + AFTER_GPU)


def summary_panels(g):
    """The run at a glance: efficiency, outcome, hours, energy, its summary and advice."""
    p = [row(g, "Summary")]
    p.append(stat(g, "CPU and memory efficiency", [target(
        f'SELECT last("cpu_efficiency_percent") AS cpu, last("mem_efficiency_percent") AS mem '
        f'FROM "{JOB}" WHERE {F}', fmt="table")], unit="percent", thresholds=PERCENT,
        description="CPU time / (cores allocated x wall time); the memory peak that "
                    "sizes the job (mem_sizing_peak_bytes) / memory allocated."))
    p.append(stat(g, "Outcome", [target(
        f'SELECT last("outcome") AS outcome, last("outcome_reason") AS reason '
        f'FROM "{JOB}" WHERE {F}', fmt="table")],
        description="goodput: the job completed; badput: it failed, was killed or evicted.",
        mappings=[{"type": "value", "options": {
            "goodput": {"color": "green", "index": 0},
            "badput": {"color": "red", "index": 1}}}]))
    p.append(stat(g, "Core-hours", [target(
        f'SELECT sum("provisioned_core_hours") AS provisioned, sum("used_core_hours") AS used, '
        f'sum("idle_core_hours") AS idle, sum("idle_canonical_core_hours") AS idle_canonical '
        f'FROM "{JOB}" WHERE {F} AND {SANE}', fmt="table")], decimals=3,
        description="Provisioned, used and idle core-hours; idle canonical core-hours count "
                    "idle memory too, in whole canonical units (1 core + 2 GiB)."))
    p.append(stat(g, "GPU-hours", [target(
        f'SELECT sum("gpu_hours") AS gpu_hours, sum("idle_gpu_hours") AS idle_gpu_hours '
        f'FROM "{JOB}" WHERE {F} AND {SANE}', fmt="table")], decimals=3))
    p.append(stat(g, "Energy and CO2e", [target(
        f'SELECT sum("energy_joules") / 3600000 AS energy_kwh, sum("co2e_grams") AS co2e_grams '
        f'FROM "{JOB}" WHERE {F} AND {SANE}', fmt="table")], decimals=4,
        overrides=[unit_override("energy_kwh", "kwatth"), unit_override("co2e_grams", "none")],
        description=ENERGY))
    p.append(table(g, "Job summary", [table_target(
        f'SELECT "start_time" * 1000 AS started, "end_time" * 1000 AS ended, "wall_seconds", "exit_code", "signal", '
        f'"cpu_user_seconds", "cpu_system_seconds", "cpu_cores_avg", "rss_peak_bytes", '
        f'"mem_peak_bytes", "mem_sizing_basis", "swap_peak_bytes", "read_bytes", '
        f'"write_bytes", "procs_max", "threads_max", "leftover_procs", "procs_killed_at_end", '
        f'"samples", "interval_seconds", "method", "ownership", "command" '
        f'FROM "{JOB}" WHERE {F} GROUP BY "host", "schedd", "run", "user"')], h=6,
        overrides=[unit_override(n, "bytes") for n in (
            "rss_peak_bytes", "mem_peak_bytes", "swap_peak_bytes", "read_bytes",
            "write_bytes")] + [unit_override(n, "s") for n in (
                "wall_seconds", "cpu_user_seconds", "cpu_system_seconds")]
        + [unit_override(n, "dateTimeAsIso") for n in ("started", "ended")],
        description="The end-of-job summary point (docs/metrics.md), one row per node."))
    p.append(table(g, "Advice signals", [table_target(
        f'SELECT last("cpu_idle_samples") AS cpu_idle_samples, last("mem_rising") AS mem_rising, '
        f'last("mem_growth_bytes_per_hour") AS mem_growth_per_hour, '
        f'last("gpu_idle_samples") AS gpu_idle_samples, last("leftover_procs") AS leftover_procs '
        f'FROM "{JOB}" WHERE {F} GROUP BY "host", "schedd"')], w=12, h=5,
        overrides=[unit_override("mem_growth_per_hour", "bytes")],
        mappings=[{"type": "value", "options": {"1": {"text": "yes", "color": "red"}}}]))
    p.append(text(g, "Reading the signals", ADVICE, w=12, h=5))
    p.append(table(g, "Advice", [table_target(
        f'SELECT last("advice") AS advice, last("outcome_reason") AS outcome, '
        f'last("completeness_percent") AS data_percent, last("completeness_reasons") AS data '
        f'FROM "{JOB}" WHERE {F} GROUP BY "host", "schedd", "run"')], w=24, h=4,
        overrides=[unit_override("data_percent", "percent")],
        description="What jobmon advises on the run (docs/reports.md): each rule's line, "
                    "\" | \" between them, written at the job's end and again when `jobmon "
                    "reconcile` applies the scheduler's end; the share of the run its data "
                    "covers and why not all (below the site's threshold its samples' advice "
                    "is withheld)."))
    return p


def over_time_panels(g):
    """Its samples over time: those built here and the declared ones (declared_panels)."""
    p = [row(g, "Over time")]
    p.append(timeseries(g, "CPU cores: used vs allocated", [
        target(f'SELECT mean("cpu_cores") AS used FROM "{SAMPLE}" WHERE {F} {BY_TIME}',
               alias="used $tag_host $tag_schedd"),
        target(f'SELECT last("cores_allocated") AS allocated FROM "{JOB}" WHERE {F} {ALLOC}',
               ref="B", alias="allocated $tag_host $tag_schedd"),
        target(f'SELECT last("cores_requested") AS requested FROM "{JOB}" WHERE {F} {ALLOC}',
               ref="C", alias="requested $tag_host $tag_schedd")], unit="none", decimals=2))
    p.append(timeseries(g, "Memory, each definition, vs request", [
        target(f'SELECT mean("mem_resident_bytes") AS resident, mean("mem_cache_bytes") AS cache, '
               f'mean("mem_swap_bytes") AS swap, max("mem_resident_peak_bytes") AS resident_peak, '
               f'max("mem_peak_bytes") AS kernel_peak FROM "{SAMPLE}" WHERE {F} {BY_TIME}',
               alias="$col $tag_host $tag_schedd"),
        target(f'SELECT last("mem_requested_bytes") AS requested, '
               f'last("mem_allocated_bytes") AS allocated, '
               f'last("scheduler_memory_bytes") AS scheduler_memory '
               f'FROM "{JOB}" WHERE {F} {ALLOC}',
               ref="B", alias="$col $tag_host $tag_schedd")], unit="bytes",
        description="resident: anonymous + shared memory (PSS in procfs mode); cache: its "
                    "page cache (reclaimable; procfs: the file pages it maps); resident_peak: "
                    "the largest resident so far and, where jobmon reaps the job, each "
                    "process's kernel high-water mark (which also counts its program and "
                    "library pages); kernel_peak: the cgroup's high-water mark of charged "
                    "memory, page cache included (cgroup mode only); scheduler_memory: "
                    "HTCondor's MemoryUsage or Slurm's MaxRSS, once reconciled."))
    p += declared_panels(g, BEFORE_OOM)
    p += declared_panels(g, OTHERS)
    p.append(table(g, "Killed for memory", [table_target(
        f'SELECT "oom_kills", "oom_time" * 1000 AS oom_time, "oom_command", "oom_pid", '
        f'"oom_charge_bytes", "oom_limit_bytes", "oom_anon_bytes", "oom_cache_bytes", '
        f'"oom_source" FROM "{JOB}" WHERE {F} AND "oom_kills" > 0 '
        f'GROUP BY "host", "schedd", "run"')],
        h=5, hidden=("time",),
        overrides=[unit_override(n, "bytes") for n in (
            "oom_charge_bytes", "oom_limit_bytes", "oom_anon_bytes", "oom_cache_bytes")]
        + [unit_override("oom_time", "dateTimeAsIso")],
        description="The kernel's OOM killer killed a process of the job: the first kill, "
                    "its process, the job's charge and limit then, anonymous memory against "
                    "page cache; from the kernel's log where jobmon could read it, else from "
                    "the samples either side (oom_source). docs/reports.md, \"Killed for "
                    "memory\"."))
    p += declared_panels(g, BEFORE_GPU)
    p.append(timeseries(g, "GPU utilization", [
        target(f'SELECT mean("gpu_util_percent") AS util FROM "{SAMPLE}" WHERE {F} {BY_TIME}',
               alias="util $tag_host $tag_schedd"),
        target(f'SELECT max("gpu_count") AS gpus FROM "{SAMPLE}" WHERE {F} {BY_TIME}',
               ref="B", alias="GPUs $tag_host $tag_schedd")], unit="percent",
        overrides=[unit_override("gpus", "none")]))
    p += declared_panels(g, AFTER_GPU)
    return p


def scheduler_panels(g):
    """What the scheduler says it asked for, gave and recorded."""
    p = [row(g, "Scheduler")]
    p.append(table(g, "Requested and allocated (scheduler's figures)", [table_target(
        f'SELECT "cores_requested", "cores_allocated", "mem_requested_bytes", '
        f'"mem_allocated_bytes", "gpus_requested", "gpus_allocated", "canonical_units", '
        f'"scheduler_state", "scheduler_memory_bytes", "scheduler_cpu_seconds", "batch", '
        f'"tags" FROM "{JOB}" WHERE {F} '
        f'GROUP BY "scheduler", "cluster", "account", "group", "partition", "queue", '
        f'"host", "run"')], h=6,
        overrides=[unit_override(n, "bytes") for n in (
            "mem_requested_bytes", "mem_allocated_bytes", "scheduler_memory_bytes")]
        + [unit_override("scheduler_cpu_seconds", "s")],
        description="What the job asked for and was given, from the scheduler (HTCondor's "
                    "job ad, Slurm's allocation, or `--tag request_cpus=`); what the "
                    "scheduler recorded of the run once `jobmon reconcile` applied it (its "
                    "state, HTCondor's MemoryUsage or Slurm's MaxRSS, its CPU); the batch "
                    "it belongs to; the job's other scheduler tags as the `tags` JSON."))
    return p


def build():
    g = Grid()
    p = summary_panels(g) + over_time_panels(g) + scheduler_panels(g)
    variables = filter_vars("cluster", "user", "account", "group", "host", single=("user",))
    variables.append(tag_var("job", where=[match(*SELECTED[1:])], multi=False,
                             description="Job id as users type it (HTCondor 123.0, Slurm "
                                         "12345_7), among the chosen user's jobs."))
    variables.append(tag_var("schedd", where=[match(*SELECTED)],
                             description="HTCondor: the schedd the job is of (two schedds' "
                                         "4711.0 are two jobs)"))
    variables.append(tag_var("run", where=[match(*SELECTED, "schedd")],
                             description="Which run of a job the scheduler ran more than once"))
    return dashboard(
        "jobmon-job", "jobmon: single job",
        "One job: CPU, memory, I/O, processes and GPUs over time, its summary, efficiency "
        "and the scheduler's figures.", p, variables, time_from="now-7d",
        links=[{"title": "node",
                "url": "/d/jobmon-node/jobmon-node?var-host=${host:percentencode}"},
               {"title": "user",
                "url": "/d/jobmon-user/jobmon-user?var-user=${user:percentencode}"},
               {"title": "cluster overview", "url": "/d/jobmon-cluster/jobmon-cluster"}])
