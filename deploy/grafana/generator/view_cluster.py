"""The cluster overview: running jobs, efficiency distributions, idle canonical core-hours
and GPU-hours by group and by site, top wasters, goodput/badput, and shipper health."""
from dashlib import (ACTION, JOB, ONE_RUN, RUNS, SAMPLE, SANE, SHIPPER, Grid, barchart,
                     dashboard, field_links, filter_vars, histogram, in_range, match, piechart,
                     row, stat, table, table_target, target, timeseries, unit_override)

CF = match("cluster", "account", "group", "user") + " AND $__timeFilter"
# job points: runs, not their steps, with figures a run can have (docs/metrics.md)
CJ = CF + " AND " + RUNS + " AND " + SANE
# shipper points carry host and cluster only (and user, reason on the loss points)
SF = "\"reason\" = '' AND " + match("cluster") + " AND $__timeFilter"
PROVISIONED = in_range("provisioned_core_hours")


def by(tag, field, alias):
    return table_target(f'SELECT sum("{field}") AS {alias} FROM "{JOB}" WHERE {CJ} AND '
                        f'{in_range(field)} GROUP BY "{tag}"')


def build():
    g = Grid()
    p = [row(g, "Jobs")]
    p.append(timeseries(g, "Running monitored jobs", [target(
        f'SELECT count(n) AS jobs FROM (SELECT last("elapsed_seconds") AS n FROM "{SAMPLE}" '
        f'WHERE {CF} GROUP BY time($__interval), {ONE_RUN}, "host", "cluster") '
        f'WHERE $__timeFilter GROUP BY time($__interval), "cluster" fill(none)',
        alias="$tag_cluster")], unit="none", stack=True,
        description="Job runs (per node) that sent a sample in each interval."))
    p.append(piechart(g, "Goodput / badput (core-hours)", [
        target(f'SELECT sum("provisioned_core_hours") AS goodput FROM "{JOB}" '
               f'WHERE "outcome" = \'goodput\' AND {CJ} AND {PROVISIONED}', fmt="table"),
        target(f'SELECT sum("provisioned_core_hours") AS badput FROM "{JOB}" '
               f'WHERE "outcome" = \'badput\' AND {CJ} AND {PROVISIONED}', ref="B",
               fmt="table")],
        w=6, description="Core-hours of jobs that completed vs failed, killed or evicted."))
    p.append(piechart(g, "Goodput / badput (jobs)", [
        target(f'SELECT count("wall_seconds") AS goodput FROM "{JOB}" '
               f'WHERE "outcome" = \'goodput\' AND {CJ}', fmt="table"),
        target(f'SELECT count("wall_seconds") AS badput FROM "{JOB}" '
               f'WHERE "outcome" = \'badput\' AND {CJ}', ref="B", fmt="table")], w=6))
    p.append(histogram(g, "CPU efficiency of finished jobs", [table_target(
        f'SELECT "cpu_efficiency_percent" FROM "{JOB}" WHERE {CJ} AND '
        f'{in_range("cpu_efficiency_percent")}')],
        description="How many jobs used what share of the cores they were given."))
    p.append(histogram(g, "Memory efficiency of finished jobs", [table_target(
        f'SELECT "mem_efficiency_percent" FROM "{JOB}" WHERE {CJ} AND '
        f'{in_range("mem_efficiency_percent")}')]))

    p.append(row(g, "Idle resources"))
    p.append(barchart(g, "Idle canonical core-hours by group", [
        by("group", "idle_canonical_core_hours", "idle_canonical_core_hours")], w=8))
    p.append(barchart(g, "Idle canonical core-hours by account", [
        by("account", "idle_canonical_core_hours", "idle_canonical_core_hours")], w=8))
    p.append(barchart(g, "Idle canonical core-hours by site", [
        by("cluster", "idle_canonical_core_hours", "idle_canonical_core_hours")], w=8))
    p.append(barchart(g, "Idle GPU-hours by group", [
        by("group", "idle_gpu_hours", "idle_gpu_hours")], w=8))
    p.append(barchart(g, "Idle GPU-hours by account", [
        by("account", "idle_gpu_hours", "idle_gpu_hours")], w=8))
    p.append(barchart(g, "Idle GPU-hours by site", [
        by("cluster", "idle_gpu_hours", "idle_gpu_hours")], w=8))
    p.append(table(g, "Idle allocations now", [table_target(
        f'SELECT last("cpu_idle_seconds") AS cpu_idle, last("gpu_unused_seconds") AS gpu_unused, '
        f'last("gpu_count") AS gpus, last("gpus_in_use") AS gpus_in_use FROM "{SAMPLE}" '
        f'WHERE {CF} GROUP BY {ONE_RUN}, "host"')], h=8, sort="gpu_unused",
        hidden=("time",), decimals=0,
        overrides=[unit_override("cpu_idle", "s"), unit_override("gpu_unused", "s")],
        description="Each job's latest sample in the range: how long it has held its cores "
                    "at ~0 CPU (cpu_idle) and GPUs none of its processes is on (gpu_unused), "
                    "this stretch, longest first. A job past the site's [report] "
                    "idle_allocation_seconds (600 s by default) is flagged in its summary "
                    "(idle_allocation) and in `jobmon top` and `jobmon watch`."))
    p.append(table(g, "Warnings and actions on idle jobs", [table_target(
        f'SELECT "action", "dry_run", "outcome", "idle_seconds", "reason", "actor" '
        f'FROM "{ACTION}" WHERE {CF} GROUP BY {ONE_RUN}, "cluster"')], h=8,
        decimals=0, overrides=[unit_override("idle_seconds", "s")],
        description="What `jobmon act` did to jobs idle on their allocation, where the site "
                    "turned it on: each warning, hold, requeue-hold or cancel, its outcome "
                    "and why; dry_run 1: a dry run's, nothing done (docs/actions.md)."))
    p.append(stat(g, "Jobs killed for memory", [target(
        f'SELECT count("oom_time") AS jobs, sum("oom_kills") AS processes FROM "{JOB}" '
        f'WHERE {CJ}', fmt="table")], w=8,
        description="Job runs in which the kernel's OOM killer killed a process, and how "
                    "many processes it killed (oom_kills)."))
    p.append(table(g, "Waiting and stalls by user", [table_target(
        f'SELECT mean("cpu_pressure_percent") AS cpu_psi, mean("cpu_wait_percent") AS cpu_run_queue, '
        f'mean("mem_pressure_percent") AS memory_psi, mean("io_pressure_percent") AS io_psi '
        f'FROM "{JOB}" WHERE {CJ} GROUP BY "user"')], w=16, h=8, decimals=1,
        overrides=[unit_override(n, "percent")
                   for n in ("cpu_psi", "cpu_run_queue", "memory_psi", "io_psi")],
        description="Mean over each user's jobs of the share of the run spent waiting for a "
                    "CPU (PSI, or the run queue where there is no PSI), stalled on memory and "
                    "on storage (PSI): a high share means the node, not the request, held "
                    "the job back (docs/reports.md, \"Why a job waited\")."))
    p.append(table(g, "Top wasters", [table_target(
        f'SELECT sum("idle_canonical_core_hours") AS idle_canonical_core_hours, '
        f'sum("idle_core_hours") AS idle_core_hours, sum("idle_gpu_hours") AS idle_gpu_hours, '
        f'count("wall_seconds") AS jobs, mean("cpu_efficiency_percent") AS cpu_efficiency, '
        f'mean("mem_efficiency_percent") AS mem_efficiency '
        f'FROM "{JOB}" WHERE {CJ} GROUP BY "user", "account", "cluster"')], h=9,
        sort="idle_canonical_core_hours", decimals=2,
        overrides=[unit_override("cpu_efficiency", "percent"),
                   unit_override("mem_efficiency", "percent"),
                   field_links("user", [{"title": "jobs of ${__data.fields.user}", "url":
                                         "/d/jobmon-user/jobmon-user?var-user="
                                         "${__data.fields.user:percentencode}"
                                         "&${__url_time_range}"}])],
        description="Users by idle canonical core-hours (cores and memory held but unused)."))

    p.append(row(g, "Energy"))
    for tag, label in (("user", "user"), ("account", "account"), ("cluster", "site")):
        p.append(barchart(g, f"Energy (kWh) and CO2e (kg) by {label}", [table_target(
            f'SELECT sum("energy_joules") / 3600000 AS energy_kwh, '
            f'sum("co2e_grams") / 1000 AS co2e_kg FROM "{JOB}" WHERE {CJ} AND '
            f'{in_range("energy_joules")} GROUP BY "{tag}"')],
            w=8, description="The jobs' energy where node readers run: their GPUs' counters "
                             "plus their apportioned share of their nodes' CPU package and "
                             "DRAM energy; CO2e at each node's carbon intensity "
                             "(docs/energy.md). Jobs on nodes without a reader add nothing."))

    p.append(row(g, "Shipper health"))
    p.append(timeseries(g, "Spool backlog by node", [target(
        f'SELECT last("spool_bytes") FROM "{SHIPPER}" WHERE {SF} '
        f'GROUP BY time($__interval), "host" fill(none)', alias="$tag_host")], unit="bytes",
        description="What waits in each node's spool; a rising line: the node cannot ship."))
    p.append(timeseries(g, "Points shipped per second", [target(
        f'SELECT non_negative_derivative(last("shipped_points"), 1s) FROM "{SHIPPER}" '
        f'WHERE {SF} GROUP BY time($__interval), "host" fill(none)', alias="$tag_host")],
        unit="none"))
    p.append(table(g, "Last successful write per node", [table_target(
        f'SELECT last("last_success") * 1000 AS last_success, last("spool_bytes") AS spool_bytes, '
        f'last("send_errors") AS send_errors, last("dropped_points") AS dropped_points, '
        f'last("quarantine_entries") AS quarantine_entries FROM "{SHIPPER}" WHERE {SF} '
        f'GROUP BY "host", "cluster"')], w=12, h=8, sort="last_success",
        overrides=[unit_override("last_success", "dateTimeFromNow"),
                   unit_override("spool_bytes", "bytes")],
        description="A node whose last write is old, or that is missing here, is silent: its "
                    "shipper reports every 60 s."))
    p.append(table(g, "Dropped samples by user", [table_target(
        f'SELECT last("lost_points") AS lost_points, last("lost_bytes") AS lost_bytes, '
        f'last("lost_files") AS lost_files FROM "{SHIPPER}" WHERE "reason" != \'\' '
        f'AND {match("cluster", "user")} AND $__timeFilter '
        f'GROUP BY "user", "reason", "host"')], w=12, h=8, sort="lost_points",
        overrides=[unit_override("lost_bytes", "bytes")],
        description="Points lost since each shipper's state began, by user and reason "
                    "(docs/schema.md lists the reasons)."))

    return dashboard(
        "jobmon-cluster", "jobmon: cluster overview",
        "Running jobs, efficiency, idle core- and GPU-hours, goodput, top wasters and the "
        "health of every node's shipper.", p,
        filter_vars("cluster", "account", "group", "user"), time_from="now-7d",
        links=[{"title": "node", "url": "/d/jobmon-node/jobmon-node"},
               {"title": "user", "url": "/d/jobmon-user/jobmon-user"}])
