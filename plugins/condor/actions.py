"""HTCondor's end of `jobmon act`: the schedd's word on the jobs (one query for all of a
pass's jobs) and the hold, through the htcondor2 bindings -- loaded here, on the host
that runs `jobmon act`, never in a job.

A job is the record's only where the schedd's GlobalJobId is the one the record carries
(it names the schedd, the job and its submission: another schedd's job of the same
ClusterId.ProcId is not it). The hold's constraint repeats what was checked -- that
GlobalJobId, the Owner, JobStatus == 2 (running) and, where the site allows opting out,
that the job has not -- so the schedd itself refuses a job that changed in between.

The hold reason goes to the schedd as (text, subcode): htcondor2 25.x forwards a `reason`
only when it is such a tuple (a plain string is dropped, and the job is held "via
condor_hold"). The job opts out with `+JobMonitorActions = false` in its submit file (or
condor_qedit while it runs)."""
from jobmon.actions import ActionError, LiveJob, Scheduler

OPT_OUT_ATTR = "JobMonitorActions"
HOLD_SUBCODE = 0                 # HoldReasonSubCode of jobmon's holds (HoldReasonCode 1,
#                                  UserRequest); its HoldReason starts with "jobmon:"
RUNNING = 2                      # JobStatus
PROJECTION = ["ClusterId", "ProcId", "Owner", "JobStatus", "GlobalJobId", OPT_OUT_ATTR,
              "NotifyUser", "RemoteHost", "NumJobStarts"]


def quote(text):
    """A ClassAd string literal of `text`."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def cluster_proc(job):
    """(cluster, proc) of "4711.0", or None for any other id."""
    c, dot, p = str(job).partition(".")
    return (int(c), int(p)) if dot and c.isdigit() and p.isdigit() else None


class Condor(Scheduler):
    name = "htcondor"
    action = "hold"

    def __init__(self, schedd=None, name="local", allow_opt_out=True):
        """schedd: an htcondor2.Schedd (default: the one `name` names: "local", or a
        schedd's name the collector knows)."""
        self._schedd, self.schedd_name, self.allow_opt_out = schedd, name, allow_opt_out

    @property
    def schedd(self):
        if self._schedd is None:
            try:
                import htcondor2
                if self.schedd_name == "local":
                    self._schedd = htcondor2.Schedd()
                else:
                    self._schedd = htcondor2.Schedd(htcondor2.Collector().locate(
                        htcondor2.DaemonType.Schedd, self.schedd_name))
            except Exception as e:      # no bindings, no collector, no such schedd
                raise ActionError(f"schedd {self.schedd_name}: {e}")
        return self._schedd

    def jobs(self, records):
        ids = sorted({cp for cp in map(cluster_proc, (r.get("job") for r in records)) if cp})
        if not ids:
            return {}
        constraint = " || ".join(f"(ClusterId == {c} && ProcId == {p})" for c, p in ids)
        schedd = self.schedd
        try:
            ads = schedd.query(constraint, PROJECTION)
        except Exception as e:
            raise ActionError(f"schedd {self.schedd_name}: {e}")
        out = {}
        for ad in ads:
            live = live_job(ad)
            if live is not None:
                out[live.job] = live
        return out

    def same_job(self, record, live):
        """The schedd's job is the record's: the GlobalJobId it carries (from its job ad)."""
        return bool(live.act_id) and (record.get("tags") or {}).get("GlobalJobId") == live.act_id

    def constraint(self, live):
        """What the hold acts on: this job, still this user's, running (and not opted out)."""
        c = (f"GlobalJobId == {quote(live.act_id)} && Owner == {quote(live.user)} && "
             f"JobStatus == {RUNNING}")
        return c + (f" && {OPT_OUT_ATTR} =!= false" if self.allow_opt_out else "")

    def act(self, live, reason):
        import htcondor2
        try:
            result = self.schedd.act(htcondor2.JobAction.Hold, self.constraint(live),
                                     reason=(reason, HOLD_SUBCODE))
        except Exception as e:
            raise ActionError(f"schedd {self.schedd_name}: hold of {live.act_id}: {e}")
        done = _get(result, "TotalSuccess")
        if done != 1:
            why = ", ".join(f"{k[5:]} {_get(result, k)}" for k in (
                "TotalNotFound", "TotalBadStatus", "TotalPermissionDenied", "TotalError")
                if _get(result, k))
            raise ActionError(f"schedd {self.schedd_name} held {done or 0} jobs for "
                              f"{live.act_id} ({why or 'no answer'})")
        return f"held {live.act_id}"


def live_job(ad):
    """A LiveJob from a job ad the schedd answered with (None without an id)."""
    c, p = _get(ad, "ClusterId"), _get(ad, "ProcId")
    if not isinstance(c, int) or not isinstance(p, int):
        return None
    notify = _get(ad, "NotifyUser")
    return LiveJob(f"{c}.{p}", _get(ad, "GlobalJobId"), _get(ad, "Owner"),
                   _get(ad, "JobStatus") == RUNNING,
                   opted_out=_get(ad, OPT_OUT_ATTR) is False,
                   mail=notify if isinstance(notify, str) and notify else None,
                   host=_get(ad, "RemoteHost"), runs=_get(ad, "NumJobStarts"))


def _get(ad, attr):
    """An attribute's evaluated value (None where it is missing or undefined)."""
    try:
        v = ad.eval(attr) if hasattr(ad, "eval") else ad.get(attr)
    except Exception:
        return None
    return v if isinstance(v, (bool, int, float, str)) else None
