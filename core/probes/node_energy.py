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

The bound (errors, J per part) is the timing part of that error, from the readings: the
job's CPU time before the first reading (and in a gap where the reader restarted) is
not apportioned, and costs what a CPU-second cost in the interval after it; at every
reading, the job's CPU time can fall on either side by as much as it used between its
own reads around it, which misplaces it by the difference of the two intervals' cost
per CPU-second. The model itself (every CPU-second of an interval costs the same) is
not bounded by these data.
"""

from .gpu_published import MAX_AGE_PERIODS

FILE = "energy.json"
FORMAT = 1


def parse(data):
    import json   # here: jobmon.metrics imports this module on every job's start
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
        self.errors = {}          # part -> J the figure may be off by (its timing part)
        self.rate = None          # part -> J per node CPU-second of the last interval
        self.width = 0.0          # the job's CPU s either side of the last reading
        self.pending = None       # CPU s not apportioned before a first reading

    def cpu_bracket(self, t):
        """(lowest, highest) of the job's CPU seconds at t: its reads either side."""
        h = self.history
        if t <= h[0][0]:
            return (0.0 if t < h[0][0] else h[0][1]), h[0][1]
        for (t0, c0), (t1, c1) in zip(h, h[1:]):
            if t <= t1:
                return c0, c1
        return h[-1][1], h[-1][1]

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
        lo, hi = self.cpu_bracket(r["mono"])
        p = self.prev
        if p is not None and p[0] == r["gen"] and r["mono"] > p[1]:
            share = min(max((job - p[4]) / (node - p[3]), 0.0), 1.0) if node > p[3] else 0.0
            rate = {}
            for part, j in r["rapl"].items():
                used = max(j - p[2].get(part, j), 0)
                self.joules[part] = self.joules.get(part, 0.0) + used * share
                rate[part] = used / (node - p[3]) if node > p[3] else 0.0
            self._misplaced(rate)
        elif p is not None:            # another run of the reader: its totals start anew
            self.missing += max(r["mono"] - p[1], 0.0)
            self.pending = (self.pending or 0.0) + max(hi - p[4], 0.0)
        else:
            self.joules = dict.fromkeys(r["rapl"], 0.0)
            self.errors = dict.fromkeys(r["rapl"], 0.0)
            self.pending = hi
        self.width = hi - lo
        self.prev = (r["gen"], r["mono"], r["rapl"], node, job)
        # later readings come later: only the read just before this one is needed again
        keep = max((i for i, (t, _c) in enumerate(self.history) if t <= r["mono"]), default=0)
        del self.history[:keep]

    def _misplaced(self, rate):
        """The bound's part of the interval just taken (rate: its J per CPU-second)."""
        for part, e in rate.items():
            if self.pending is not None:     # the CPU before the first reading
                add = self.pending * e
            elif self.rate is not None:      # the reading between this interval and the last
                add = self.width * abs(e - self.rate.get(part, e))
            else:
                add = 0.0
            self.errors[part] = self.errors.get(part, 0.0) + add
        self.pending, self.rate = None, rate

    def average(self):
        """J per node CPU-second since the reader started (its latest reading): the cost
        taken where no interval of the job's is there to say."""
        r, p = self.reading, self.prev
        node = p[3] if p else 0.0
        return {part: (j / node if node > 0 else 0.0) for part, j in ((r or {}).get("rapl")
                                                                       or {}).items()}

    def finish(self, t_end):
        """The bound's last parts, once the job is over: CPU not apportioned because no
        interval came after a first reading, or no reading after the job's end."""
        if self.prev is None or not self.history:
            return
        rate = self.rate or self.average()
        left = self.pending or 0.0
        if not self.covers(t_end):
            left += max(self.history[-1][1] - self.prev[4], 0.0)
        for part, e in rate.items():
            self.errors[part] = self.errors.get(part, 0.0) + left * e
        self.pending = None

    def covers(self, t):
        return self.prev is not None and self.prev[1] >= t

    def close(self):
        self.published.close()


