"""HTCondor's record of one run of one job in jobmon's fields and units: what
condor_history.py reads from a schedd and history files and condor_events.py from job
event logs, and condor_compare.py sets beside jobmon's summary."""

MiB, KiB = 1 << 20, 1 << 10

# field -> (unit, meaning); every field is None when HTCondor did not record it
FIELDS = {
    "job": ("", "ClusterId.ProcId"),
    "cluster": ("", "ClusterId"), "proc": ("", "ProcId"),
    "global_job_id": ("", "GlobalJobId (schedd#cluster.proc#qdate)"),
    "schedd": ("", "the schedd, from GlobalJobId"), "owner": ("", "Owner"),
    "source": ("", "schedd (its history), queue (a job still queued), history (a history "
                   "file), epoch (the schedd's or a file's) or eventlog"),
    "run": ("", "which run this record describes, 1 = the first (jobmon's run number)"),
    "runs": ("count", "NumJobStarts: runs the job had when this was recorded"),
    "run_instance": ("", "an epoch record's RunInstanceId, as its banner gives it"),
    "status": ("", "JobStatus (idle, running, removed, completed, held, ...); for an "
                   "event-log run, how it ended (completed, evicted, held, removed)"),
    "exit_code": ("", "ExitCode (None when the job died by a signal or never exited)"),
    "signal": ("", "ExitSignal when ExitBySignal"),
    "start_time": ("s", "JobCurrentStartDate (event log: the execute event), s since epoch"),
    "end_time": ("s", "CompletionDate, s since epoch; None for a removed job"),
    "wall_seconds": ("s", "wall time of this run on the slot (LastRemoteWallClockTime)"),
    "execute_seconds": ("s", "time the job itself ran in this run, spawn to exit "
                             "(ActivationExecutionDuration / TimeExecuteUsage)"),
    "cpu_user_seconds": ("s", "RemoteUserCpu of this run"),
    "cpu_system_seconds": ("s", "RemoteSysCpu of this run"),
    "cpu_user_seconds_all_runs": ("s", "CumulativeRemoteUserCpu, every run"),
    "cpu_system_seconds_all_runs": ("s", "CumulativeRemoteSysCpu, every run"),
    "wall_seconds_all_runs": ("s", "RemoteWallClockTime, every run"),
    "badput_seconds": ("s", "slot time of the runs that did not complete the job "
                            "(evicted, held, removed): RemoteWallClockTime less the "
                            "completing run's"),
    "cpus_usage": ("cores", "CpusUsage: mean cores used"),
    "memory_usage_bytes": ("bytes", "MemoryUsage evaluated (MB): HTCondor's polled peak of "
                                    "anon+shmem (cgroup) or summed RSS (procd)"),
    "rss_bytes": ("bytes", "ResidentSetSize (KiB): largest polled RSS"),
    "image_size_bytes": ("bytes", "ImageSize (KiB)"),
    "disk_usage_bytes": ("bytes", "DiskUsage (KiB): size of the scratch directory"),
    "read_bytes": ("bytes", "BlockReadKbytes"), "write_bytes": ("bytes", "BlockWriteKbytes"),
    "request_cpus": ("count", "RequestCpus"), "request_gpus": ("count", "RequestGPUs"),
    "request_memory_bytes": ("bytes", "RequestMemory (MB) evaluated"),
    "request_disk_bytes": ("bytes", "RequestDisk (KiB) evaluated"),
    "cpus_provisioned": ("count", "CpusProvisioned"), "gpus_provisioned": ("count", "GPUsProvisioned"),
    "memory_provisioned_bytes": ("bytes", "MemoryProvisioned (MB)"),
    "disk_provisioned_bytes": ("bytes", "DiskProvisioned (KiB)"),
    "hold_reason": ("", "HoldReason, else LastHoldReason"),
    "hold_code": ("", "HoldReasonCode, else LastHoldReasonCode"),
    "hold_subcode": ("", "HoldReasonSubCode, else LastHoldReasonSubCode"),
    "remove_reason": ("", "RemoveReason"),
    "vacate_reason": ("", "VacateReason (why the last run was evicted)"),
    "vacate_code": ("", "VacateReasonCode"),
    "host": ("", "the slot it ran in (LastRemoteHost, RemoteHost, event log SlotName)"),
}
# attribute -> (field, scale); evaluated, so expressions (MemoryUsage) give numbers
NUMBERS = {"RemoteUserCpu": ("cpu_user_seconds", 1), "RemoteSysCpu": ("cpu_system_seconds", 1),
            "CumulativeRemoteUserCpu": ("cpu_user_seconds_all_runs", 1),
            "CumulativeRemoteSysCpu": ("cpu_system_seconds_all_runs", 1),
            "RemoteWallClockTime": ("wall_seconds_all_runs", 1),
            "LastRemoteWallClockTime": ("wall_seconds", 1),
            "ActivationExecutionDuration": ("execute_seconds", 1.0),
            "CpusUsage": ("cpus_usage", 1), "MemoryUsage": ("memory_usage_bytes", MiB),
            "ResidentSetSize": ("rss_bytes", KiB), "ImageSize": ("image_size_bytes", KiB),
            "DiskUsage": ("disk_usage_bytes", KiB), "BlockReadKbytes": ("read_bytes", KiB),
            "BlockWriteKbytes": ("write_bytes", KiB), "NumJobStarts": ("runs", 1),
            "RequestCpus": ("request_cpus", 1), "RequestGPUs": ("request_gpus", 1),
            "RequestMemory": ("request_memory_bytes", MiB),
            "RequestDisk": ("request_disk_bytes", KiB),
            "CpusProvisioned": ("cpus_provisioned", 1), "GPUsProvisioned": ("gpus_provisioned", 1),
            "MemoryProvisioned": ("memory_provisioned_bytes", MiB),
            "DiskProvisioned": ("disk_provisioned_bytes", KiB)}

class Record:
    """One run of one job as HTCondor recorded it (FIELDS: names, units, meanings)."""
    __slots__ = tuple(FIELDS)

    def __init__(self, **values):
        for name in FIELDS:
            setattr(self, name, values.get(name))

    def as_dict(self):
        return {name: getattr(self, name) for name in FIELDS}

    def __repr__(self):
        return f"Record({self.job!r}, run={self.run!r}, source={self.source!r})"


def wants(wanted, cluster, proc):
    """Is job cluster.proc among `wanted` ({cluster: a set of procs, or None for all})?"""
    procs = wanted.get(cluster, ())
    return procs is None or proc in procs
