"""`jobmon doctor`: check a node end to end, one line per check (ok / warn / fail) with
the fix. Run as root on an execute or compute node (it runs jobmon's interpreter as an
unprivileged user and reads the shipper's state), outside any job.

The checks that hold for every node are in site.py (the site file, the store, the spool
and state directories, the shipper, how jobs would be measured, the GPU reader); each
scheduler's own (its daemons' knobs as they see them, its entry points' interpreter, where
its warnings go: entry_points.py) are in its plugin's doctor module, run through its
object (jobmon.schedulers).
A scheduler's checks run where it runs jobs (its execute daemon is running, or the doctor
runs inside one of its jobs), or when asked for: never because its tools or a
configuration file are here (a node may keep another scheduler's leftovers;
schedulers_here.py). check.py: a check's answer and the node under check; checkup.py:
every check, in order.
"""
from .check import FAIL, OK, WARN, Check, Node
from .checkup import run
from .entry_points import WARNINGS_ELSEWHERE, interpreter, syslog_receives, warnings_to
from .schedulers_here import (DAEMONS, JOB_ENV, SCHEDULERS, found, running, scheduler_line,
                              schedulers)

__all__ = ("OK", "WARN", "FAIL", "Check", "Node", "run", "SCHEDULERS", "DAEMONS", "JOB_ENV",
           "running", "found", "schedulers", "scheduler_line", "interpreter",
           "syslog_receives", "WARNINGS_ELSEWHERE", "warnings_to")
