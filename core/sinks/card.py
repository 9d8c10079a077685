"""Delivering the end-of-job report card (jobmon.sinks.card_text) where the user looks.

Called once the job has ended, by each scheduler's end of it (its plugin's card.py: a
wrapper writes to the job's stderr, its own fd 2; a sampler outside the job, as the job's
user, to a file or the mail). Whether a job gets a card is the site's choice ([report]
card, card_all_jobs) and the job's (what its scheduler lets it say, else the job's
environment JOBMON_CARD).

Nothing here may harm the job: every failure is swallowed (said through `warn`), writes
and the mailer are bounded in time, and the caller's exit status is never touched.
Standard library only.
"""
import os
import re
import threading

JOB_ENV = "JOBMON_CARD"                  # the job's environment: JOBMON_CARD=1 (or 0)
WRITE_SECONDS = 5.0                      # longest wait for a write to the job's stderr
MAIL_SECONDS = 4.0                       # longest wait for the mailer (an Epilog may
                                         # wait 5 s for the sampler in all)
_DEFAULTS = {"card": "off", "card_all_jobs": False, "card_dir": "",
             "mailer": "/usr/sbin/sendmail -t"}


def _nothing(_msg):
    pass


def yes_no(value):
    """True, False, or None (not said) from a job attribute's value, an environment string
    or a comment word's value."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value)
    if isinstance(value, str) and value.strip():
        v = value.strip().strip('"').lower()
        if v in ("1", "true", "yes", "on"):
            return True
        if v in ("0", "false", "no", "off"):
            return False
    return None


def where(site, job_asks):
    """Where this job's card goes ("stderr", "file", "mail") or None. The site decides
    whether cards exist and where; the job asks for one (True), refuses one (False) or
    says nothing (None: a card only where the site gives one to every job)."""
    channel = (site or {}).get("card", "off")
    if channel == "off" or job_asks is False:
        return None
    if job_asks or (site or {}).get("card_all_jobs"):
        return channel
    return None


def site_settings(warn=_nothing):
    """The [report] section (card keys and advice thresholds); defaults where the site
    configuration cannot be read."""
    try:
        from jobmon import config
        return config.load()["report"]
    except Exception as e:
        warn(f"report card: site configuration unusable ({e})")
        try:
            from jobmon.config.report import defaults
            return defaults()
        except Exception:
            return dict(_DEFAULTS)


def compose(summary, site):
    from jobmon.sinks import card_text as card
    return card.card_text(summary, card.advice_for(summary, site or {}))


def deliver_card(summary, where, site=None, *, fd=2, directory=None, recipient=None,
                 warn=_nothing):
    """Write `summary`'s card to `where`: "stderr" (appended to `fd`), "file"
    (jobmon-card-<job>.txt in site card_dir, else `directory`), or "mail" (the site's
    mailer, to `recipient`, else the job's user). Returns what it wrote to (the fd, path or
    recipient), or None; never raises."""
    try:
        site = site if site is not None else site_settings(warn)
        text = compose(summary, site)
        if where == "stderr":
            return fd if _bounded(lambda: _write_all(fd, text.encode()), WRITE_SECONDS) else None
        if where == "file":
            return write_file(text, summary, site.get("card_dir") or directory)
        if where == "mail":
            return mail(text, summary, site.get("mailer") or _DEFAULTS["mailer"],
                        recipient or summary.get("user"))
        warn(f"report card: no such destination {where!r}")
    except Exception as e:
        warn(f"report card not delivered ({where}): {type(e).__name__}: {e}")
    return None


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def _bounded(fn, seconds):
    """fn() in a thread, waited for `seconds` at most (a stderr pipe nobody reads would
    block for ever); True when it finished without an error."""
    done = []

    def target():
        try:
            fn()
            done.append(True)
        except Exception:
            pass
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    return bool(done)


def card_path(summary, directory, nonce="", kind="card"):
    job = re.sub(r"[^A-Za-z0-9_.+-]", "_", str(summary.get("job") or "job"))
    return os.path.join(directory, f"jobmon-{kind}-{job}{nonce}.txt")


def write_file(text, summary, directory, kind="card", owner=None):
    """The card as a new file of its own in `directory`, as the calling user, readable by
    that user alone (owner: (uid, gid) it is given to first, by a caller that may: a
    warning of `jobmon act` run as root). Only a file this call created is written to
    (O_EXCL, no link followed): in a shared directory another user may have made a file
    of the card's name first, and gets nothing from it -- the card goes under a name with
    a random part."""
    if not directory:
        raise OSError(f"no directory for the {kind} (card_dir, or the job's working dir)")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for nonce in ["", *(f"-{os.urandom(8).hex()}" for _ in range(3))]:
        path = card_path(summary, directory, nonce, kind)
        try:
            fd = os.open(path, flags, 0o600)
            break
        except FileExistsError:
            continue
    else:
        raise OSError(f"no free name for the {kind} in {directory}")
    try:
        if owner is not None:
            os.fchown(fd, *owner)
        _write_all(fd, text.encode())
    except OSError:
        os.unlink(path)
        raise
    finally:
        os.close(fd)
    return path


def message(text, summary, recipient, subject=None):
    from jobmon.sinks.card_text import ending
    subject = subject or f"jobmon: job {summary.get('job') or '?'} {ending(summary)}"
    clean = lambda v: re.sub(r"[\r\n]+", " ", str(v))   # noqa: E731  (no header injection)
    return (f"To: {clean(recipient)}\nSubject: {clean(subject)}\n"
            "Auto-Submitted: auto-generated\nContent-Type: text/plain; charset=utf-8\n"
            f"\n{text}")


def mail(text, summary, mailer, recipient, subject=None):
    """Hand the card to the site's mailer (a command that reads a whole message on its
    stdin, e.g. `/usr/sbin/sendmail -t`), waited for MAIL_SECONDS at most."""
    import shlex
    import subprocess
    if not recipient:
        raise ValueError("no recipient")
    argv = shlex.split(mailer)
    if not argv:
        raise ValueError("report.mailer is empty")
    r = subprocess.run(argv, input=message(text, summary, recipient, subject).encode(),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=MAIL_SECONDS, close_fds=True, start_new_session=True)
    if r.returncode != 0:
        raise OSError(f"{argv[0]} exited with {r.returncode}")
    return recipient
