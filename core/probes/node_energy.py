"""A job's share of the node's CPU package and DRAM energy, from what the node reader
publishes (DIR/energy.json, written by jobmon.node.rapl). Standard library only.

The reader publishes, at every refresh, running totals since it started: the energy of
the node's RAPL zones (package, DRAM), the CPU time the node was busy and the CPU time it
had (CPUs x elapsed), each at its reading's monotonic time. Between two readings the
job gets

    node energy used between them  x  job's CPU time between them / node's CPU time between them

where the node's CPU time is its busy time ("busy": the whole energy, idle power included,
is shared among whatever ran) or its capacity ("capacity": a job pays for the share of
the node's CPUs it used; the energy of idle CPUs is nobody's), as the site chose. The
job's CPU time at a reading's instant is interpolated between the job's own reads either
side of it. docs/energy.md has the method and its error.
"""
import json

from .gpu_published import MAX_AGE_PERIODS

FILE = "energy.json"
FORMAT = 1


def parse(data):
    r = json.loads(data)
    if not isinstance(r, dict) or r.get("format") != FORMAT:
        raise ValueError(f"not a format {FORMAT} energy reading")
    return r


class EnergyShare:
    def __init__(self, published, clock):
        self.published = published
        self.clock = clock
        self.history = []         # (time, job's CPU seconds) of its reads since the last reading
        self.prev = None          # the last reading taken: (gen, mono, {part: J}, node CPU s, job CPU s)
        self.joules = {}          # part ("cpu", "dram") -> J of the job's so far
        self.missing = 0.0        # s of readings not taken (the reader restarted or was down)
        self.share = None         # "busy" or "capacity", once a reading said
        self.why = None           # why there is no CPU/DRAM energy, where the reader says
        self.intensity = None     # gCO2e/kWh of the latest reading
        self.source = None        # "file" or "constant"
        self.stale = None         # why the latest reading was not used, if it was not
        self.absent = False       # because there is no such file (a reader of GPUs only)
        self.reading = None

    def cpu_at(self, t):
        """The job's CPU seconds at t, interpolated between its reads (clamped to them)."""
        h = self.history
        if t <= h[0][0]:
            return h[0][1]
        for (t0, c0), (t1, c1) in zip(h, h[1:]):
            if t <= t1:
                return c1 if t1 <= t0 else c0 + (c1 - c0) * (t - t0) / (t1 - t0)
        return h[-1][1]

    def fresh(self):
        """The latest reading, if fresh (else None, with self.stale saying why)."""
        try:
            r = self.published.read()
            age = self.clock() - r["mono"]
            if not -1.0 <= age <= MAX_AGE_PERIODS * r["period"]:
                self.stale = f"its last refresh is {age:.1f} s old"
                return None
        except FileNotFoundError:
            self.stale = "the node reader publishes no energy here"
            self.absent = True
            return None
        except (OSError, ValueError, KeyError, TypeError) as e:
            self.stale = str(e) or type(e).__name__
            return None
        self.stale = None
        self.absent = False
        return r

    def update(self, t, cpu):
        """After a read of the job at t with `cpu` seconds: take the newest reading."""
        self.history.append((t, cpu))
        r = self.fresh()
        if r is not None and r is not self.reading:
            self.take(r)

    def take(self, r):
        self.reading = r
        self.intensity, self.source = r.get("g_per_kwh"), r.get("carbon")
        if r.get("rapl") is None:
            self.why = r.get("why") or "no RAPL on this node"
            return
        self.share = r["share"]
        node = r["busy_s"] if self.share == "busy" else r["capacity_s"]
        job = self.cpu_at(r["mono"])
        p = self.prev
        if p is not None and p[0] == r["gen"] and r["mono"] > p[1]:
            share = min(max((job - p[4]) / (node - p[3]), 0.0), 1.0) if node > p[3] else 0.0
            for part, j in r["rapl"].items():
                self.joules[part] = self.joules.get(part, 0.0) + max(j - p[2].get(part, j), 0) * share
        elif p is not None:            # another run of the reader: its totals start anew
            self.missing += max(r["mono"] - p[1], 0.0)
        else:
            self.joules = dict.fromkeys(r["rapl"], 0.0)
        self.prev = (r["gen"], r["mono"], r["rapl"], node, job)
        # later readings come later: only the read just before this one is needed again
        keep = max((i for i, (t, _c) in enumerate(self.history) if t <= r["mono"]), default=0)
        del self.history[:keep]

    def covers(self, t):
        return self.prev is not None and self.prev[1] >= t

    def close(self):
        self.published.close()
