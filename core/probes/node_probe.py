"""The job's figures from the node reader besides its GPUs: its energy (CPU package and
DRAM apportioned, plus its GPUs' counter), the energy's CO2e, and its network counters.
Wraps the job's probe (GPUs included); standard library only. docs/energy.md,
docs/network.md.
"""
import time

from .gpu_published import Published
from .node_energy import FILE as ENERGY_FILE, EnergyShare, parse as parse_energy
from .node_bounds import bounds
from .node_net import FIELDS as NET_FIELDS, FILE as NET_FILE, Counts, NetCounts

KWH = 3.6e6      # J


class NodeProbe:
    def __init__(self, main, directory, warn, cgroup_v2, clock=time.monotonic):
        self.main = main
        self.method = main.method
        self.warn = warn
        self.clock = clock
        self.energy = EnergyShare(Published(directory, ENERGY_FILE, parse_energy), clock)
        self.net = self.net_why = None
        if cgroup_v2 is None:
            self.net_why = ("not available: the job has no cgroup v2 of its own (cgroup v1 "
                            "or measured through /proc), so its traffic cannot be told from "
                            "the node's")
        else:
            self.net = NetCounts(Published(directory, NET_FILE, Counts), cgroup_v2, clock)
        self.gpu_joules = None     # the last GPU energy seen (JOBMON_GPU=nvml: every 10 s)
        self.co2e = 0.0
        self.co2e_known = False
        self.g_max = None          # the highest intensity the CO2e was reckoned at
        self.g_step = 0.0          # gCO2e the intensity's steps may misplace
        self.g_last = None         # (intensity, J of the read before)
        self.total = None          # (time, J, parts) at the last read
        self.t_end = None
        self.warned = set()

    def _warn_once(self, kind, message):
        if kind not in self.warned:
            self.warned.add(kind)
            self.warn(message)

    def read(self, final=False):
        values = self.main.read(final)
        t = self.clock()
        if final:
            self.t_end = t
        if "cpu_user_seconds" in values:
            self.energy.update(t, values["cpu_user_seconds"] + values.get("cpu_system_seconds", 0))
            if self.energy.stale and not (self.energy.absent and self.energy.prev is None):
                self._warn_once("energy", "no energy figures from the node reader ("
                                f"{self.energy.stale}); they resume when it does")
        if values.get("gpu_energy_joules") is not None:
            self.gpu_joules = values["gpu_energy_joules"]
        values.update(self._energy(t))
        if self.net is not None:
            counts = self.net.read()
            if counts is not None:
                values.update(zip(NET_FIELDS, counts))
        return values

    def _parts(self):
        parts = {"gpu": self.gpu_joules}
        if self.energy.prev is not None:
            parts.update(self.energy.joules)
        return {k: v for k, v in parts.items() if v is not None}

    def _energy(self, t):
        """Energy fields now: the parts, their total, its rate since the last read, CO2e."""
        parts = self._parts()
        if not parts:
            return {}
        total = sum(parts.values())
        out = {"energy_joules": round(total, 3)}
        if "cpu" in parts:
            out["cpu_energy_joules"] = round(parts["cpu"], 3)
        if "dram" in parts:
            out["dram_energy_joules"] = round(parts["dram"], 3)
        last = self.total
        if last is not None and last[2] == set(parts) and t > last[0]:
            out["power_watts"] = round((total - last[1]) / (t - last[0]), 3)
        g = self.energy.intensity
        if g is not None:
            joules = max(total - (last[1] if last else 0.0), 0.0)
            self.co2e += joules / KWH * g
            self.co2e_known = True
            self.g_max = g if self.g_max is None else max(self.g_max, g)
            if self.g_last is not None and g != self.g_last[0]:
                # the step fell in this read's interval or the one before (the reader's
                # refresh that carried it came late): either one's energy at either value
                self.g_step += (joules + self.g_last[1]) / KWH * abs(g - self.g_last[0])
            self.g_last = (g, joules)
        if self.co2e_known:
            out["co2e_grams"] = round(self.co2e, 6)
        self.total = (t, total, set(parts))
        return out

    def node_summary(self):
        """Summary fields: the GPUs' (their energy interpolated to the job's end), and the
        job's CPU and DRAM energy and network counters up to the reader's first refresh
        after its end -- waited for (about half a period), so its last moments are in."""
        inner = getattr(self.main, "gpu_summary", None)
        out = inner() if inner else {"gpu_samples_missing": None}
        e, net = self.energy, self.net
        self._wait_end()
        if out.get("gpu_energy_joules") is not None:
            self.gpu_joules = out["gpu_energy_joules"]
        fields = self._energy(self.t_end or self.clock())
        fields.pop("power_watts", None)
        out.update(fields)
        parts = self._parts()
        out.update(bounds(parts, out, e, self.t_end, getattr(self.main, "energy_method", None)))
        if "energy_error_joules" in out and self.co2e_known and self.g_max is not None:
            out["co2e_error_grams"] = round(
                out["energy_error_joules"] / KWH * self.g_max + self.g_step, 6)
        lacks = [f"no {what}: {why}" for what, why in (("gpu", self._gpu_lacks()),
                                                       ("cpu/dram", e.why)) if why]
        if parts or lacks:
            out["energy_parts"] = "; ".join(
                [",".join(p for p in ("gpu", "cpu", "dram") if p in parts)] + lacks
            ).strip("; ")[:256]
        if parts and self.co2e_known:
            total = sum(parts.values())
            out["carbon_intensity"] = round(self.co2e / (total / KWH), 1) if total \
                else e.intensity
        if e.share is not None:
            out["energy_share"] = e.share
            out["energy_missing_seconds"] = round(e.missing, 3)
        if net is not None and net.last:
            out.update(zip(NET_FIELDS, net.last))
        out["net_source"] = (net.source() if net else self.net_why)[:256]
        return out

    def job_started(self, t0):
        started = getattr(self.main, "job_started", None)
        if started is not None:
            started(t0)

    def _wait_end(self):
        """Take the reader's refreshes up to one after the job's end, or give up after 1.5
        periods."""
        e, net = self.energy, self.net
        want_energy = e.prev is not None and e.why is None
        want_net = net is not None and net.gen is not None
        if self.t_end is None or not (want_energy or want_net):
            return
        period = (e.reading or {}).get("period") or (net and net.period) or 1.0
        deadline = self.t_end + 1.5 * period + 0.2
        while True:
            if want_energy and not e.covers(self.t_end):
                r = e.fresh()
                if r is not None and r is not e.reading:
                    e.take(r)
            if want_net and not net.covers(self.t_end):
                net.read()
            done = (not want_energy or e.covers(self.t_end)) and \
                (not want_net or net.covers(self.t_end))
            if done or self.clock() >= deadline:
                break
            time.sleep(min(0.05, period / 4))
        if want_energy and not e.covers(self.t_end):
            self._warn_once("end", "no energy reading after the job ended: its CPU and "
                            "DRAM energy run to the last one before")

    def _gpu_lacks(self):
        """Why the job's GPUs give no energy, where it has GPUs that do not."""
        devices = getattr(self.main, "devices", None)
        if not devices or self.gpu_joules is not None:
            return None
        energy = getattr(self.main, "energy", None)
        if energy is None:
            return "MIG slices have no energy counter of their own"
        return energy.lost or "no energy reading of its GPUs"

    def __getattr__(self, name):       # alive(), pids(), gpu_summary() ...: the main probe's
        return getattr(self.main, name)

    def close(self):
        self.main.close()
        self.energy.close()
        if self.net is not None:
            self.net.close()
