"""The node dashboard: every job on one host over time, stacked, and the node's shipper."""
from dashlib import (JOB, ONE_RUN, RUNS, SAMPLE, SHIPPER, Grid, dashboard, field_links,
                     filter_vars, job_link, match, row, stat, table, table_target, tag_var,
                     target, timeseries, unit_override)

NODE = match("host", "cluster") + " AND $__timeFilter"   # the node's shipper: no user
H = match("host", "cluster", "user") + " AND $__timeFilter"
HJ = H + " AND " + RUNS   # job points: runs, not their steps
BY_RUN = "$tag_job $tag_run $tag_user $tag_schedd"   # a legend per run
PER_JOB = f"GROUP BY time($__interval), {ONE_RUN} fill(none)"


def total(field, alias):
    """The node's total over its jobs in each interval (sum of the per-job means)."""
    return (f'SELECT sum(v) AS {alias} FROM (SELECT mean("{field}") AS v FROM "{SAMPLE}" '
            f'WHERE {H} GROUP BY time($__interval), {ONE_RUN}) '
            f'WHERE $__timeFilter GROUP BY time($__interval) fill(none)')


def build():
    g = Grid()
    p = [row(g, "Jobs on $host")]
    p.append(timeseries(g, "CPU cores by job (stacked)", [
        target(f'SELECT mean("cpu_cores") FROM "{SAMPLE}" WHERE {H} {PER_JOB}',
               alias=BY_RUN)], unit="none", stack=True, decimals=2,
        description="Each job's cores in use, stacked: their sum is the node's load from "
                    "monitored jobs. Compare with the node's core count (a threshold line: "
                    "edit the panel's thresholds to your node size)."))
    p.append(timeseries(g, "Resident memory by job (stacked)", [
        target(f'SELECT mean("mem_resident_bytes") FROM "{SAMPLE}" WHERE {H} {PER_JOB}',
               alias=BY_RUN)], unit="bytes", stack=True))
    p.append(timeseries(g, "Node total from jobs", [
        target(total("cpu_cores", "cores_used"), alias="cores used"),
        target(total("mem_resident_bytes", "resident"), ref="B", alias="resident memory")],
        unit="none", overrides=[unit_override("resident", "bytes")],
        description="Cores and resident memory used by all monitored jobs on the node."))
    p.append(stat(g, "Allocated to the jobs that started in the range", [target(
        f'SELECT sum("cores_allocated") AS cores, sum("mem_allocated_bytes") AS memory '
        f'FROM "{JOB}" WHERE {HJ}', fmt="table")], w=12,
        overrides=[unit_override("memory", "bytes")]))
    p.append(timeseries(g, "Storage writes by job (stacked)", [
        target(f'SELECT non_negative_derivative(last("write_bytes"), 1s) FROM "{SAMPLE}" '
               f'WHERE {H} {PER_JOB}', alias=BY_RUN)], unit="binBps", stack=True,
        description="Block I/O written to the node's local disks (a network or FUSE file "
                    "system's writes are not in it)."))
    p.append(timeseries(g, "Power by job (stacked)", [
        target(f'SELECT mean("power_watts") FROM "{SAMPLE}" WHERE {H} {PER_JOB}',
               alias=BY_RUN)], unit="watt", stack=True, w=12,
        description="Each job's power: its GPUs' counter plus its apportioned share of the "
                    "node's CPU package and DRAM energy (docs/energy.md); with the 'busy' "
                    "share the jobs' sum is the node's power less its own daemons' share."))
    p.append(timeseries(g, "Network by job", [
        target(f'SELECT non_negative_derivative(last("net_rx_bytes"), 1s) AS rx, '
               f'non_negative_derivative(last("net_tx_bytes"), 1s) AS tx FROM "{SAMPLE}" '
               f'WHERE {H} {PER_JOB}', alias="$col " + BY_RUN)], unit="binBps", w=12,
        description="What each job's sockets received and sent (its cgroup v2, the node "
                    "reader's BPF counters: docs/network.md); jobs on cgroup v1 or in procfs "
                    "mode have none."))
    p.append(table(g, "Jobs that started on $host", [table_target(
        f'SELECT "wall_seconds", "cpu_cores_avg", "cores_allocated", "cpu_efficiency_percent", '
        f'"mem_sizing_peak_bytes", "mem_allocated_bytes", "mem_efficiency_percent", '
        f'"exit_code", "outcome" FROM "{JOB}" WHERE {HJ} GROUP BY {ONE_RUN}')], h=9,
        sort="wall_seconds",
        overrides=[unit_override(n, "bytes")
                   for n in ("mem_sizing_peak_bytes", "mem_allocated_bytes")]
        + [unit_override("wall_seconds", "s"),
           field_links("job", job_link())],
        description="Click a job for its own dashboard."))

    p.append(row(g, "Shipper on $host"))
    p.append(timeseries(g, "Spool backlog", [target(
        f'SELECT last("spool_bytes") AS spool_bytes FROM "{SHIPPER}" WHERE "reason" = \'\' '
        f'AND {NODE} GROUP BY time($__interval) fill(none)')], unit="bytes"))
    p.append(stat(g, "Last successful write", [target(
        f'SELECT last("last_success") * 1000 AS last_success FROM "{SHIPPER}" '
        f'WHERE "reason" = \'\' AND {NODE}', fmt="table")], unit="dateTimeFromNow", w=12))

    variables = filter_vars("cluster", "host", "user", single=("host",))
    [at] = [k for k, v in enumerate(variables) if v["name"] == "host"]
    variables[at] = tag_var("host", where=[match("cluster")], measurement=SAMPLE, multi=False)
    return dashboard(
        "jobmon-node", "jobmon: node",
        "All monitored jobs on one host over time, stacked, and that node's shipper.",
        p, variables, time_from="now-24h",
        links=[{"title": "cluster overview", "url": "/d/jobmon-cluster/jobmon-cluster"}])
