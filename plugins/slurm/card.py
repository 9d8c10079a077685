"""Slurm's end of the report card (jobmon.sinks.card): the sampler's, once the Epilog
said the job is over, and what a job's comment asks. Standard library only (the sampler
runs beside every job)."""
import re

from jobmon.sinks.card import deliver_card, site_settings, where, yes_no

COMMENT_WORD = "jobmon-card"             # sbatch --comment "jobmon-card" (=no to refuse)


def _nothing(_msg):
    pass



def comment_asks(comment, word=COMMENT_WORD):
    """What a Slurm job comment says of `word`: "jobmon-card" or "jobmon-card=yes" True,
    "jobmon-card=no" False, else None. Words are split on spaces, commas, semicolons."""
    for text in re.split(r"[\s,;]+", comment or ""):
        name, _, value = text.partition("=")
        if name.lower() == word:
            return True if not value else yes_no(value)
    return None


def after_job(summaries, environ, warn=_nothing):
    """The Slurm sampler's card (as the job's user, after the Epilog said the job is
    over), for the last run it sampled: the job's comment (SLURM_JOB_COMMENT, which the
    Prolog's environment carries) against the site's settings. The sampler cannot reach
    the job's stderr: "stderr" is taken as "file", in the job's working directory
    (SLURM_JOB_WORK_DIR, where slurm-%j.out goes by default) unless card_dir is set."""
    if not summaries:
        return None
    site = site_settings(warn)
    to = where(site, comment_asks(environ.get("SLURM_JOB_COMMENT")))
    if to is None:
        return None
    return deliver_card(summaries[-1], "file" if to == "stderr" else to, site,
                        directory=environ.get("SLURM_JOB_WORK_DIR"),
                        recipient=environ.get("SLURM_JOB_USER"), warn=warn)
