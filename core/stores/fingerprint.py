"""What a run ran, as a hash: never the text (docs/schema.md, "command_hash",
"script_hash"). Two runs of one command line, or one job script, share the hash, so
`jobmon query JOB --like` finds a user's earlier runs of it. Standard library only: the
per-job path computes these.

  command_hash  the command line: `jobmon run`'s argv; a wrapped job's Cmd and Arguments
                (the job ad's: the argv its starter gives names the job's scratch copy);
                a batch job without a batch script: its first task's
  script_hash   the job script's content where the scheduler keeps it (its object's
                keeps_script): the node daemon's copy of the batch script (its plugin
                says where)
"""
try:   # the built-in SHA-256 alone: 0.45 ms to import, against hashlib's 3 ms (OpenSSL)
    from _sha2 import sha256            # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256      # 3.9 - 3.11
    except ImportError:
        from hashlib import sha256

CHARS = 16             # hex characters kept: 64 bits, no collision among a user's runs
MAX_SCRIPT_BYTES = 64 << 20   # a "script" larger than this is hashed by its first bytes
KEYS = ("script_hash", "command_hash")   # the one --like matches first, then the other


def digest(parts):
    """The hash of a list of strings (an argv): each part and a NUL, so ["a b"] and
    ["a", "b"] differ."""
    h = sha256()
    for p in parts:
        h.update(str(p).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:CHARS]


def file_digest(path):
    """The hash of a file's content, or None where it cannot be read."""
    h = sha256()
    left = MAX_SCRIPT_BYTES
    try:
        with open(path, "rb") as f:
            while left > 0:
                chunk = f.read(min(1 << 16, left))
                if not chunk:
                    break
                h.update(chunk)
                left -= len(chunk)
    except OSError:
        return None
    return h.hexdigest()[:CHARS]


def of(record):
    """{"script_hash", "command_hash"} of a stored record (its job tags, else its
    summary's), values None where the run has none."""
    tags = dict((record.get("summary") or {}).get("tags") or {}, **(record.get("tags") or {}))
    return {k: tags.get(k) if isinstance(tags.get(k), str) and tags.get(k) else None
            for k in KEYS}
