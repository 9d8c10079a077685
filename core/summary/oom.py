"""Out-of-memory kills of a job's processes, told as a story: when, which process, the job's
charge and limit at that moment, anonymous memory against page cache.

The job's cgroup counts its OOM kills (`memory.events` oom_kill on v2, `memory.oom_control`
oom_kill on v1: every sample reads it). When the count rises, the kernel's own log says
the rest exactly -- its "memory: usage, limit, failcnt" line, the cgroup's memory.stat at
that instant, the victim's pid, command and resident memory, the time to the µs -- where
jobmon may read it (/dev/kmsg: root, or a node with kernel.dmesg_restrict = 0). Opened when
the job starts and read only when a kill was counted. Elsewhere the sample that counted the
kill tells what it can: the moment within one interval, the charge at the kill from the
cgroup's own high-water mark (memory.peak / memory.max_usage_in_bytes: the kernel kills at
the limit, so the peak by then is the charge it killed at -- the sample before may be
seconds earlier, at the job's start) and the limit hits by then (memory.events max /
memory.failcnt); not its split into anonymous memory and cache, which the kill changed
(the victim, where jobmon reaped it: the command, killed by SIGKILL).
Standard library only.
"""
import os
import time

KMSG = "/dev/kmsg"
KIB = 1024


def open_at_end(path=KMSG):
    """A descriptor of the kernel's log from now on (raises OSError where it is not ours
    to read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    os.lseek(fd, 0, os.SEEK_END)
    return fd


class KernelLog:
    """/dev/kmsg from the moment it was opened on: one record a read, never blocking."""

    def __init__(self, path=KMSG):
        """path: /dev/kmsg, or a descriptor open_at_end() gave (the log from then on)."""
        self.fd = path if isinstance(path, int) else open_at_end(path)

    def records(self):
        """[(µs since boot, message)] written since the last call."""
        out = []
        while True:
            try:
                data = os.read(self.fd, 8192)
            except BlockingIOError:
                return out
            except BrokenPipeError:   # records overwritten before we read them: go on
                continue
            if not data:
                return out
            head, _, rest = data.decode("utf-8", "replace").partition(";")
            fields = head.split(",")
            if len(fields) >= 3 and fields[2].isdigit():
                # one printk of many lines (v2's memory.stat dump) is one record, its
                # newlines written as \x0a
                out += [(int(fields[2]), line)
                        for line in rest.split("\n", 1)[0].split("\\x0a") if line]

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _kib(text):
    """"32768kB" -> bytes."""
    t = text.strip()
    return int(t[:-2]) * KIB if t.endswith("kB") and t[:-2].isdigit() else None


def parse_kills(records):
    """The memory-cgroup OOM kills in kernel log records: [{time_us, memcg, pid, command,
    charge_bytes, limit_bytes, limit_hits, anon_bytes, cache_bytes, victim_rss_bytes}].
    The kernel writes, for each: "memory: usage U kB, limit L kB, failcnt F", "Memory
    cgroup stats for PATH:" and that cgroup's memory.stat one line a key, "oom-kill:...,
    task_memcg=PATH,task=COMM,pid=PID,..." and "... Killed process PID (COMM) ...,
    anon-rss:N kB, file-rss:N kB, shmem-rss:N kB ...". """
    out, usage, stats, in_stats, kill = [], {}, {}, False, None
    for t, msg in records:
        if msg.startswith("memory: usage "):
            parts = dict(p.strip().split(" ", 1) for p in msg[len("memory: "):].split(","))
            usage = {"charge_bytes": _kib(parts.get("usage", "")),
                     "limit_bytes": _kib(parts.get("limit", "")),
                     "limit_hits": int(parts["failcnt"]) if parts.get("failcnt", "").isdigit()
                     else None}
            stats, in_stats = {}, False
            continue
        if msg.startswith("Memory cgroup stats for "):
            in_stats = True
            continue
        if in_stats:
            key, _, value = msg.partition(" ")
            if value.isdigit() and key.replace("_", "").isalnum():
                stats[key] = int(value)
                continue
            in_stats = False
        if msg.startswith("oom-kill:"):
            kill = dict(kv.split("=", 1) for kv in msg[len("oom-kill:"):].split(",") if "=" in kv)
            continue
        if "Killed process " in msg and kill is not None:
            rss = {}
            for part in msg.split(","):
                key, _, value = part.strip().rpartition(" ")[2].partition(":")
                if key in ("anon-rss", "file-rss", "shmem-rss"):
                    rss[key] = _kib(value)
            anon = stats.get("total_rss", stats.get("anon", stats.get("rss")))
            cache = stats.get("total_cache", stats.get("file", stats.get("cache")))
            shmem = stats.get("total_shmem", stats.get("shmem", 0))
            out.append(dict(usage, time_us=t, memcg=kill.get("task_memcg"),
                            pid=int(kill["pid"]) if kill.get("pid", "").isdigit() else None,
                            command=kill.get("task"),
                            anon_bytes=None if anon is None else anon + shmem,
                            cache_bytes=None if cache is None else max(cache - shmem, 0),
                            victim_rss_bytes=sum(v for v in rss.values() if v) or None))
            kill = None
    return out


