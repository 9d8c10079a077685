"""HTCondor as one object (jobmon.schedulers.Scheduler): what core asks of it, found by
the registry through jobmon.plugins.SCHEDULERS. Imports only the standard library and the
interface; each part loads its module when asked.
"""
import re

from jobmon.schedulers.interface import Scheduler, load, whole_memory

from .settings import QUALIFIER_TAGS

# an HTCondor GlobalJobId: SCHEDD#CLUSTER.PROC#QDATE
GLOBAL_ID = re.compile(r"[^#\s]+#\d+\.\d+#\d+")
_GLOBAL = re.compile(r"(?P<schedd>[^#]+)#(?P<job>\d+\.\d+)#\d+")
# HTCondor's HoldReasonCode and VacateReasonCode tables (codes below 1000 are hold codes
# in both) -> whose doing; codes in neither set: not known
_USER_CODES = {1, 3, 4, 5, 14, 15, 16, 20, 22, 25, 26, 32, 33, 34, 35, 36, 37, 43, 44, 46, 47,
               1000, 1004, 1023}
_SITE_CODES = {6, 11, 17, 18, 19, 21, 23, 24, 27, 38, 39, 40, 41, 42, 45, 48,
               1002, 1003, 1006, 1007, 1008, 1012, 1020, 1021, 1024, 1026, 1027, 1028,
               1031, 1032, 1033, 1034, 1035, 1036}
_PREEMPTION_CODES = {1010, 1011, 1013, 1014, 1015, 1016, 1018, 1019, 1029, 1030}
_FILE_CODES = {7, 8, 9, 10, 12, 13}   # a file or a transfer failed: ENOENT is the job's
_ENOENT = 2
# a GlobalJobId as a table shortens it: the schedd's first name, cluster.proc
_SHORT = re.compile(r"^([^#.]+)[^#]*#(\d+(?:\.\d+)?)#\d+$")
_OF_SCHEDD = re.compile(r"(?P<schedd>[^#]+)#(?P<job>\d+(?:\.\d+)?)")


