"""A recorded NVML: the calls of probes.nvml.Nvml, answered from a recording (JSON) instead
of a GPU. The reader runs on it unchanged, so tests drive the real reader and the real job
side without a GPU; `jobmon gpu-reader --record FILE` writes one from a node's real NVML.

A recording: {"driver_version": "...", "devices": [device, ...]}, a device:
  uuid, minor, name, pci_bus_id         as NVML gives them
  memory: [total, used]                 bytes
  utilization: percent                  nvmlUtilization_t.gpu
  energy_mj, power_mw                   the counter when recorded, and how fast it rose
  processes: [[pid, usedGpuMemory, gpuInstanceId, computeInstanceId], ...]
                                        nvmlProcessInfo_t as NVML fills it (usedGpuMemory
                                        2**64-1: not available; instance ids 2**32-1: no MIG)
  mig: bool, mig_devices: [{uuid, gi, ci, memory, utilization, energy_mj, processes}]
Any value may instead be the name of an NVML error ("NOT_SUPPORTED", "NO_PERMISSION",
"NOT_FOUND", "GPU_IS_LOST", "UNKNOWN"): the call raises it, as NVML would return it.
The file is read again when it changes (a test puts its job's pids in it); the energy
counter keeps rising at power_mw from the moment the source was made.
"""
import json
import os
import time

from ..probes.nvml import NVML_VALUE_NOT_AVAILABLE, NvmlError

ERRORS = {"NOT_SUPPORTED": 3, "NO_PERMISSION": 4, "NOT_FOUND": 6, "GPU_IS_LOST": 15,
          "UNKNOWN": 999}


class RecordedSource:
    def __init__(self, path, clock=time.monotonic):
        self.path = path
        self.clock = clock
        self.key = None
        self.rec = None
        self.energy = {}          # (device, mig) -> [mJ, at]
        self._load()

    def _load(self):
        st = os.stat(self.path)
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if key != self.key:
            with open(self.path, encoding="utf-8") as f:
                rec = json.load(f)     # a half-written recording raises: keep the last one
            self.rec, self.key = rec, key

    def _dev(self, h):
        dev = self.rec["devices"][h[0]]
        return dev if h[1] is None else dev["mig_devices"][h[1]]

    def _get(self, h, key):
        v = self._dev(h).get(key, "NOT_SUPPORTED")
        if isinstance(v, str) and v in ERRORS:
            raise NvmlError(f"{key}: {v}", ERRORS[v])
        return v

    def driver_version(self):
        return self.rec.get("driver_version", "recorded")

    def count(self):
        """Where a refresh starts: the recording is read again if its file changed."""
        try:
            self._load()
        except (OSError, ValueError):
            pass
        return len(self.rec["devices"])

    def handle(self, index):
        if index >= len(self.rec["devices"]):
            raise NvmlError("handle: INVALID_ARGUMENT", 2)
        return (index, None)

    def uuid(self, h):
        return self._get(h, "uuid")

    def minor(self, h):
        return self._get(h, "minor")

    def name(self, h):
        return self._get(h, "name")

    def pci_bus_id(self, h):
        return self._get(h, "pci_bus_id")

    def memory(self, h):
        total, used = self._get(h, "memory")
        return total, used

    def utilization(self, h):
        return self._get(h, "utilization")

    def energy_mj(self, h):
        """The counter, rising at the recorded power since the last call."""
        mj = self._get(h, "energy_mj")
        now = self.clock()
        e = self.energy.setdefault(h, [float(mj), now])
        e[0] += self._dev(h).get("power_mw", 0) * (now - e[1])   # mW * s = mJ
        e[1] = now
        return int(e[0])

    def process_list(self, h):
        return [(pid, None if used == NVML_VALUE_NOT_AVAILABLE else used, gi, ci)
                for pid, used, gi, ci in self._get(h, "processes")]

    def mig_enabled(self, h):
        try:
            return bool(self._get(h, "mig"))
        except NvmlError as e:       # as Nvml.mig_enabled: a GPU without MIG is not in it
            if e.rc == ERRORS["NOT_SUPPORTED"]:
                return False
            raise

    def mig_handles(self, h):
        return [(h[0], i) for i in range(len(self._dev(h).get("mig_devices") or ()))]

    def instance_ids(self, mh):
        return self._get(mh, "gi"), self._get(mh, "ci")

    def close(self):
        pass


def _value(call, *args):
    try:
        return call(*args)
    except NvmlError as e:
        for name, rc in ERRORS.items():
            if rc == e.rc:
                return name
        return "UNKNOWN"


def _processes(nvml, h):
    plist = _value(nvml.process_list, h)
    if isinstance(plist, str):
        return plist
    return [[pid, NVML_VALUE_NOT_AVAILABLE if used is None else used, gi, ci]
            for pid, used, gi, ci in plist]


def record(nvml, seconds=1.0):
    """A recording of what this node's NVML answers now (energy: two reads `seconds` apart)."""
    devices, read_at = [], []
    for i in range(nvml.count()):
        h = nvml.handle(i)
        d = {"uuid": nvml.uuid(h)}
        for key, call in (("minor", nvml.minor), ("name", nvml.name),
                          ("pci_bus_id", nvml.pci_bus_id), ("memory", nvml.memory),
                          ("utilization", nvml.utilization), ("mig", nvml.mig_enabled)):
            d[key] = _value(call, h)
        read_at.append(time.monotonic())
        d["energy_mj"] = _value(nvml.energy_mj, h)
        if isinstance(d["memory"], tuple):
            d["memory"] = list(d["memory"])
        d["processes"] = _processes(nvml, h)
        d["mig_devices"] = []
        if d["mig"] is True:
            for mh in nvml.mig_handles(h):
                gi, ci = nvml.instance_ids(mh)
                m = {"uuid": nvml.uuid(mh), "gi": gi, "ci": ci,
                     "memory": _value(nvml.memory, mh), "utilization": _value(nvml.utilization, mh),
                     "energy_mj": _value(nvml.energy_mj, mh), "processes": _processes(nvml, mh)}
                if isinstance(m["memory"], tuple):
                    m["memory"] = list(m["memory"])
                d["mig_devices"].append(m)
        devices.append(d)
    time.sleep(seconds)
    for i, d in enumerate(devices):
        if isinstance(d["energy_mj"], int):
            t = time.monotonic()
            e = nvml.energy_mj(nvml.handle(i))
            d["power_mw"] = round((e - d["energy_mj"]) / (t - read_at[i]))   # mJ/s = mW
    return {"driver_version": _value(nvml.driver_version), "recorded_at": round(time.time()),
            "devices": devices}