def memcg_path(d):
    """The cgroup path the kernel names a cgroup directory by (relative to its hierarchy's
    root, as in /proc/<pid>/cgroup), or None."""
    from ..cgroups import parse_mountinfo
    try:
        with open("/proc/self/mountinfo") as f:
            mounts = parse_mountinfo(f.read())
    except OSError:
        return None
    d = os.path.normpath(d)
    for mnt, root in mounts.values():
        mnt = os.path.normpath(mnt)
        if d == mnt or d.startswith(mnt + "/"):
            return os.path.normpath(root.rstrip("/") + "/" + d[len(mnt):].lstrip("/"))
    return None


class OomWatch:
    """Told every sample; keeps the story of the job's first OOM kill (oom_kills counts
    them all). The kernel counts a kill a moment before it logs the victim: a kill the log
    does not have yet is looked for again at the next samples and at the end."""

    def __init__(self, memcg_dir=None, kmsg=KMSG):
        self.memcg = memcg_path(memcg_dir) if memcg_dir else None
        self.log = None
        if self.memcg:
            try:
                self.log = KernelLog(kmsg)
            except OSError:      # not ours to read (dmesg_restrict): the samples say it
                pass
        self.records = []        # kernel log records read since the job started
        self.first = None
        self.before = {}

    def check(self, sample, limit=None):
        """sample: the sampler's latest; limit: the job's memory limit, if known."""
        before, self.before = self.before, sample
        if self.first is not None:
            if self.first["oom_source"] == "samples":
                self.first = self._from_log() or self.first
            return
        if (sample.get("oom_kills") or 0) <= (before.get("oom_kills") or 0):
            return
        # the samples either side: the kill came after `before`, by `sample`, whose
        # kernel marks hold the moment of the kill (a peak, a count of limit hits)
        t_end = sample["time"] / 1e9
        t_start = before["time"] / 1e9 if before.get("time") else t_end
        charge, anon, cache = sample.get("mem_peak_bytes"), None, None
        if charge is None:   # no cgroup high-water mark: the sample before, as it was
            anon, cache = before.get("mem_resident_bytes"), before.get("mem_cache_bytes")
            charge = None if anon is None else anon + (cache or 0)
        self.first = self._from_log() or {
            "oom_time": round(t_end, 3), "oom_time_within_seconds": round(t_end - t_start, 3),
            "oom_pid": None, "oom_command": None, "oom_victim_rss_bytes": None,
            "oom_charge_bytes": charge, "oom_limit_bytes": limit,
            "oom_limit_hits": sample.get("mem_limit_hits"), "oom_anon_bytes": anon,
            "oom_cache_bytes": cache,
            "oom_source": "samples"}

    def _from_log(self):
        if self.log is None:
            return None
        self.records = (self.records + self.log.records())[-5000:]
        mine = [k for k in parse_kills(self.records)
                if k["memcg"] and (k["memcg"] == self.memcg
                                   or k["memcg"].startswith(self.memcg.rstrip("/") + "/"))]
        if not mine:
            return None
        k = mine[0]
        boot = time.time() - time.clock_gettime(time.CLOCK_MONOTONIC)
        return {"oom_time": round(boot + k["time_us"] / 1e6, 3), "oom_time_within_seconds": 0.0,
                "oom_pid": k["pid"], "oom_command": k["command"],
                "oom_victim_rss_bytes": k["victim_rss_bytes"],
                "oom_charge_bytes": k["charge_bytes"], "oom_limit_bytes": k["limit_bytes"],
                "oom_limit_hits": k["limit_hits"], "oom_anon_bytes": k["anon_bytes"], "oom_cache_bytes": k["cache_bytes"],
                "oom_source": "kernel log"}

    def fields(self, command=None, end=None):
        """Summary fields of the first kill (none without one). command: (pid, name) of the
        job's command, where jobmon reaped it after SIGKILL: the victim the samples could
        not name. end: the job's end time (s), where known: a kill the final read found
        (after the job's last process was gone) came before it."""
        if self.first is None:
            return {}
        if self.first["oom_source"] == "samples":
            self.first = self._from_log() or self.first
        out = dict(self.first)
        if out["oom_source"] == "samples" and end is not None and out["oom_time"] > end:
            late = out["oom_time"] - end
            out["oom_time"] = round(end, 3)
            out["oom_time_within_seconds"] = round(max(out["oom_time_within_seconds"] - late, 0), 3)
        if out["oom_pid"] is None and command:
            out["oom_pid"], out["oom_command"] = command
            out["oom_source"] = "samples; the command, killed by SIGKILL"
        return out

    def close(self):
        if self.log:
            self.log.close()


