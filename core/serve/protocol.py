"""The read service's protocol: one JSON object per line, both ways.

  server: {"service": "jobmon", "version": 1, "nonce": N}     (nonce: TCP only)
  client: {} on the Unix socket, {"munge": CREDENTIAL} over TCP (the credential's
          payload is N)
  server: {"user": NAME, "reads": "own jobs"}  or  {"error": ..., "kind": "refused"}
  client: {"op": OPERATION, "args": {...}, "command": "query"}     (as many as it likes;
          "command": what the caller runs, kept in the read log, optional)
  server: {"result": ...}  or  {"error": ..., "kind": "bad-request" | "not-found" | "store"
          | "not-kept" (readers: the service keeps no read log, or cannot read it)}

There is no query text: an operation is one of the store's reads, by name, with typed
arguments (OPERATIONS); the service applies the caller's scope to each."""
import json

VERSION = 1
# a job id is at most what one stored line holds (jobmon.influx.schema.MAX_LINE_BYTES), and
# a request names it twice (text, exact), each character escaped at worst as \uXXXX
MAX_ID_CHARS = 32768
MAX_REQUEST_BYTES = 512 << 10
MAX_DEPTH = 32            # JSON nesting of a request (json's own limit is the stack's)


class BadRequest(Exception):
    pass


class TooLong(BadRequest):
    """A line over the limit: the rest of it is still on the way, so the connection ends."""


def send(f, obj):
    f.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
    f.flush()


def receive(f, limit=None):
    """The next object, or None at the end of the stream."""
    line = f.readline(limit + 1) if limit else f.readline()
    if not line:
        return None
    if limit and len(line) > limit:
        raise TooLong(f"a line over {limit} bytes")
    return parse(line)


def parse(line):
    """The object of one request line, its size and nesting already bounded by the caller's
    read; BadRequest for anything else."""
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and depth(line) > MAX_DEPTH:
        raise BadRequest(f"nested more than {MAX_DEPTH} deep")
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError) as e:
        raise BadRequest(f"not JSON: {str(e)[:200]}")
    if not isinstance(obj, dict):
        raise BadRequest("not a JSON object")
    return obj


def depth(line):
    """The deepest nesting of [ and { outside strings (bytes of one JSON text)."""
    most = level = 0
    in_string = escaped = False
    for c in line:
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:          # backslash
                escaped = True
            elif c == 0x22:          # quote
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in (0x5B, 0x7B):
            level += 1
            most = max(most, level)
        elif c in (0x5D, 0x7D):
            level -= 1
    return most


def send_result(f, result):
    """{"result": [...]} written a record at a time: an answer of 100,000 records is never
    one string in memory."""
    if not isinstance(result, list):
        return send(f, {"result": result})
    f.write(b'{"result":[')
    for i, item in enumerate(result):
        f.write((b"," if i else b"") + json.dumps(item, separators=(",", ":")).encode())
    f.write(b"]}\n")
    f.flush()


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


def _texts(most_items, most_chars=256):
    def check(v, name):
        if not isinstance(v, list) or len(v) > most_items:
            raise BadRequest(f"{name}: a list of at most {most_items} strings")
        return [_text(x, name, most_chars) for x in v]
    return check


def _ref(v, name):
    """A job id as the client parsed it (jobmon.stores.ids.JobRef)."""
    if not isinstance(v, dict):
        raise BadRequest(f"{name}: an object")
    ids = _texts(64, MAX_ID_CHARS)
    return {"text": _text(v.get("text"), "ref.text", MAX_ID_CHARS),
            "exact": ids(v.get("exact", []), "ref.exact"),
            "prefixes": ids(v.get("prefixes", []), "ref.prefixes"),
            "global_id": _optional(_text)(v.get("global_id"), "ref.global_id")}


_USER = _optional(lambda v, name: _text(v, name, 256))
OPERATIONS = {
    "jobs": {"limit": _count(1, 100000), "user": _USER},
    "records": {"ref": _ref, "user": _USER},
    "summaries": {"since": _optional(_number), "until": _optional(_number), "user": _USER,
                  "fields": _optional(_texts(1000))},
    "samples": {"handle": _count(1, 1 << 62)},
    "breakdowns": {"handle": _count(1, 1 << 62), "last": _optional(_count(1, 1 << 20))},
    "actions": {"since": _optional(_number), "jobs": _optional(_texts(1000, MAX_ID_CHARS))},
    "readers": {"ref": _ref, "user": _USER},
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
