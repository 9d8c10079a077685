"""The node's CPU package and DRAM energy (RAPL, through powercap) and CPU time, for the
jobs to take their share of (DIR/energy.json; probes/node_energy.py; docs/energy.md).

RAPL zones in /sys/class/powercap: `intel-rapl:N` is CPU package N (`name` package-N; AMD
CPUs since Linux 5.11 use the same driver), `intel-rapl:N:M` its sub-zones -- `dram` is
counted; `core` and `uncore` are parts of the package, so they are not added again.
`psys` (the whole platform, on some client CPUs) and `intel-rapl-mmio:*` (the package
again, through MMIO) are left out. Each zone's `energy_uj` counts microjoules and wraps at
`max_energy_range_uj`: the reader reads it every period (far more often than it can wrap:
~262 kJ, 20 minutes at 200 W) and keeps a running total. Since Linux 5.10 `energy_uj` is
readable by root only.

The node's CPU time, from /proc/stat: busy = user + nice + system + irq + softirq + steal
(guest time is in user already), and capacity = online CPUs x elapsed time.
"""
import json
import logging
import os
import time

from .carbon import Intensity

log = logging.getLogger("jobmon.node")
FILE = "energy.json"
FORMAT = 1
POWERCAP = "/sys/class/powercap"
SHARES = ("busy", "capacity")
TICK = os.sysconf("SC_CLK_TCK")


def _read(path):
    with open(path) as f:
        return f.read().strip()


class Zone:
    """One RAPL zone's counter, kept open and re-read with pread."""

    def __init__(self, path, name, part):
        self.name, self.part = name, part
        self.range = int(_read(os.path.join(path, "max_energy_range_uj")))
        self.fd = os.open(os.path.join(path, "energy_uj"), os.O_RDONLY | os.O_CLOEXEC)
        self.raw = self.read()
        self.total = 0              # uJ since the reader started

    def read(self):
        return int(os.pread(self.fd, 32, 0))

    def advance(self):
        raw = self.read()
        delta = raw - self.raw
        if delta < 0:               # wrapped at max_energy_range_uj
            delta += self.range
        self.raw = raw
        self.total += delta

    def close(self):
        os.close(self.fd)


def zones(root=POWERCAP):
    """(the RAPL zones to count, why there are none or None)."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return [], f"no RAPL on this node ({root} is missing)"
    out, problem = [], None
    for entry in names:
        if not entry.startswith("intel-rapl:"):
            continue
        path = os.path.join(root, entry)
        try:
            name = _read(os.path.join(path, "name"))
            part = "cpu" if name.startswith("package") else "dram" if name == "dram" else None
            if part:
                out.append(Zone(path, name, part))
        except PermissionError:
            problem = (f"{path}/energy_uj is readable by root only (Linux 5.10 and later): "
                       "run the node reader as root")
        except (OSError, ValueError) as e:
            problem = f"{path}: {getattr(e, 'strerror', None) or e}"
    if problem:
        for z in out:
            z.close()
        return [], problem
    return out, None if out else f"no RAPL zones in {root}"


def cpu_times(stat="/proc/stat"):
    """(busy CPU seconds of the node since boot, online CPUs) from /proc/stat."""
    with open(stat, "rb") as f:
        data = f.read()
    first, _, rest = data.partition(b"\n")
    v = [int(x) for x in first.split()[1:]]
    busy = v[0] + v[1] + v[2] + sum(v[5:8])     # user nice system . . irq softirq steal
    cpus = rest.count(b"\ncpu") + rest.startswith(b"cpu")
    return busy / TICK, cpus


class EnergySource:
    """The node's energy counters and CPU time at each refresh, as running totals since the
    reader started (`gen` names this run of the reader: totals of another gen are apart)."""

    file = FILE

    def __init__(self, period, share="busy", intensity=None, powercap=POWERCAP,
                 cpu_stat="/proc/stat", clock=time.monotonic):
        if share not in SHARES:
            raise ValueError(f"energy share must be one of {', '.join(SHARES)}, not {share!r}")
        self.period, self.share, self.stat, self.clock = period, share, cpu_stat, clock
        self.intensity = intensity or Intensity()
        self.zones, self.why = zones(powercap)
        if self.why:
            log.warning("no CPU or DRAM energy for jobs: %s", self.why)
        self.busy0, _ = cpu_times(cpu_stat)
        self.t0 = self.last_t = clock()
        self.capacity = 0.0
        self.gen = f"{os.getpid()}-{round(self.t0, 6)}"

    def refresh(self, seq):
        t = self.clock()
        for z in self.zones:
            z.advance()
        busy, cpus = cpu_times(self.stat)
        self.capacity += cpus * (t - self.last_t)
        self.last_t = t
        now = time.time()
        g, source = self.intensity.at(now)
        joules = {}
        for z in self.zones:
            joules[z.part] = joules.get(z.part, 0) + z.total
        head = {"format": FORMAT, "host": os.uname().nodename, "seq": seq, "gen": self.gen,
                "mono": round(t, 6), "time": round(now, 3), "period": self.period,
                "share": self.share, "busy_s": round(busy - self.busy0, 3),
                "capacity_s": round(self.capacity, 3), "cpus": cpus,
                "rapl": None if self.why else {k: v / 1e6 for k, v in joules.items()},
                "zones": [z.name for z in self.zones], "why": self.why,
                "g_per_kwh": g, "carbon": source}
        return (json.dumps(head, separators=(",", ":")) + "\n").encode()

    def close(self):
        for z in self.zones:
            z.close()
