"""HTCondor's end of the report card (jobmon.sinks.card): the wrapper's, once the job has
ended. Standard library only (the wrapper runs beside every job)."""
import os

from jobmon.sinks.card import JOB_ENV, deliver_card, site_settings, where, yes_no

JOB_AD_ATTR = "JobMonitorReportCard"     # +JobMonitorReportCard = true in a submit file


def _nothing(_msg):
    pass



def after_job(summary, job_ad, environ, warn=_nothing):
    """The HTCondor wrapper's card, once the job has ended: the job ad's
    +JobMonitorReportCard, else the job's JOBMON_CARD, against the site's [report]
    settings; "file" goes to the job's scratch directory (HTCondor brings new files there
    back with the output, where the submit file leaves transfer_output_files unset)."""
    asks = yes_no(job_ad.get(JOB_AD_ATTR))
    if asks is None:
        asks = yes_no(environ.get(JOB_ENV))
    site = site_settings(warn)
    to = where(site, asks)
    if to is None:
        return None
    notify = job_ad.get("NotifyUser")
    return deliver_card(summary, to, site, fd=2,
                        directory=environ.get("_CONDOR_SCRATCH_DIR") or os.getcwd(),
                        recipient=notify if isinstance(notify, str) and notify else None,
                        warn=warn)
