"""A job run on several nodes -- a multi-node batch job, a parallel-universe job,
a payload spread over several slots -- is one job with one record per node: a row per
node, and how evenly its work and memory were spread over them.

Imbalance is max / mean over the nodes: 1.0 when every node did alike, the number of nodes
when one node did all of it (the others sat idle: the classic `#SBATCH -N2` script that
never calls srun).
"""
from ..summary.efficiency import sizing_peak


def cpu_seconds(s):
    return (s.get("cpu_user_seconds") or 0) + (s.get("cpu_system_seconds") or 0)


def names(records):
    """A name per record: its host; where several share a host, each one's slot (its
    scheduler's slot name, slot1_2@host), else the host and its parallel node number or
    position."""
    hosts = [r.get("host") or "?" for r in records]
    out = []
    for i, (r, host) in enumerate(zip(records, hosts)):
        tags = r.get("tags") or {}
        if hosts.count(host) > 1:
            host = tags.get("slot") or f"{host} node {tags.get('parallel_node', i)}"
        out.append(str(host))
    return out


def _max_over_mean(values):
    mean = sum(values) / len(values) if values else 0
    return round(max(values) / mean, 2) if mean > 0 else None


def balance(summaries, labels):
    """{nodes, cpu_max_over_mean, memory_max_over_mean, busiest_node, busiest_node_cpu_percent}
    of a run's nodes (their summaries, in the order of `labels`)."""
    cpus = [cpu_seconds(s) for s in summaries]
    peaks = [sizing_peak(s)[0] or 0 for s in summaries]
    total = sum(cpus)
    busiest = max(range(len(cpus)), key=cpus.__getitem__) if cpus else None
    return {"nodes": len(summaries), "cpu_max_over_mean": _max_over_mean(cpus),
            "memory_max_over_mean": _max_over_mean(peaks),
            "busiest_node": labels[busiest] if total > 0 else None,
            "busiest_node_cpu_percent": round(100.0 * cpus[busiest] / total, 1)
            if total > 0 else None}


def rows(summaries, labels):
    """One row per node: its summary with its name, CPU seconds, share of the job's CPU and
    the memory peak that sizes it."""
    total = sum(cpu_seconds(s) for s in summaries)
    out = []
    for s, label in zip(summaries, labels):
        cpu = cpu_seconds(s)
        out.append(dict(s, host=label, cpu_seconds=cpu,
                        cpu_percent=round(100.0 * cpu / total, 1) if total > 0 else None,
                        memory_peak_bytes=sizing_peak(s)[0]))
    return out


def balance_rows(b):
    """The balance as (name, value, unit) rows for the report."""
    n = b["nodes"]
    return [(f"CPU, busiest node / mean (1 = even, {n} = one node did all)",
             b["cpu_max_over_mean"], ""),
            (f"memory peak, largest node / mean (1 = even, {n} = one node)",
             b["memory_max_over_mean"], ""),
            ("busiest node, its share of the CPU",
             None if b["busiest_node"] is None else
             f"{b['busiest_node']}: {b['busiest_node_cpu_percent']:g} %", "")]
