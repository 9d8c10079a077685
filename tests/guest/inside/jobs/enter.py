"""Start a command in a cgroup: python3 enter.py CGROUP OUT -- ARGV...

Moves itself into CGROUP and execs ARGV there (as a scheduler's daemon places a job's first
process). OUT gets the CPU it used before the move (its Python start-up), which the
cgroup never sees but its parent's wait4 does; everything after, the exec included, is
in both. Never a preexec_fn: a child forked from the big pytest process and running
Python before exec pays copy-on-write faults that neither side can attribute.
"""
import os
import resource
import sys

cgroup, out, sep, argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
assert sep == "--" and argv
ru = resource.getrusage(resource.RUSAGE_SELF)
with open(out, "w") as f:
    f.write(repr(ru.ru_utime + ru.ru_stime))
with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
    f.write("0")
os.execvp(argv[0], argv)