# the energy figures of a sample (node_probe.py adds them up and prices them), declared
# (jobmon.metrics.declared)
METRICS = (
    {"name": "cpu_energy_joules", "unit": "J", "range": "joules", "kind": "counter",
     "method": "apportioned",
     "meaning": "CPU package energy apportioned to the job since it started: between two of the "
                "node reader's readings, the node's RAPL package energy x the job's share of the "
                "node's CPU time (energy_share: busy or capacity; docs/energy.md)",
     "note": "energy_share says how: busy or capacity"},
    {"name": "dram_energy_joules", "unit": "J", "range": "joules", "kind": "counter",
     "method": "apportioned",
     "meaning": "DRAM energy apportioned the same way, by CPU time (RAPL dram zones; none on AMD)",
     "note": "by CPU time, not by memory traffic"},
    {"name": "energy_joules", "unit": "J", "range": "joules", "kind": "counter",
     "method": "apportioned",
     "meaning": "the job's energy since it started: gpu_energy_joules + cpu_energy_joules + "
                "dram_energy_joules, those there are (energy_parts says which)",
     "note": "its GPU part is the devices' counter (exact where not shared)"},
    {"name": "power_watts", "unit": "W", "range": "watts", "kind": "gauge",
     "method": "apportioned", "meaning": "energy_joules per second over the last interval",
     "note": "the rate of energy_joules",
     "panel": ({"title": "Power and network", "how": "mean", "alias": "power", "unit": "watt",
                "description": "power: the job's energy per second, as in 'Energy and CO2e' "
                "(its GPUs' counter plus its apportioned CPU and DRAM share)."},)},
    {"name": "co2e_grams", "unit": "gCO2e", "range": "grams", "kind": "counter",
     "method": "estimated",
     "meaning": "CO2 equivalent of energy_joules: each interval's energy x the site's carbon "
                "intensity then (gCO2e per kWh: a constant, or a time series the site provides)",
     "note": "energy_joules x the site's carbon intensity"},
)


# and the end-of-job record's (their bounds: node_bounds.py) (jobmon.metrics.declared)
FIGURES = (
    {"name": "cpu_energy_joules", "fold": "seen", "combine": "sum",
     "meaning": "CPU package energy apportioned to the job, start to end"},
    {"name": "dram_energy_joules", "fold": "seen", "combine": "sum",
     "meaning": "DRAM energy apportioned to the job, start to end"},
    {"name": "cpu_energy_error_joules", "combine": "sum",
     "unit": "J", "range": "joules", "method": "estimated",
     "meaning": "how far cpu_energy_joules may be off (±) by timing, from the readings: the job's "
                "CPU time before the node reader's first reading (and in a gap where it "
                "restarted) at the next interval's cost per CPU-second, and at each reading the "
                "job's CPU time between its own reads around it x the change in that cost; the "
                "model (every CPU-second of an interval costs the same) is not in it: the data "
                "cannot bound it"},
    {"name": "dram_energy_error_joules", "combine": "sum",
     "unit": "J", "range": "joules", "method": "estimated",
     "meaning": "the same for dram_energy_joules (its model, DRAM energy by CPU time, not "
                "bounded)"},
    {"name": "energy_joules", "fold": "seen", "combine": "sum",
     "meaning": "the job's energy, start to end: GPU + CPU package + DRAM, those there are"},
    {"name": "energy_error_joules", "combine": "sum",
     "unit": "J", "range": "joules", "method": "estimated",
     "meaning": "how far energy_joules may be off (±): the sum of its parts' bounds (a worst "
                "case), absent where a part has none"},
    {"name": "energy_method", "unit": "text", "range": None, "method": "recorded",
     "meaning": "how each part of energy_joules was obtained: the GPUs' counter (interpolated "
                "between the node reader's readings, or read by the sampler), CPU and DRAM by "
                "RAPL counters x the job's share of the node's CPU time"},
    {"name": "energy_parts", "unit": "text", "range": None, "method": "recorded",
     "meaning": "which parts energy_joules holds (gpu, cpu, dram) and why one is missing (no RAPL "
                "on the node, MIG slices have no counter, no node reader)"},
    {"name": "energy_share", "unit": "text", "range": None, "scope": "node", "method": "recorded",
     "meaning": "how CPU and DRAM energy was apportioned: busy (the job's share of the CPU time "
                "the node used: idle power shared by whatever ran) or capacity (its share of all "
                "the node's CPU time: idle power left to nobody); a site choice"},
    {"name": "energy_missing_seconds", "combine": "sum",
     "unit": "s", "range": "wall", "method": "exact",
     "meaning": "seconds of the run whose CPU and DRAM energy is not in the totals (the node "
                "reader restarted, its counters began anew)"},
    {"name": "co2e_grams", "fold": "seen", "combine": "sum",
     "meaning": "CO2 equivalent of energy_joules, start to end"},
    {"name": "co2e_error_grams", "combine": "sum",
     "unit": "gCO2e", "range": "grams", "method": "estimated",
     "meaning": "how far co2e_grams may be off (±) from the energy's: energy_error_joules at the "
                "highest intensity of the run, plus, where the intensity changed within the run, "
                "the energy around each step x the step; the intensity's own error is not in it"},
    {"name": "carbon_intensity", "unit": "gCO2e/kWh", "range": "intensity", "scope": "node",
     "method": "recorded",
     "meaning": "carbon intensity the job's CO2e was reckoned at (co2e_grams / energy_joules in "
                "kWh; the site's constant or time series)"},
)
