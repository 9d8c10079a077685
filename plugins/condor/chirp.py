"""Chirp's delayed job-attribute updates, sent from inside a job. Standard library only.

The starter runs a Chirp server for each job and names it in the file
$_CONDOR_CHIRP_CONFIG ("HOST PORT COOKIE"). After the line `cookie COOKIE`, a line
`set_job_attr_delayed NAME EXPR` records a job attribute -- NAME must match the starter's
CHIRP_DELAYED_UPDATE_PREFIX, `Chirp*` by default -- which the starter hands to the shadow
with its next update, at the latest the one it sends when the job exits, so the shadow's
policy sees it when it decides how the job ends. Each request is one line of words
(backslash escapes a backslash or white space in a word); each answer one line, "0" for
done. Delayed updates are on unless the pool sets ENABLE_CHIRP_DELAYED = false or the job
WantDelayedUpdates = false.
"""
import os
import socket

CONFIG_ENV = "_CONDOR_CHIRP_CONFIG"
EXPR_MAX = 993      # the longest expression the starter takes


def word(text):
    """text as one word of a Chirp request."""
    out = []
    for c in text:
        out.append("\\" + c if c in "\\ \t\n\r" else c)
    return "".join(out)


def classad_string(text):
    """A ClassAd string literal of text."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def set_delayed(attrs, environ=os.environ, timeout=2.0):
    """Send {name: ClassAd expression text} as delayed updates. True when the starter took
    every one; False when there is no Chirp server, it refused one, or it did not answer."""
    path = environ.get(CONFIG_ENV)
    if not path or any(len(v) > EXPR_MAX for v in attrs.values()):
        return False
    try:
        with open(path) as f:
            host, port, cookie = f.read().split()[:3]
        with socket.create_connection((host, int(port)), timeout) as s, \
                s.makefile("rwb") as stream:
            for line in [f"cookie {cookie}"] + [f"set_job_attr_delayed {word(n)} {word(v)}"
                                                for n, v in attrs.items()]:
                stream.write(line.encode() + b"\n")
                stream.flush()
                if stream.readline().strip() != b"0":
                    return False
        return True
    except (OSError, ValueError):
        return False
