"""The user dashboard: one user's recent jobs and their efficiency, arrays and batches
summarized."""
from dashlib import (JOB, ONE_RUN, RUNS, SANE, Grid, dashboard, field_links, filter_vars, job_link,
                     match, row, stat, table, table_target, target, timeseries, unit_override)

U = match("user", "cluster", "account", "group") + " AND $__timeFilter AND " \
    + RUNS   # job runs, not their steps
JOBS = (f'SELECT "wall_seconds", "cores_allocated", "cpu_efficiency_percent", '
        f'"mem_efficiency_percent", "mem_sizing_peak_bytes", "idle_canonical_core_hours", '
        f'"exit_code", "outcome", "outcome_reason", "batch", "tags" FROM "{JOB}" WHERE {U} '
        f'GROUP BY {ONE_RUN}, "host", "cluster"')
# the batch each job belongs to, as `jobmon report` groups them (jobmon.summary.batches: a Slurm
# array, an HTCondor batch, DAG or cluster), in its summary
BATCH = "batch"


def build():
    g = Grid()
    p = [row(g, "$user")]
    p.append(stat(g, "Jobs", [target(
        f'SELECT count("wall_seconds") AS jobs, sum("used_core_hours") AS used_core_hours, '
        f'sum("idle_canonical_core_hours") AS idle_canonical_core_hours FROM "{JOB}" '
        f'WHERE {U} AND {SANE}', fmt="table")], w=12, decimals=2))
    p.append(stat(g, "Goodput / badput", [
        target(f'SELECT count("wall_seconds") AS goodput FROM "{JOB}" '
               f'WHERE "outcome" = \'goodput\' AND {U} AND {SANE}', fmt="table"),
        target(f'SELECT count("wall_seconds") AS badput FROM "{JOB}" '
               f'WHERE "outcome" = \'badput\' AND {U} AND {SANE}', ref="B", fmt="table")],
        w=12))
    p.append(timeseries(g, "Efficiency of each job (at its start)", [target(
        f'SELECT "cpu_efficiency_percent" AS cpu, "mem_efficiency_percent" AS mem '
        f'FROM "{JOB}" WHERE {U}', alias="$col")], unit="percent", points=True, w=24,
        description="One point per finished job run, at the time it started."))
    p.append(table(g, "Recent jobs", [table_target(JOBS)], h=10, sort="wall_seconds",
                   hidden=("tags",),
                   overrides=[unit_override("wall_seconds", "s"),
                              unit_override("mem_sizing_peak_bytes", "bytes"),
                              unit_override("cpu_efficiency_percent", "percent"),
                              unit_override("mem_efficiency_percent", "percent"),
                              field_links("job", job_link("${user:percentencode}", "host"))],
                   description="Click a job for its own dashboard."))
    p.append(table(g, "Arrays and batches", [table_target(JOBS)], h=8, sort="tasks",
                   transformations=[
                       {"id": "groupBy", "options": {"fields": {
                           BATCH: {"operation": "groupby", "aggregations": []},
                           "job": {"operation": "aggregate", "aggregations": ["count"]},
                           "wall_seconds": {"operation": "aggregate",
                                            "aggregations": ["mean", "max"]},
                           "cpu_efficiency_percent": {"operation": "aggregate",
                                                      "aggregations": ["mean", "min"]},
                           "mem_efficiency_percent": {"operation": "aggregate",
                                                      "aggregations": ["mean", "min"]},
                           "mem_sizing_peak_bytes": {"operation": "aggregate",
                                                     "aggregations": ["max"]},
                           "idle_canonical_core_hours": {"operation": "aggregate",
                                                         "aggregations": ["sum"]}}}},
                       {"id": "organize", "options": {"renameByName": {
                           "job (count)": "tasks"}}}],
                   description=f"Tasks of each batch (the jobs' `{BATCH}`: a Slurm array, an "
                               "HTCondor batch, DAG or cluster, as `jobmon report` groups "
                               "them), summarized: count, mean and worst efficiency, the "
                               "largest memory peak (the one that sizes a job: "
                               "docs/reports.md)."))

    return dashboard(
        "jobmon-user", "jobmon: user",
        "One user's recent jobs and their efficiency, arrays and batches summarized.", p,
        filter_vars("cluster", "user", "account", "group", single=("user",)),
        time_from="now-7d",
        links=[{"title": "cluster overview", "url": "/d/jobmon-cluster/jobmon-cluster"}])