class HTCondor(Scheduler):
    tag = "htcondor"
    name = "HTCondor"
    plugin = "jobmon.plugins.condor"
    accounting_module = "jobmon.plugins.condor.accounting.condor_history"
    compare_module = "jobmon.plugins.condor.accounting.condor_compare"
    not_yet = ("HTCondor writes a job's history when it leaves the queue; set "
               "[condor] schedd, history or event_log (docs/htcondor.md)")
    memory_figure = ("HTCondor MemoryUsage", "MemoryUsage (polled peak)",
                     "HTCondor's MemoryUsage: anon + shmem of the job's cgroup polled every 5 s "
                     "(summed RSS on procd nodes), in MB: misses peaks between polls")
    # JobStatus as a number; the states of a run not over; the end its state decides
    state_names = {1: "idle", 2: "running", 3: "removed", 4: "completed", 5: "held",
                   6: "transferring_output", 7: "suspended"}
    in_flight = ("running", "transferring_output", "suspended")
    state_ends = {"removed": ("user", "removed (condor_rm or a removal policy)")}
    # Cluster.Proc, a cluster, a GlobalJobId
    id_pattern = r"\d+(?:\.\d+)?|" + GLOBAL_ID.pattern
    id_members = (".",)                     # 4711 stands for its cluster's 4711.N too
    per_job_modules = ("jobmon.plugins.condor.wrapper", "jobmon.job.runner",
                       "jobmon.job.session", "jobmon.probes.procfs", "jobmon.probes.cgroup_v1",
                       "jobmon.probes.cgroup_v2", "jobmon.sinks.spool", "jobmon.stores.local",
                       "jobmon.plugins.condor.card", "syslog")
    job_env = "_CONDOR_JOB_AD"
    daemons = ("condor_master", "condor_startd", "condor_starter")
    actions_need = "[condor] schedd"
    action_texts = {"hold": "held: it stays in the queue, and runs again once you release it "
                            "(condor_release {id})"}
    opt_out = ("+JobMonitorActions = false in the submit file, or while it runs: "
               "condor_qedit {id} JobMonitorActions false")
    doctor_module = "jobmon.plugins.condor.doctor"
    doctor_tool = "condor_config_val"
    install_command = "jobmon-condor-setup"
    field_notes = {
        "rss_peak_bytes": "its wrapper reaps the job's processes",
        "procs_killed_at_end": "its starter kills what is left when the job's top process, the "
                               "wrapper, exits",
        "cores_requested": "RequestCpus", "cores_allocated": "CpusProvisioned",
        "mem_requested_bytes": "RequestMemory", "mem_allocated_bytes": "MemoryProvisioned",
        "gpus_requested": "RequestGPUs", "gpus_allocated": "GPUsProvisioned",
        "outcome_reason": "held (code 12.2): ..., evicted (code 1013)",
        "scheduler_state": "completed, removed, held, evicted",
        "scheduler_code": "HoldReasonCode of a held run, VacateReasonCode of an evicted one",
        "scheduler_subcode": "HoldReasonSubCode", "scheduler_user": "Owner",
        "scheduler_memory_bytes": "MemoryUsage (anon + shmem polled every 5 s)",
        "scheduler_cpu_seconds": "RemoteUserCpu + RemoteSysCpu",
        "batch": "\"batch NAME\" (JobBatchName), \"dag SCHEDD#ID\" (DAGManJobId), \"cluster "
                 "SCHEDD#4711\" (a cluster)",
    }

    # --- the site file, the stored tags, the setup -------------------------------------
    config_section = "condor"
    warnings_elsewhere = '[condor] warnings = "stderr" (into each job\'s own stderr)'
    qualifier_tags = QUALIFIER_TAGS         # the wrapper's tag, from the job's GlobalJobId
    service_user = "condor"                 # HTCondor's packages make it
    shipper_start = "the startd's cron (deploy/condor; condor_reconfig)"

    def pick(self, records, job, run):
        # a per-run source (epoch, event log) before the job's ad
        run = int(run) if str(run or "").isdigit() else None
        return self.accounting().pick(records, job, run)

    def figures(self, r):
        return [("status", r.status, ""), ("exit", _status(r.exit_code, r.signal), ""),
                ("wall time (this run)", r.wall_seconds, "s"),
                ("CPU user + system", _sum(r.cpu_user_seconds, r.cpu_system_seconds), "s"),
                ("MemoryUsage (polled peak)", r.memory_usage_bytes, "bytes"),
                ("cores requested / provisioned", _pair(r.request_cpus, r.cpus_provisioned), ""),
                ("memory requested", r.request_memory_bytes, "bytes"),
                ("memory provisioned", r.memory_provisioned_bytes, "bytes"),
                ("runs (NumJobStarts)", r.runs, "count"),
                ("hold reason", r.hold_reason, ""), ("remove reason", r.remove_reason, ""),
                ("last eviction", r.vacate_reason, "")]

    def allocation(self, r):
        return {"cores_requested": r.request_cpus, "cores_allocated": r.cpus_provisioned,
                "mem_requested_bytes": r.request_memory_bytes,
                "mem_allocated_bytes": r.memory_provisioned_bytes,
                "gpus_requested": r.request_gpus, "gpus_allocated": r.gpus_provisioned}

    def code_cause(self, code, subcode=None):
        """HoldReasonCode / VacateReasonCode (and subcode): whose doing."""
        if code in _USER_CODES or (code in _FILE_CODES and subcode == _ENOENT):
            return "user"
        if code in _SITE_CODES or code in _FILE_CODES:
            return "site"
        return "preemption" if code in _PREEMPTION_CODES else "unknown"

    def global_id(self, text):
        m = _GLOBAL.fullmatch(text)
        return (m["job"], text) if m else None

    def short_id(self, job, width):
        """A GlobalJobId as its schedd's first name and cluster.proc (`ap01#4711.0`, the name
        cut to fit: `submit-no…#4711.0`)."""
        m = _SHORT.match(job)
        if m and len(m[2]) + 3 <= width:
            name, room = m[1], width - len(m[2]) - 1
            return f"{name}#{m[2]}" if len(name) <= room else f"{name[:room - 1]}…#{m[2]}"
        return None

    def lookup_id(self, record, job=None):
        """A run's GlobalJobId, so that only its own schedd's job of that number answers."""
        job = job or record.get("job")
        gid = (record.get("tags") or {}).get("GlobalJobId")
        if isinstance(gid, str) and GLOBAL_ID.fullmatch(gid) and gid.split("#")[1] == job:
            return gid
        return job

    def qualifier(self, record):
        """The schedd a record's job id is of (the wrapper's `schedd` tag, from the job's
        GlobalJobId): two schedds' 4711.0 are two jobs."""
        return (record.get("tags") or {}).get(self.qualifier_tag) or None

    def split_qualified(self, text):
        """(job id, schedd) of `schedd#4711.0` (or `schedd#4711`); (text, None) otherwise."""
        m = _OF_SCHEDD.fullmatch(text)
        return (m["job"], m["schedd"]) if m else (text, None)

    def actions(self, cfg):
        if not cfg["condor"]["schedd"]:
            return None
        from .actions import Condor
        return Condor(name=cfg["condor"]["schedd"], allow_opt_out=cfg["actions"]["allow_opt_out"])

    def install(self, argv=None):
        # by name: setup.py reads this object, never the other way round
        return load(__package__ + ".setup").main(argv)


    # === what the read side shows of it ==================================================
    accounting_tool = "condor_history"
    instance_name = "schedd"
    id_examples = ("4711.0, 4711 (a whole cluster), SCHEDD#4711.0 or a GlobalJobId (one "
                   "schedd's)")
    memory_field = "memory_usage_bytes"
    ship_from = "HTCondor STARTD_CRON"
    _REQUEST = {"cores": lambda n: f"request_cpus = {n}",
                "memory_bytes": lambda b: "request_memory = " + whole_memory(b, (" GB", " MB")),
                "gpus": lambda n: f"request_gpus = {n}"}

    def request_line(self, resource, amount):
        """A submit file's request_* line (its "GB" and "MB" are GiB and MiB)."""
        how = self._REQUEST.get(resource)
        return how(amount) if how else None

    def slot_resources(self, tags):
        """CpusProvisioned, MemoryProvisioned (MiB), GPUsProvisioned of the job's ad (the
        wrapper copies them into its tags); the Request* ones where the Provisioned ones
        are missing."""
        from jobmon.report.canonical import Resources, number

        def first(*names):
            return next((x for x in map(number, (tags.get(n) for n in names))
                         if x is not None), None)
        cores = first("CpusProvisioned", "RequestCpus")
        if cores is None:
            return None
        mem = first("MemoryProvisioned", "RequestMemory")
        return Resources(cores=cores, memory_bytes=None if mem is None else int(mem * (1 << 20)),
                         gpus=first("GPUsProvisioned", "RequestGPUs") or 0.0)


def _status(code, sig):
    return f"signal {sig}" if sig else None if code is None else f"exit code {code}"


def _sum(a, b):
    return None if a is None and b is None else (a or 0) + (b or 0)


def _pair(a, b):
    return None if a is None and b is None else f"{'-' if a is None else a} / " \
        f"{'-' if b is None else b}"


SCHEDULER = HTCondor()
