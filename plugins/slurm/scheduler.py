"""Slurm as one object (jobmon.schedulers.Scheduler): what core asks of it, found by the
registry through jobmon.plugins.SCHEDULERS. Imports only the standard library and the
interface; each part loads its module when asked.
"""
import shutil

from jobmon.schedulers.interface import Scheduler, load, whole_memory


class Slurm(Scheduler):
    tag = "slurm"
    name = "Slurm"
    plugin = "jobmon.plugins.slurm"
    accounting_module = "jobmon.plugins.slurm.accounting.sacct"
    compare_module = "jobmon.plugins.slurm.accounting.sacct_compare"
    not_yet = "sacct lists a job a few seconds after it ends (slurmdbd)"
    memory_figure = ("Slurm MaxRSS", "MaxRSS (sampled, largest step)",
                     "Slurm's MaxRSS: the largest step's sample every JobAcctGatherFrequency; "
                     "anonymous memory only on cgroup v1, page cache included on v2")
    # State's first word: the states of a run not over, the ends the state alone decides
    in_flight = ("running", "suspended", "pending", "completing", "configuring", "resizing",
                 "signaling", "stage_out", "stopped", "resv_del_hold")
    state_ends = {
        "cancelled": ("user", "cancelled (scancel)"),
        "timeout": ("user", "reached its time limit"),
        "out_of_memory": ("user", "exceeded its memory"),
        "deadline": ("user", "reached its deadline"),
        "special_exit": ("user", "requeued by its own exit code (special exit)"),
        "preempted": ("preemption", "preempted"),
        "node_fail": ("site", "its node failed"),
        "boot_fail": ("site", "its node failed to boot"),
        "requeued": ("unknown", "requeued"), "requeue_fed": ("unknown", "requeued"),
        "requeue_hold": ("unknown", "requeued and held"), "revoked": ("unknown", "revoked"),
    }
    # a job, an array task (12345_7), a heterogeneous component (12345+0)
    id_pattern = r"\d+(?:[_+]\d+)?"
    id_members = ("_",)                     # 12345 stands for its array's 12345_N too
    per_job_modules = ("jobmon.plugins.slurm.sampler", "jobmon.attach.watch",
                       "jobmon.cgroups.search", "jobmon.probes.cgroup_v1",
                       "jobmon.probes.cgroup_v2", "jobmon.sinks.spool", "jobmon.stores.local",
                       "jobmon.plugins.slurm.card", "syslog")
    job_env = "SLURM_JOB_ID"
    daemons = ("slurmd", "slurmstepd")
    actions_need = "squeue"
    action_texts = {"requeuehold": "requeued and held: it goes back to the queue, and runs "
                                   "again once you release it (scontrol release {id})",
                    "cancel": "cancelled"}
    opt_out = ("sbatch --comment=jobmon-actions=no, or while it runs: scontrol update "
               "JobId={id} Comment=jobmon-actions=no")
    doctor_module = "jobmon.plugins.slurm.doctor"
    doctor_tool = "scontrol"
    install_command = "jobmon-slurm-hooks"
    field_notes = {
        "rss_peak_bytes": "its sampler watches from beside the job: sampled only",
        "mem_sizing_basis": "kernel (its sampler)",
        "leftover_procs": "when each step's tasks had exited, summed over the steps",
        "procs_killed_at_end": "it kills what is left in a step when its tasks end (seen by its "
                               "sampler; with the kernel's exit status of each, Linux 6.15 and "
                               "later, only those that died of a signal)",
        "cores_allocated": "alloc_cpus (its allocation on the node)",
        "outcome_reason": "cancelled (scancel): by alice",
        "scheduler_state": "State (COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, "
                           "PREEMPTED, NODE_FAIL, REQUEUED, ...)",
        "cancelled_by": "the user it names (sacct --json), or the uid of `CANCELLED by UID` "
                        "(its text form)",
        "scheduler_user": "User",
        "scheduler_memory_bytes": "MaxRSS (the largest step's sample every "
                                  "JobAcctGatherFrequency)",
        "scheduler_cpu_seconds": "TotalCPU",
        "batch": "\"array 12345\" (an array)",
    }

    # --- the site file, the stored tags, the setup -------------------------------------
    config_section = "slurm"
    warnings_elsewhere = ('[slurm] warnings = "/var/log/jobmon-warnings.log", a file job users '
                          'append to (touch /var/log/jobmon-warnings.log; chmod 622 '
                          '/var/log/jobmon-warnings.log)')

    def cgroup_names(self, environ):
        from . import cgroup_names as n
        return {"wanted": n.wanted(environ), "skip": n.skipper(environ),
                "choose": n.chooser(environ)}

    def figures(self, r):
        return [("state", r.state, ""), ("exit", _status(r.exit_code, r.signal), ""),
                ("Elapsed", r.elapsed_seconds, "s"), ("TotalCPU", r.cpu_seconds, "s"),
                ("MaxRSS (sampled, largest step)", r.max_rss_bytes, "bytes"),
                ("cores requested / allocated", _pair(r.req_cpus, r.alloc_cpus), ""),
                ("memory requested", r.req_mem_bytes, "bytes"),
                ("memory allocated", r.alloc_mem_bytes, "bytes"),
                ("GPUs allocated", r.alloc_gpus, "count"),
                ("disk read / written (step leaders)", _pair(r.read_bytes, r.write_bytes), ""),
                ("cancelled by uid", r.cancelled_by, "")]

    def allocation(self, r):
        return {"cores_requested": r.req_cpus, "cores_allocated": r.alloc_cpus,
                "mem_requested_bytes": r.req_mem_bytes, "mem_allocated_bytes": r.alloc_mem_bytes,
                "gpus_allocated": r.alloc_gpus}

    def actions(self, cfg):
        if not shutil.which("squeue"):
            return None
        from .actions import Slurm as Actions
        return Actions(cfg["actions"]["slurm_action"])

    def install(self, argv=None):
        # by name: install.py reads this object, never the other way round
        return load(__package__ + ".install").main(argv)


    # === what the read side shows of it ==================================================
    accounting_tool = "sacct"
    id_examples = "12345_7 (an array's task), 12345 (a whole array), 12345+0"
    memory_field = "max_rss_bytes"
    keeps_script = True                 # slurmd's copy of the batch script
    ship_from = "a Slurm epilog"
    _REQUEST = {"cores": lambda n: f"#SBATCH --cpus-per-task={n}",
                "memory_bytes": lambda b: "#SBATCH --mem=" + whole_memory(b, ("G", "M")),
                "gpus": lambda n: f"#SBATCH --gpus={n}" if n else
                "no #SBATCH --gpus or --gres=gpu"}

    def request_line(self, resource, amount):
        """A batch script's #SBATCH line."""
        how = self._REQUEST.get(resource)
        return how(amount) if how else None


def _status(code, sig):
    return f"signal {sig}" if sig else None if code is None else f"exit code {code}"


def _pair(a, b):
    return None if a is None and b is None else f"{'-' if a is None else a} / " \
        f"{'-' if b is None else b}"


SCHEDULER = Slurm()
