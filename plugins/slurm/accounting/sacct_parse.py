"""sacct's text values in jobmon's units: times to seconds, memory to bytes, TRES lists to
dicts, ExitCode to (code, signal), dates to seconds since the epoch. Read side only."""
import re
import time

_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
_DURATION = re.compile(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)")


def seconds(text):
    """[D-][HH:]MM:SS[.mmm] (TotalCPU, Elapsed, Timelimit) -> seconds; None for empty,
    UNLIMITED, Partition_Limit, INVALID."""
    if not text:
        return None
    m = _DURATION.fullmatch(text.strip())
    if not m:
        return None
    d, h, mi, s = m.groups()
    return round(int(d or 0) * 86400 + int(h or 0) * 3600 + int(mi) * 60 + float(s), 6)


def mem_bytes(text):
    """MaxRSS, ReqMem, a TRES mem value: 3616K, 500M, 1.50G, 3702784 (--noconvert) ->
    bytes. An old ReqMem's n/c suffix (per node, per CPU) is dropped."""
    if not text:
        return None
    t = text.strip()
    if t[-1:] in ("n", "c"):
        t = t[:-1]
    unit = 1
    if t[-1:].upper() in _UNITS:
        unit, t = _UNITS[t[-1:].upper()], t[:-1]
    try:
        return int(round(float(t) * unit))
    except ValueError:
        return None


def tres_dict(text):
    """"billing=1,cpu=1,mem=500M,node=1,gres/gpu=2" -> {name: number}: mem in bytes,
    cpu times (cpu=00:00:01) in seconds, fs/disk in bytes, the rest as numbers."""
    out = {}
    for item in (text or "").split(","):
        k, sep, v = item.partition("=")
        if not sep:
            continue
        if k in ("mem", "vmem"):
            out[k] = mem_bytes(v)
        elif ":" in v:
            out[k] = seconds(v)
        else:
            try:
                out[k] = int(v)
            except ValueError:
                out[k] = mem_bytes(v)
    return out


def exit_status(text):
    """ExitCode "code:signal" -> (exit code, signal): (3, None) for 3:0, (None, 9) for 0:9."""
    code, sep, sig = (text or "").partition(":")
    if not sep or not code.isdigit() or not sig.isdigit():
        return None, None
    if int(sig):
        return None, int(sig)
    return int(code), None


def when(text):
    """sacct's local-time date (2026-11-23T13:47:55) -> seconds since the epoch; None for
    Unknown, None, empty."""
    try:
        return time.mktime(time.strptime(text.strip(), "%Y-%m-%dT%H:%M:%S"))
    except (ValueError, AttributeError, OverflowError):
        return None


def job_value(raw, array_job=None, array_task=None, het_job=None, het_offset=None):
    """The id users type: 12345, 12345_7 for an array task, 12345+1 for a het component."""
    if array_job and array_task is not None:
        return f"{array_job}_{array_task}"
    if het_job and het_offset is not None:
        return f"{het_job}+{het_offset}"
    return str(raw)
