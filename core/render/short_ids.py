"""Job ids in tables: an id longer than a table's job column is shortened there, and each
shortened one is written once in full below (`Ids.legend`), so that any table fits 80
columns however long the ids (a scheduler's global id with a long host name: 73
characters). Text only, cleaned (jobmon.printable) before it is measured."""
from .. import schedulers
from ..printable import clean

WIDTH = 16     # the widest a job id is in a table


def shorten(job, width=WIDTH):
    """`job` (cleaned) if it fits `width`, else a shorter form: the one its scheduler
    gives (its object's short_id: a global id as its instance and job id), else its head
    and tail with "…" between them."""
    job = clean(job)
    if len(job) <= width:
        return job
    for sched in schedulers.all():
        short = sched.short_id(job, width)
        if short:
            return short
    head = (width - 1) // 2
    return job[:head] + "…" + job[len(job) - (width - 1 - head):]


class Ids:
    """The ids one report shortened: each short form names one id (where two would share
    one, the later keeps its head and tail instead), and `legend` writes them in full."""

    def __init__(self, width=WIDTH):
        self.width = width
        self.full = {}        # short -> full
        self.short = {}       # full -> short

    def __call__(self, job):
        job = clean(job)
        if job in self.short:
            return self.short[job]
        s = shorten(job, self.width)
        if s != job and self.full.get(s, job) != job:     # taken by another id
            head = (self.width - 1) // 2
            s = job[:head] + "…" + job[len(job) - (self.width - 1 - head):]
        if s != job:
            self.full[s] = job
        self.short[job] = s
        return s

    def legend(self, width=80):
        """Lines naming every shortened id in full: `short  full` where that fits, else the
        short form, and the full id on a line of its own below."""
        if not self.full:
            return []
        lines = ["job ids shortened above, in full:"]
        for s, job in self.full.items():
            if 2 + len(s) + 2 + len(job) <= width:
                lines.append(f"  {s:<{self.width}}  {job}".rstrip())
            else:
                lines += [f"  {s}", f"    {job}" if 4 + len(job) <= width else job]
        return lines
