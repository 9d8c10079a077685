"""What Slurm itself recorded about a job, from its accounting database: `sacct --json`
(Slurm 21.08 and later), else `sacct --parsable2` with a field list checked against
`sacct --helpformat`; or pyslurm where it matches the running Slurm (sacct_pyslurm.py).

Read side only (`jobmon query`). Each Record is one allocation -- a job, an array task, a
het job component, one run of a requeued job -- in jobmon's units (seconds, bytes),
aggregated over its steps the way the figures mean: CPU summed over steps (22.05's JSON
has zeros at job level), MaxRSS the largest of any step's task (never .batch alone),
disk bytes summed. Its steps are Step records. sacct_compare.compare() sets a Record
beside jobmon's summary of the same run.

Facts this relies on (Slurm 22.05, tests/fixtures/slurm/): JSON loses a plain non-zero
exit code (the text ExitCode has it: taken from there when the JSON says SUCCESS but the
state FAILED); JSON step microseconds are not normalised; text rows can span lines
(SubmitLine); just after a job ends sacct may return a placeholder record (JobName
`allocation`, UID 0, no partition): such a Record has partial=True.
"""
import json
import os
import re
import shutil
import subprocess

from jobmon.accounting import AccountingError, Source
from .sacct_json import records_from_json
from .sacct_parse import exit_status, mem_bytes, seconds, tres_dict, when
from .sacct_records import FIELDS, STEP_FIELDS, Record, Step, aggregate, number_runs  # noqa: F401

# the text fields asked for (each kept only if this sacct's --helpformat lists it)
TEXT_FIELDS = ("JobID", "JobIDRaw", "JobName", "User", "UID", "Account", "Cluster",
               "Partition", "QOS", "NodeList", "NNodes", "AllocCPUS", "ReqCPUS", "ReqMem",
               "AllocTRES", "State", "ExitCode", "Submit", "Start", "End", "ElapsedRaw",
               "Timelimit", "TotalCPU", "UserCPU", "SystemCPU", "MaxRSS", "MaxRSSNode",
               "MaxRSSTask", "MaxVMSize", "NTasks", "TRESUsageInTot", "TRESUsageOutTot")
DELIMITER = "\x1f"   # no job name or command line holds it; "|" they may


# --- sacct --parsable2 -------------------------------------------------------------------

def split_rows(text, nfields):
    """Rows of `sacct -P -n --delimiter=DELIMITER` output; a value may hold newlines (the
    last one, SubmitLine, often does), a row's first (JobID) never."""
    parts = text.rstrip("\n").split(DELIMITER)
    rows, row = [], []
    for i, part in enumerate(parts):
        if i and i % (nfields - 1) == 0 and i < len(parts) - 1:
            last, _, first = part.rpartition("\n")
            row.append(last)
            rows.append(row)
            row = [first]
        else:
            row.append(part)
    if row and len(row) == nfields:
        rows.append(row)
    return rows


def records_from_text(text, fields):
    """Records from `sacct -P -n --noconvert --delimiter=DELIMITER -o FIELDS` text."""
    latest, order = {}, []    # JobID -> its last record so far (sacct -D: one per run)
    for row in split_rows(text, len(fields)):
        v = dict(zip(fields, row))
        jid = v.get("JobID", "")
        if "." in jid:                       # a step: 12345.batch, 12345_7.0, 12345+1.extern
            parent, step_id = jid.split(".", 1)
            rec = latest.get(parent)
            if rec is not None:
                rec.steps.append(step_from_text(step_id, v))
            continue
        latest[jid] = rec = record_from_text(v)
        order.append(rec)
    return number_runs([aggregate(r) for r in order])


def step_from_text(step_id, v):
    code, sig = exit_status(v.get("ExitCode"))
    user, system = seconds(v.get("UserCPU")), seconds(v.get("SystemCPU"))
    task = v.get("MaxRSSTask")
    return Step(step=step_id, name=v.get("JobName"), state=(v.get("State") or "").split(" ")[0]
                or None, exit_code=code, signal=sig, start_time=when(v.get("Start")),
                end_time=when(v.get("End")), elapsed_seconds=_int(v.get("ElapsedRaw")),
                cpu_user_seconds=user, cpu_system_seconds=system,
                cpu_seconds=seconds(v.get("TotalCPU")), max_rss_bytes=mem_bytes(v.get("MaxRSS")),
                max_rss_task=_int(task), max_rss_node=v.get("MaxRSSNode") or None,
                max_vmsize_bytes=mem_bytes(v.get("MaxVMSize")),
                read_bytes=tres_dict(v.get("TRESUsageInTot")).get("fs/disk"),
                write_bytes=tres_dict(v.get("TRESUsageOutTot")).get("fs/disk"),
                ntasks=_int(v.get("NTasks")), nodes=v.get("NodeList") or None)


