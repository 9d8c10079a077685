"""The node reader's GPUs: every GPU (and MIG instance) as NVML describes it, in the shape
the jobs read (DIR/gpus.json; the contract is probes/gpu_published.py, docs/gpu.md).

`source` answers the calls of probes.nvml.Nvml: NVML itself, or a recording
(recorded.RecordedSource). A reading NVML refuses is published as null with NVML's
message under "errors"; the job side leaves such a field out, it never guesses it.
"""
import json
import logging
import os
import time

from ..probes.gpu_published import FILE, FORMAT
from ..probes.nvml import NO_INSTANCE, NvmlError

log = logging.getLogger("jobmon.node")
GIVE_UP_AFTER = 30     # failed refreshes in a row: exit, to be restarted with NVML anew


class SourceError(Exception):
    """A source that cannot go on: the reader exits, for its service to restart it."""


def _try(errors, field, call, *args):
    try:
        return call(*args)
    except NvmlError as e:
        errors[field] = str(e)
        return None


def namespaces(pid, proc="/proc"):
    """(pids of the process in each PID namespace from the reader's inwards, start time in
    clock ticks) from /proc/<pid>/status and stat, which anyone may read; None if unreadable."""
    try:
        with open(f"{proc}/{pid}/status", "rb") as f:
            status = f.read()
        i = status.index(b"\nNSpid:")
        nspid = [int(x) for x in status[i + 7:status.index(b"\n", i + 1)].split()]
        if len(nspid) == 1:
            return nspid, None
        with open(f"{proc}/{pid}/stat", "rb") as f:
            stat = f.read()
        return nspid, int(stat[stat.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def processes(plist, proc="/proc", seen=None):
    """Published processes: pid (the reader's namespace), GPU memory (None: NVML could not
    tell), MIG GPU/compute instance ids; for processes in nested PID namespaces their pid
    in each namespace and start time, so a sampler in such a namespace finds its own.
    seen: {pid: namespaces} of this refresh (a process on several GPUs is read once)."""
    seen = {} if seen is None else seen
    out = []
    for pid, used, gi, ci in plist:
        p = {"pid": pid, "mem": used}
        if gi != NO_INSTANCE:
            p["gi"], p["ci"] = gi, ci
        if pid not in seen:
            seen[pid] = namespaces(pid, proc)
        ns = seen[pid]
        if ns is None:
            p["ns_unknown"] = True
        elif len(ns[0]) > 1:
            p["nspid"], p["start"] = ns
        out.append(p)
    return out


def _memory_and_procs(source, h, out, errors, proc, seen):
    mem = _try(errors, "memory", source.memory, h)
    out["mem_total"], out["mem_used"] = mem if mem else (None, None)
    plist = _try(errors, "processes", source.process_list, h)
    out["procs"] = None if plist is None else processes(plist, proc, seen)


def instance(source, mh, proc="/proc", seen=None):
    """A MIG device (compute instance): memory and processes are per instance in NVML;
    utilization and energy are not (NVML refuses them on MIG: recorded under errors)."""
    errors = {}
    gi, ci = source.instance_ids(mh)
    m = {"uuid": source.uuid(mh), "gi": gi, "ci": ci}
    _memory_and_procs(source, mh, m, errors, proc, seen)
    m["util"] = _try(errors, "utilization", source.utilization, mh)
    if errors:
        m["errors"] = errors
    return m


def gpu(source, index, last_energy, proc="/proc", clock=time.monotonic, seen=None):
    """One GPU. last_energy: {uuid: [time, mJ]} of the previous refresh (updated)."""
    h = source.handle(index)
    errors = {}
    g = {"index": index, "uuid": source.uuid(h)}
    g["minor"] = _try(errors, "minor", source.minor, h)
    g["name"] = _try(errors, "name", source.name, h)
    g["pci"] = _try(errors, "pci", source.pci_bus_id, h)
    g["mig"] = bool(_try(errors, "mig", source.mig_enabled, h))
    g["util"] = _try(errors, "utilization", source.utilization, h)
    if g["mig"]:
        # per-instance process lists: the whole GPU's list needs root in MIG mode
        mem = _try(errors, "memory", source.memory, h)
        g["mem_total"], g["mem_used"] = mem if mem else (None, None)
        handles = _try(errors, "instances", source.mig_handles, h)
        g["instances"] = [instance(source, mh, proc, seen) for mh in handles or ()]
        g["procs"] = None if handles is None or any(m["procs"] is None for m in g["instances"]) \
            else [p for m in g["instances"] for p in m["procs"]]
    else:
        _memory_and_procs(source, h, g, errors, proc, seen)
    t = clock()
    mj = _try(errors, "energy", source.energy_mj, h)
    if mj is not None:
        g["energy"] = [round((t + clock()) / 2, 6), mj]   # when it was read, for interpolation
        g["energy_prev"] = last_energy.get(g["uuid"])
        last_energy[g["uuid"]] = g["energy"]
    if errors:
        g["errors"] = errors
    return g


def snapshot(source, last_energy, period, seq, proc="/proc", clock=time.monotonic):
    """Everything a refresh publishes. Only a failure to list the GPUs raises."""
    t = clock()
    wall = time.time()
    seen = {}
    gpus = [gpu(source, i, last_energy, proc, clock, seen) for i in range(source.count())]
    st = os.stat(f"{proc}/self/ns/pid")
    return {"format": FORMAT, "host": os.uname().nodename, "seq": seq, "mono": round(t, 6),
            "time": round(wall, 3), "period": period, "took": round(clock() - t, 6),
            "pidns": [st.st_dev, st.st_ino], "driver": _try({}, "driver", source.driver_version),
            "gpus": gpus}


class GpuSource:
    """The node reader's GPU part. A refresh that fails as a whole (NVML lost the GPUs)
    publishes nothing: the file ages, and after two periods the jobs stop using it (they
    never get guesses)."""

    file = FILE

    def __init__(self, source, period, proc="/proc", clock=time.monotonic):
        self.source, self.period, self.proc, self.clock = source, period, proc, clock
        self.last_energy = {}
        self.failures = 0

    def refresh(self, seq):
        """The file's bytes: JSON lines, the header and one line per GPU (a job parses its
        own only); None when NVML failed as a whole (logged)."""
        try:
            snap = snapshot(self.source, self.last_energy, self.period, seq, self.proc,
                            self.clock)
        except NvmlError as e:
            self.failures += 1
            if self.failures == 1 or self.failures % 60 == 0:
                log.error("NVML failed (%s); nothing published, jobs stop using the "
                          "last snapshot after two periods", e)
            if self.failures >= GIVE_UP_AFTER:
                raise SourceError(f"NVML failed {self.failures} times in a row; exiting so "
                                  "that the service starts a reader with NVML anew")
            return None
        if self.failures:
            log.info("NVML answers again after %d failed refreshes", self.failures)
            self.failures = 0
        head = {k: v for k, v in snap.items() if k != "gpus"}
        return "".join(json.dumps(x, separators=(",", ":")) + "\n"
                       for x in [head] + snap["gpus"]).encode()

    def close(self):
        self.source.close()
