"""The read service's protocol: one JSON object per line, both ways.

  server: {"service": "jobmon", "version": 1, "nonce": N}     (nonce: TCP only)
  client: {} on the Unix socket, {"munge": CREDENTIAL} over TCP (the credential's
          payload is N)
  server: {"user": NAME, "reads": "own jobs"}  or  {"error": ..., "kind": "refused"}
  client: {"op": OPERATION, "args": {...}}     (as many as it likes)
  server: {"result": ...}  or  {"error": ..., "kind": "bad-request" | "not-found" | "store"}

There is no query text: an operation is one of the store's reads, by name, with typed
arguments (OPERATIONS); the service applies the caller's scope to each."""
import json

VERSION = 1
MAX_REQUEST_BYTES = 64 << 10


class BadRequest(Exception):
    pass


def send(f, obj):
    f.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
    f.flush()


def receive(f, limit=None):
    """The next object, or None at the end of the stream."""
    line = f.readline(limit + 1) if limit else f.readline()
    if not line:
        return None
    if limit and len(line) > limit:
        raise BadRequest(f"a line over {limit} bytes")
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise BadRequest(f"not JSON: {e}")
    if not isinstance(obj, dict):
        raise BadRequest("not a JSON object")
    return obj


# --- the typed arguments of each operation --------------------------------------------

def _text(value, name, most=4096):
    if not isinstance(value, str) or len(value) > most:
        raise BadRequest(f"{name}: a string of at most {most} characters")
    return value


def _optional(check):
    return lambda v, name: None if v is None else check(v, name)


def _number(v, name):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BadRequest(f"{name}: a number")
    return float(v)


def _count(lo, hi):
    def check(v, name):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise BadRequest(f"{name}: a whole number from {lo} to {hi}")
        return v
    return check


def _texts(most_items):
    def check(v, name):
        if not isinstance(v, list) or len(v) > most_items:
            raise BadRequest(f"{name}: a list of at most {most_items} strings")
        return [_text(x, name, 256) for x in v]
    return check


def _ref(v, name):
    """A job id as the client parsed it (jobmon.stores.ids.JobRef)."""
    if not isinstance(v, dict):
        raise BadRequest(f"{name}: an object")
    return {"text": _text(v.get("text"), "ref.text"),
            "exact": _texts(64)(v.get("exact", []), "ref.exact"),
            "prefixes": _texts(64)(v.get("prefixes", []), "ref.prefixes"),
            "global_id": _optional(_text)(v.get("global_id"), "ref.global_id")}


_USER = _optional(lambda v, name: _text(v, name, 256))
OPERATIONS = {
    "jobs": {"limit": _count(1, 100000), "user": _USER},
    "records": {"ref": _ref, "user": _USER},
    "summaries": {"since": _optional(_number), "until": _optional(_number), "user": _USER,
                  "fields": _optional(_texts(1000))},
    "samples": {"handle": _count(1, 1 << 62)},
    "breakdowns": {"handle": _count(1, 1 << 62), "last": _optional(_count(1, 1 << 20))},
    "actions": {"since": _optional(_number), "jobs": _optional(_texts(1000))},
}
REQUIRED = {"limit", "ref", "handle"}


def arguments(request):
    """(operation, keyword arguments) of a request, every argument checked."""
    op, args = request.get("op"), request.get("args") or {}
    if op not in OPERATIONS:
        raise BadRequest(f"no operation {op!r} (there are {', '.join(OPERATIONS)})")
    if not isinstance(args, dict) or set(args) - set(OPERATIONS[op]):
        raise BadRequest(f"{op}: takes {', '.join(OPERATIONS[op])}")
    out = {}
    for name, check in OPERATIONS[op].items():
        if name not in args and name in REQUIRED:
            raise BadRequest(f"{op}: {name} is required")
        out[name] = check(args.get(name), name)
    return op, out