def story(s):
    """The job's OOM kills for people, from its summary: [line], [] without one. Every
    text that came from the job (its command name) is cleaned (jobmon.printable)."""
    from ..printable import clean, fixed, size
    n = s.get("oom_kills")
    if not n:
        return []
    lines = [f"the kernel killed {n} process{'es' if n > 1 else ''} of the job for memory "
             "(out of memory at its limit)"]
    if s.get("oom_time") is None:
        return lines
    try:
        at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s["oom_time"]))
        at += f".{int(s['oom_time'] * 1000) % 1000:03d}"
    except (OverflowError, ValueError, OSError, TypeError):
        at = fixed(s["oom_time"])
    within = s.get("oom_time_within_seconds")
    when = f"at {at}" if not within else f"between {fixed(within, '.1f')} s before {at} and then"
    who = (f"{clean(s.get('oom_command') or '?')} (pid {s['oom_pid']})"
           if s.get("oom_pid") else "a process (which one: no kernel log to read)")
    rss = f", {size(s['oom_victim_rss_bytes'])} resident" if s.get("oom_victim_rss_bytes") else ""
    lines.append(f"first: {who}{rss}, {when}")
    charge, limit = s.get("oom_charge_bytes"), s.get("oom_limit_bytes")
    if charge is not None:
        parts = [f"{size(s[k])} {name}" for k, name in (("oom_anon_bytes", "anonymous"),
                                                        ("oom_cache_bytes", "page cache"))
                 if s.get(k) is not None]
        if s.get("oom_source") == "kernel log":
            moment = "then"
        elif parts:   # no high-water mark of the cgroup: the sample before is all there is
            moment = "at the sample before"
        else:
            moment = "by then (the cgroup's high-water mark)"
        of = f" of its {size(limit, True)} limit" if limit else ""
        hits = s.get("oom_limit_hits")
        hits = f", its limit hit {hits} time{'s' if hits != 1 else ''}" if hits else ""
        lines.append(f"charged {size(charge)}{of} {moment}"
                     + (f" ({', '.join(parts)})" if parts else "") + hits)
    lines.append(f"from the {s.get('oom_source') or 'samples'}")
    return lines


# the job's first OOM kill, where it had one (oom_kills counts them all), declared
# (jobmon.metrics.declared)
FIGURES = (
    {"name": "oom_time", "unit": "s", "range": "epoch", "method": "exact",
     "meaning": "when the kernel killed a process of the job for memory, seconds since the epoch: "
                "from the kernel's log to the µs where jobmon may read it (root, or "
                "kernel.dmesg_restrict = 0), else the sample that counted the kill",
     "note": "from the kernel's log; oom_source samples: the sample that counted the kill"},
    {"name": "oom_time_within_seconds", "unit": "s", "range": "wall", "method": "exact",
     "meaning": "how far before oom_time the kill may have been: 0 from the kernel's log, else "
                "the time since the sample before",
     "note": "from the kernel's log; oom_source samples: the time since the sample before"},
    {"name": "oom_pid", "unit": "", "range": "pid", "method": "exact",
     "meaning": "pid of the process killed (null where neither the kernel's log nor jobmon's own "
                "reaping said which)",
     "note": "from the kernel's log; oom_source samples: none (jobmon run: its command, where "
             "SIGKILL ended it)"},
    {"name": "oom_command", "unit": "text", "range": None, "method": "exact",
     "meaning": "its command name (the kernel's comm, at most 15 bytes)",
     "note": "from the kernel's log; oom_source samples: none (jobmon run: its command, where "
             "SIGKILL ended it)"},
    {"name": "oom_victim_rss_bytes", "unit": "bytes", "range": "memory", "method": "exact",
     "meaning": "its resident memory when it was killed (anon + file + shmem RSS, from the "
                "kernel's log)", "note": "from the kernel's log; oom_source samples: none"},
    {"name": "oom_charge_bytes", "unit": "bytes", "range": "memory", "method": "exact",
     "meaning": "memory charged to the job's cgroup at that moment (the kernel kills at the "
                "limit: without its log, the cgroup's high-water mark by then)",
     "note": "from the kernel's log; oom_source samples: the cgroup's high-water mark at the "
             "sample that counted the kill"},
    {"name": "oom_limit_bytes", "unit": "bytes", "range": "bytes", "method": "exact",
     "meaning": "the job's memory limit then",
     "note": "from the kernel's log; oom_source samples: the limit the probe read"},
    {"name": "oom_limit_hits", "unit": "count", "range": "count", "method": "exact",
     "meaning": "times the job's cgroup had hit its memory limit by then",
     "note": "from the kernel's log; oom_source samples: the cgroup's count at the sample that "
             "counted the kill"},
    {"name": "oom_anon_bytes", "unit": "bytes", "range": "memory", "method": "exact",
     "meaning": "of the charge, anonymous and shared memory (what the kernel could not give back "
                "without swap)",
     "note": "from the kernel's log; oom_source samples: none, but the sample before where the "
             "cgroup keeps no high-water mark"},
    {"name": "oom_cache_bytes", "unit": "bytes", "range": "memory", "method": "exact",
     "meaning": "of the charge, page cache (what reclaim had left)",
     "note": "from the kernel's log; oom_source samples: as oom_anon_bytes"},
    {"name": "oom_source", "unit": "text", "range": None, "method": "recorded",
     "meaning": "where the figures come from: kernel log (exact), samples (the one that counted "
                "the kill, and the one before), or samples with the command as the victim (jobmon "
                "reaped it, killed by SIGKILL)"},
)
