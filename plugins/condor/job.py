"""HTCondor: identify a job from its job and machine ads (USER_JOB_WRAPPER entry).

The starter writes both ads into the scratch directory at job start and names them in
`_CONDOR_JOB_AD` and `_CONDOR_MACHINE_AD`; they are read here with the standard library
(classad_text), never with the classad2 bindings, whose ~15 MiB would be charged to the job.
"""
import os

from .. import Identity
from . import classad_text
from .settings import QUALIFIER_TAGS

SCHEDULER = "htcondor"
# job ad attributes copied into the tags, under their own names
JOB_ATTRS = ("GlobalJobId", "Owner", "AccountingGroup", "AcctGroup", "AcctGroupUser",
             "JobBatchName", "DAGNodeName", "DAGManJobId", "JobUniverse",
             "RequestCpus", "RequestMemory", "RequestDisk", "RequestGPUs",
             "CpusProvisioned", "MemoryProvisioned", "DiskProvisioned", "GPUsProvisioned")
# machine ad attributes of a glidein (a pilot's startd), and where its payloads ran
GLIDEIN_ATTRS = ("GLIDEIN_Site", "GLIDEIN_ResourceName", "GLIDEIN_Name", "GLIDEIN_Schedd",
                 "GLIDEIN_ClusterId", "GLIDEIN_ProcId", "GLIDEIN_SiteWMS_JobId")
# a machine ad attribute a pilot may advertise (STARTD_ATTRS): the job id of its own record
PILOT_ATTR = "JobMonitorPilot"


def detect(environ):
    return bool(environ.get("_CONDOR_JOB_AD"))


def identify(environ):
    job_ad, machine_ad = read_ads(environ)
    return identity(job_ad, machine_ad, environ)


def read_ads(environ):
    """(job ad, machine ad); an ad that cannot be read is empty."""
    return _read(environ.get("_CONDOR_JOB_AD")), _read(environ.get("_CONDOR_MACHINE_AD"))


def _read(path):
    if path:
        try:
            return classad_text.read(path)
        except (OSError, ValueError):
            pass
    return classad_text.Ad()


def job_id(ad):
    """"ClusterId.ProcId", as condor_q shows it, or None."""
    cluster, proc = ad.get("ClusterId"), ad.get("ProcId")
    if _is_int(cluster) and _is_int(proc):
        return f"{cluster}.{proc}"
    gid = ad.get("GlobalJobId")   # "schedd#cluster.proc#qdate"
    if isinstance(gid, str) and gid.count("#") == 2:
        return gid.split("#")[1]
    return None


def run_number(ad):
    """This run of the job: the .job.ad is written as the run starts, when NumJobStarts
    still counts the earlier runs only, so the first run is 1."""
    n = ad.get("NumJobStarts")
    return n + 1 if _is_int(n) and n >= 0 else None


def identity(job_ad, machine_ad, environ=os.environ):
    run = run_number(job_ad)
    tags = {}
    for name in JOB_ATTRS:
        _put(tags, name, job_ad.get(name))
    gid = job_ad.get("GlobalJobId")
    if isinstance(gid, str) and "#" in gid:
        tags[QUALIFIER_TAGS[0]] = gid.split("#")[0]
    account = accounting_group(job_ad)
    if account:
        tags["account"] = account   # promoted to an InfluxDB tag (docs/schema.md)
    _put(tags, "slot", machine_ad.get("Name") or environ.get("_CONDOR_SLOT"))
    # a parallel-universe job runs one copy per node, all under its one job id: which
    _put(tags, "parallel_node", environ.get("_CONDOR_PROCNO"))
    _put(tags, "parallel_nodes", environ.get("_CONDOR_NPROCS"))
    _put(tags, "execute_host", machine_ad.get("Machine"))
    for name in GLIDEIN_ATTRS:
        _put(tags, name, machine_ad.get(name))
    _put(tags, "pilot", pilot_id(machine_ad))
    if run is not None:
        tags["run"] = str(run)
    command = command_parts(job_ad)
    if command:
        from ...stores.fingerprint import digest
        tags["command_hash"] = digest(command)
    return Identity(job_id(job_ad), scheduler=SCHEDULER, run=run, tags=tags)


def command_parts(job_ad):
    """[Cmd, Arguments] as submitted (the old syntax's Args where there is no Arguments),
    or None without a Cmd: the argv the starter gives the wrapper names the job's copy
    in its scratch directory, another path for every job."""
    cmd = job_ad.get("Cmd")
    if not isinstance(cmd, str) or not cmd:
        return None
    args = job_ad.get("Arguments")
    if not isinstance(args, str):
        args = job_ad.get("Args")
    return [cmd, args if isinstance(args, str) else ""]


def accounting_group(ad):
    """The accounting group without the user: AcctGroup, else AccountingGroup less its
    ".user" part."""
    group = ad.get("AcctGroup")
    if isinstance(group, str) and group:
        return group
    full = ad.get("AccountingGroup")
    if not isinstance(full, str) or not full:
        return None
    user = ad.get("AcctGroupUser") or ad.get("Owner")
    if isinstance(user, str) and full.endswith("." + user):
        return full[:-len(user) - 1]
    return full


def pilot_id(machine_ad):
    """The pilot a payload runs in: the id it advertises for its own record, else the
    glidein's name; None outside a pilot."""
    for name in (PILOT_ATTR, "GLIDEIN_Name"):
        v = machine_ad.get(name)
        if isinstance(v, str) and v:
            return v
    return None


def _put(tags, name, value):
    if value is None or value == "":
        return
    if isinstance(value, bool):
        value = "true" if value else "false"
    tags[name] = str(value)   # expressions (RequestMemory on many pools) keep their text


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)
