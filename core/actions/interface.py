"""What `jobmon act` asks of a scheduler (one module in each scheduler's plugin implements
Scheduler), the scheduler's word on a job now (LiveJob), and the error it raises."""


class ActionError(Exception):
    """The scheduler did not do what was asked (or could not be asked)."""


class LiveJob:
    """The scheduler's word on a job now: the id it is acted on by, whose job it says it
    is, whether it runs, whether it opted out, where a warning goes."""

    def __init__(self, job, act_id, user, running, opted_out=False, mail=None, **extra):
        self.job = job              # the job id as jobmon stores it (12345_7, 4711.0)
        self.act_id = act_id        # what the scheduler acts on (its raw job id, or an
        #                             id that names the instance the job is of)
        self.user = user            # the owner the scheduler names
        self.running = running
        self.opted_out = opted_out
        self.mail = mail            # the job's mail address where it gave one
        self.extra = extra

    def __repr__(self):
        return (f"LiveJob({self.job!r}, act_id={self.act_id!r}, user={self.user!r}, "
                f"running={self.running}, opted_out={self.opted_out})")


class Scheduler:
    """One scheduler's calls for `jobmon act`."""
    name = ""       # the scheduler as records name it (its tag, jobmon.schedulers)
    action = ""     # what act() does (hold, requeuehold, cancel: the scheduler's action_texts)

    def jobs(self, records):
        """{job id: LiveJob} of the jobs of `records` (store records, with their tags) the
        scheduler knows, in as few calls as it can; ActionError where it cannot be asked."""
        raise NotImplementedError

    def act(self, live, reason):
        """Do `action` to the running job `live` (and only while it is still the same
        user's and running), saying `reason` where the scheduler keeps one. Returns what
        the scheduler answered, in words; ActionError where it did not do it."""
        raise NotImplementedError
