"""A schedd for the tests (no HTCondor daemon can run here): the real htcondor2 bindings
are used as they are, down to the one function of each call that would reach the schedd
over the network (htcondor2._schedd._schedd_query, _schedd_act_on_job_constraint). Those
are recorded, with exactly the arguments the bindings give them, and answered from the
job ads this schedd holds: the constraint evaluated by classad2 against each ad, as a
schedd evaluates it; a hold sets the ad's JobStatus, HoldReason, HoldReasonCode (1,
UserRequest) and HoldReasonSubCode as condor_hold's does (fixtures: 3.1 of the real
pool's history, held "via condor_hold (by user alice)", code 1, subcode 0).

The reply of an action is the ClassAd the C layer returns (result_total_0..5 for error,
success, not found, bad status, already done, permission denied; TotalJobAds,
ActionResult), which htcondor2's Schedd.act turns into its TotalSuccess... ad."""
import classad2
import htcondor2
from htcondor2 import _schedd

ADDRESS = "<127.0.0.1:9618?addrs=127.0.0.1-9618&alias=ap01.example.org>"
VERSION = "$CondorVersion: 25.14.1 2026-09-24 BuildID: UW_Python_Wheel_Build $"
HOLD = 1                # htcondor2.JobAction.Hold as the C layer gets it (JA_HOLD_JOBS)


def job_ad(text, **attrs):
    """A job ad from its old-syntax text (a starter's .job.ad), as the schedd's queue
    holds it while the job runs."""
    ad = classad2.parseOne(text, classad2.ParserType.Old)
    ad["JobStatus"] = 2
    for k, v in attrs.items():
        ad[k] = v
    return ad


class RecordedSchedd:
    def __init__(self, monkeypatch, ads):
        self.ads = list(ads)
        self.calls = []
        monkeypatch.setattr(_schedd, "_schedd_query", self._query)
        monkeypatch.setattr(_schedd, "_schedd_act_on_job_constraint", self._act)
        self.schedd = htcondor2.Schedd(classad2.ClassAd({"MyAddress": ADDRESS,
                                                         "CondorVersion": VERSION}))

    def _matching(self, constraint):
        expr = classad2.ExprTree(constraint)
        return [ad for ad in self.ads if expr.eval(ad) is True]

    def _query(self, addr, constraint, projection, limit, opts):
        self.calls.append(("query", addr, constraint, list(projection), limit, opts))
        out = []
        for ad in self._matching(constraint):
            out.append(classad2.ClassAd({k: ad.eval(k) for k in projection if k in ad})
                       if projection else ad)
        return out

    def _act(self, addr, constraint, action, reason_string, reason_code):
        self.calls.append(("act", addr, constraint, action, reason_string, reason_code))
        matched = [ad for ad in self._matching(constraint) if ad.eval("JobStatus") == 2]
        for ad in matched:
            if action == HOLD:
                ad["JobStatus"] = 5
                ad["HoldReason"] = reason_string or "via condor_hold (by user root)"
                ad["HoldReasonCode"] = 1
                ad["HoldReasonSubCode"] = int(reason_code) if str(reason_code).isdigit() else 0
        n = len(matched)
        return classad2.ClassAd({"result_total_0": 0, "result_total_1": n,
                                 "result_total_2": 0 if n else 1, "result_total_3": 0,
                                 "result_total_4": 0, "result_total_5": 0,
                                 "TotalJobAds": n, "ActionResult": n})

    def acts(self):
        return [c for c in self.calls if c[0] == "act"]
