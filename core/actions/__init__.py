"""Acting on idle allocations (`jobmon act`, docs/actions.md): a job that has held its
GPUs or cores unused for the site's [actions] idle_seconds is warned (the report card's
channels), and if it is still idle a grace period later, acted on as its scheduler does
it (held; requeued held or cancelled) -- only where the site turned it on, only
the job's own idleness as its confirmed owner's records show it, never a job that opted
out where the site allows that, never more than the site's number an hour. Every warning
and action is a record of its own in the store (docs/schema.md, `jobmon_action`).

One pass runs centrally, beside `jobmon reconcile` (actor.py): it reads the latest sample
of every running record from the store, asks each scheduler once about the jobs that are
idle, decides (policy.py), records, warns (warning.py) and acts. The schedulers' calls are
behind one small interface, Scheduler, one module in each scheduler's plugin (its
scheduler object's actions(cfg) gives it: jobmon.schedulers).

Read/central side only: never imported by the per-job path.
"""
from .interface import ActionError, LiveJob, Scheduler

__all__ = ("ActionError", "LiveJob", "Scheduler")