def record_from_text(v):
    state = v.get("State") or ""
    code, sig = exit_status(v.get("ExitCode"))
    alloc = tres_dict(v.get("AllocTRES"))
    jid, raw = v.get("JobID", ""), v.get("JobIDRaw", "")
    r = Record(job=jid, job_id_raw=raw, name=v.get("JobName"), user=v.get("User") or None,
               account=v.get("Account") or None, partition=v.get("Partition") or None,
               qos=v.get("QOS") or None, cluster=v.get("Cluster") or None,
               nodes=v.get("NodeList") or None, num_nodes=_int(v.get("NNodes")),
               state=state.split(" ")[0] or None, exit_code=code, signal=sig,
               submit_time=when(v.get("Submit")), start_time=when(v.get("Start")),
               end_time=when(v.get("End")), elapsed_seconds=_int(v.get("ElapsedRaw")),
               timelimit_seconds=seconds(v.get("Timelimit")), req_cpus=_int(v.get("ReqCPUS")),
               alloc_cpus=_int(v.get("AllocCPUS")), req_mem_bytes=mem_bytes(v.get("ReqMem")),
               alloc_mem_bytes=alloc.get("mem"), alloc_gpus=alloc.get("gres/gpu"),
               alloc_tres=alloc or None, source="sacct-text",
               cpu_user_seconds=seconds(v.get("UserCPU")),
               cpu_system_seconds=seconds(v.get("SystemCPU")),
               cpu_seconds=seconds(v.get("TotalCPU")))
    m = re.fullmatch(r"(\d+)_(\d+)", jid)
    if m:
        r.array_job_id, r.array_task_id = m.groups()
    m = re.fullmatch(r"(\d+)\+(\d+)", jid)
    if m:
        r.het_job_id, r.het_job_offset = m.groups()
    if state.startswith("CANCELLED by "):
        r.cancelled_by = state.split()[-1]
    r.partial = r.name == "allocation" and not r.partition and v.get("UID") == "0"
    return r


def _int(v):
    return int(v) if v and v.strip().lstrip("-").isdigit() else None


# --- the source ----------------------------------------------------------------------------

class SacctSource(Source):
    """lookup(job_id) through sacct: --json where this sacct has it, else the text."""
    name = "sacct"

    def __init__(self, sacct="sacct", env=None, mode="auto", timeout=60):
        self.sacct, self.env, self.mode, self.timeout = sacct, env, mode, timeout
        self._fields = None

    def _run(self, *args):
        try:
            r = subprocess.run([self.sacct] + list(args), capture_output=True, text=True,
                               env=self.env, timeout=self.timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise AccountingError(f"{self.sacct}: {e}")
        if r.returncode:
            raise AccountingError(f"{self.sacct} {' '.join(args)}: {r.stderr.strip()[:300]}")
        return r.stdout

    def _exit_codes(self, records, job_id):
        """22.05's JSON says SUCCESS, 0 for a job that exited non-zero; its text ExitCode
        has the code."""
        lost = [r for r in records if r.state == "FAILED" and r.exit_code == 0]
        if not lost:
            return records
        try:
            text = self._run("-P", "-n", "-D", "-X", f"--delimiter={DELIMITER}",
                             "-o", "JobIDRaw,Start,ExitCode", "-j", job_id)
        except AccountingError:
            text = ""
        codes = {}
        for row in split_rows(text, 3):
            codes[(row[0], when(row[1]))] = exit_status(row[2])
        for r in lost:
            r.exit_code, r.signal = codes.get((r.job_id_raw, r.start_time), (None, None))
        return records

    def fields(self):
        """TEXT_FIELDS that this sacct knows (--helpformat), in that order."""
        if self._fields is None:
            known = set(self._run("--helpformat").split())
            self._fields = [f for f in TEXT_FIELDS if f in known]
            if "JobID" not in self._fields:
                raise AccountingError(f"{self.sacct} --helpformat lists no JobID")
        return self._fields

    # job ids per sacct call of lookup_many (its command line stays a few KiB)
    MANY = 400

    def lookup(self, job_id):
        job_id = str(job_id).strip()
        if not re.fullmatch(r"\d+([_+]\d+)?", job_id):
            raise AccountingError(f"not a Slurm job id: {job_id!r} (12345, 12345_7, 12345+1)")
        return self._records(job_id)

    def _records(self, ids):
        """Every record of the jobs `ids` (comma-separated) names."""
        if self.mode in ("auto", "json"):
            try:
                doc = json.loads(self._run("--json", "-D", "-j", ids))
                return self._exit_codes(records_from_json(doc), ids)
            except (AccountingError, ValueError):
                if self.mode == "json":
                    raise
        fields = self.fields()
        text = self._run("-P", "-n", "-D", "--noconvert", f"--delimiter={DELIMITER}",
                         "-o", ",".join(fields), "-j", ids)
        return records_from_text(text, fields)

    def lookup_many(self, job_ids):
        """One sacct call per MANY ids; an id that is not Slurm's has no records."""
        ids = sorted({str(j).strip() for j in job_ids})
        out = {j: [] for j in ids}
        valid = [j for j in ids if re.fullmatch(r"\d+([_+]\d+)?", j)]
        for i in range(0, len(valid), self.MANY):
            for r in self._records(",".join(valid[i:i + self.MANY])):
                if r.job in out:
                    out[r.job].append(r)
        return out


def source(cfg=None, env=None):
    """The site's Slurm accounting source (slurm.accounting: auto and sacct are sacct;
    pyslurm where it matches the running Slurm), or None where there is none."""
    settings = cfg["slurm"] if cfg is not None else {"sacct": "sacct", "accounting": "auto"}
    if settings["accounting"] == "pyslurm":
        from . import sacct_pyslurm
        return sacct_pyslurm.source(settings["sacct"], env)
    exe = shutil.which(settings["sacct"], path=(env or os.environ).get("PATH"))
    return SacctSource(exe, env) if exe else None
