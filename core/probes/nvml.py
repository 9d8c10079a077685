"""GPU metrics through NVML (libnvidia-ml, the NVIDIA driver's own library), via ctypes:
no Python package, nothing loaded on a node without an NVIDIA driver.

`Nvml` is used by the node reader (jobmon.node, outside jobs). `GpuProbe` loads NVML
inside the job's sampler (JOBMON_GPU=nvml), at ~19 MiB of the job's memory; the default
is the node reader's published file (probes/gpu_node.py), which costs the job nothing.

GPU use is added to the main probe's readings (cgroup or procfs), so `GpuProbe` wraps it:
the main probe says which processes are the job's, NVML says what they hold on the GPUs.

Which GPUs are the job's: those in CUDA_VISIBLE_DEVICES (indices or GPU-/MIG- UUIDs,
as the schedulers set it), else every GPU of the node.
"""
import ctypes
import os
import time

NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_SIZE = 7
# usedGpuMemory when NVML cannot tell (no permission, some MIG and vGPU set-ups)
NVML_VALUE_NOT_AVAILABLE = (1 << 64) - 1
# gpuInstanceId / computeInstanceId of a process on a GPU that is not in MIG mode
NO_INSTANCE = 0xFFFFFFFF


class NvmlError(Exception):
    def __init__(self, message, rc=None):
        super().__init__(message)
        self.rc = rc


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class _PciInfo(ctypes.Structure):      # nvmlPciInfo_t (the _v3 call)
    _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint),
                ("bus", ctypes.c_uint), ("device", ctypes.c_uint),
                ("pciDeviceId", ctypes.c_uint), ("pciSubSystemId", ctypes.c_uint),
                ("busId", ctypes.c_char * 32)]


class _Process(ctypes.Structure):       # nvmlProcessInfo_t (v2, the _v3 calls)
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


class Nvml:
    """The few NVML calls jobmon uses. The node reader (jobmon.node) calls the same
    methods on a recorded stand-in in the tests: keep the two in step."""

    def __init__(self, path="libnvidia-ml.so.1"):
        try:
            self.lib = ctypes.CDLL(path)
        except OSError as e:
            raise NvmlError(f"cannot load {path}: {e}")
        self._call("nvmlInit_v2")

    def _call(self, name, *args):
        rc = getattr(self.lib, name)(*args)
        if rc != NVML_SUCCESS:
            raise NvmlError(f"{name}: {self._error(rc)}", rc)

    def _error(self, rc):
        f = self.lib.nvmlErrorString
        f.restype = ctypes.c_char_p
        return f"{f(rc).decode()} ({rc})"

    def count(self):
        n = ctypes.c_uint()
        self._call("nvmlDeviceGetCount_v2", ctypes.byref(n))
        return n.value

    def handle(self, key):
        """A device by index (int) or UUID (str)."""
        h = ctypes.c_void_p()
        if isinstance(key, int):
            self._call("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(key), ctypes.byref(h))
        else:
            self._call("nvmlDeviceGetHandleByUUID", key.encode(), ctypes.byref(h))
        return h

    def uuid(self, h):
        buf = ctypes.create_string_buffer(96)
        self._call("nvmlDeviceGetUUID", h, buf, ctypes.c_uint(96))
        return buf.value.decode()

    def driver_version(self):
        buf = ctypes.create_string_buffer(80)
        self._call("nvmlSystemGetDriverVersion", buf, ctypes.c_uint(80))
        return buf.value.decode()

    def minor(self, h):
        """The N of /dev/nvidiaN (not always the NVML index)."""
        n = ctypes.c_uint()
        self._call("nvmlDeviceGetMinorNumber", h, ctypes.byref(n))
        return n.value

    def name(self, h):
        buf = ctypes.create_string_buffer(96)
        self._call("nvmlDeviceGetName", h, buf, ctypes.c_uint(96))
        return buf.value.decode()

    def pci_bus_id(self, h):
        p = _PciInfo()
        self._call("nvmlDeviceGetPciInfo_v3", h, ctypes.byref(p))
        return p.busId.decode()

    def memory(self, h):
        """(total, used) bytes; of the instance for a MIG device handle."""
        m = _Memory()
        self._call("nvmlDeviceGetMemoryInfo", h, ctypes.byref(m))
        return m.total, m.used

    def utilization(self, h):
        """Percent of the last sample period (1/6 s to 1 s) a kernel ran; device-wide."""
        u = _Utilization()
        self._call("nvmlDeviceGetUtilizationRates", h, ctypes.byref(u))
        return u.gpu

    def memory_used(self, h):
        return self.memory(h)[1]

    def energy_mj(self, h):
        """Energy since the driver was loaded, in mJ (Volta and later)."""
        e = ctypes.c_ulonglong()
        self._call("nvmlDeviceGetTotalEnergyConsumption", h, ctypes.byref(e))
        return e.value

    def power_limit_mw(self, h):
        """The power limit the driver enforces now, in mW: the most the device draws."""
        n = ctypes.c_uint()
        self._call("nvmlDeviceGetEnforcedPowerLimit", h, ctypes.byref(n))
        return n.value

    def process_list(self, h):
        """[(pid, GPU memory bytes or None, gpuInstanceId, computeInstanceId)] of the compute
        and graphics processes on the device (a MIG device handle: on that instance).
        None: NVML could not tell the memory. Instance ids are NO_INSTANCE outside MIG."""
        out = []
        for name in ("nvmlDeviceGetComputeRunningProcesses_v3",
                     "nvmlDeviceGetGraphicsRunningProcesses_v3"):
            n = ctypes.c_uint(0)
            rc = getattr(self.lib, name)(h, ctypes.byref(n), None)
            while rc == NVML_ERROR_INSUFFICIENT_SIZE:   # the list can grow in between
                n = ctypes.c_uint(n.value + 8)
                procs = (_Process * n.value)()
                rc = getattr(self.lib, name)(h, ctypes.byref(n), procs)
                if rc == NVML_SUCCESS:
                    out += [(p.pid, None if p.usedGpuMemory == NVML_VALUE_NOT_AVAILABLE
                             else p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId)
                            for p in procs[:n.value]]
            if rc not in (NVML_SUCCESS, NVML_ERROR_NOT_SUPPORTED):   # compute-only GPUs
                raise NvmlError(f"{name}: {self._error(rc)}", rc)
        return out

    def processes(self, h):
        """{pid: GPU memory bytes, None where NVML could not tell} on the device."""
        out = {}
        for pid, used, _gi, _ci in self.process_list(h):
            out[pid] = None if used is None or out.get(pid, 0) is None \
                else out.get(pid, 0) + used
        return out

    def mig_enabled(self, h):
        """True when the GPU is in MIG mode (False where MIG is not supported)."""
        current, pending = ctypes.c_uint(), ctypes.c_uint()
        try:
            self._call("nvmlDeviceGetMigMode", h, ctypes.byref(current), ctypes.byref(pending))
        except NvmlError as e:
            if e.rc == NVML_ERROR_NOT_SUPPORTED:
                return False
            raise
        return current.value == 1

    def mig_handles(self, h):
        """Handles of the MIG devices (compute instances) that exist on a GPU in MIG mode."""
        n = ctypes.c_uint()
        self._call("nvmlDeviceGetMaxMigDeviceCount", h, ctypes.byref(n))
        out = []
        for i in range(n.value):
            mh = ctypes.c_void_p()
            rc = self.lib.nvmlDeviceGetMigDeviceHandleByIndex(h, ctypes.c_uint(i), ctypes.byref(mh))
            if rc == NVML_SUCCESS:
                out.append(mh)
            elif rc != NVML_ERROR_NOT_FOUND:       # an empty slot
                raise NvmlError(f"nvmlDeviceGetMigDeviceHandleByIndex: {self._error(rc)}", rc)
        return out

    def instance_ids(self, mh):
        """(GPU instance id, compute instance id) of a MIG device handle."""
        gi, ci = ctypes.c_uint(), ctypes.c_uint()
        self._call("nvmlDeviceGetGpuInstanceId", mh, ctypes.byref(gi))
        self._call("nvmlDeviceGetComputeInstanceId", mh, ctypes.byref(ci))
        return gi.value, ci.value

    def close(self):
        self.lib.nvmlShutdown()


def job_devices(nvml, visible):
    """Handles of the job's GPUs: CUDA_VISIBLE_DEVICES's (None: every GPU; "": none)."""
    if visible is None:
        return [nvml.handle(i) for i in range(nvml.count())]
    out = []
    for item in visible.split(","):
        item = item.strip()
        if not item:
            continue
        if item.isdigit():
            out.append(nvml.handle(int(item)))
        elif item.startswith(("GPU-", "MIG-")):
            out.append(nvml.handle(item))
        else:
            break   # CUDA stops at the first entry it cannot parse (e.g. "NoDevFiles")
    return out


class GpuProbe:
    """The main probe's readings plus the GPU fields of jobmon.metrics. A GPU reading NVML
    refuses (not supported on this device, ...) is left out; the others still come."""

    ENERGY_EVERY = 10.0   # s; the energy counter costs ~4 ms of CPU per read (H100)

    def __init__(self, main, nvml, devices):
        self.main = main
        self.method = main.method
        self.nvml = nvml
        self.devices = devices
        self.energy0 = self._energy()
        self.energy_at = self.energy_at0 = time.monotonic()
        self.late = None         # s from the job's start to the first energy read

    energy_method = ("NVML energy counter, read by the job's own sampler at its first "
                     "read and after the job's end")

    def job_started(self, t0):
        self.late = max(self.energy_at0 - t0, 0.0)

    def _energy(self):
        try:
            return sum(self.nvml.energy_mj(h) for h in self.devices)
        except NvmlError:
            return None      # before Volta, or not allowed

    def read(self, final=False):
        values = self.main.read(final)
        values["gpu_count"] = len(self.devices)
        if not self.devices:
            return values
        try:
            values["gpu_util_percent"] = round(
                sum(self.nvml.utilization(h) for h in self.devices) / len(self.devices), 1)
        except NvmlError:
            pass
        try:
            pids = set(self.main.sampled_pids())
            used = [u for h in self.devices for pid, u in self.nvml.processes(h).items()
                    if pid in pids]
            if None not in used:      # NVML could not tell one: left out, not guessed
                values["gpu_mem_bytes"] = sum(used)
        except NvmlError:
            pass
        # energy now and then, and once the job is over (the summary's total is exact)
        now = time.monotonic()
        if self.energy0 is not None and (final or now - self.energy_at >= self.ENERGY_EVERY):
            energy = self._energy()
            if energy is not None:
                values["gpu_energy_joules"] = round((energy - self.energy0) / 1000, 3)
                self.energy_at = now
        return values

    def gpu_summary(self):
        """The bound of the GPU energy: what the GPUs may have used between the job's
        start and the first read of their counter, at their power limits."""
        out = {"gpu_samples_missing": 0}
        if self.energy0 is not None and self.late is not None and self.devices:
            try:
                watts = sum(self.nvml.power_limit_mw(h) for h in self.devices) / 1000
                out["gpu_energy_error_joules"] = round(watts * self.late, 3)
            except NvmlError:
                pass
        return out

    def __getattr__(self, name):       # alive(), pids(), tasks_peak() ...: the main probe's
        return getattr(self.main, name)

    def close(self):
        self.main.close()
        if self.nvml is not None:
            self.nvml.close()


def gpu_probe(probe, environ=os.environ):
    """probe wrapped in a GpuProbe for the job's GPUs (NvmlError when NVML fails). A job
    given no GPU (CUDA_VISIBLE_DEVICES empty) does not load NVML: it costs ~19 MiB."""
    if environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return GpuProbe(probe, None, [])
    nvml = Nvml()
    try:
        devices = job_devices(nvml, environ.get("CUDA_VISIBLE_DEVICES"))
    except NvmlError:
        nvml.close()
        raise
    return GpuProbe(probe, nvml, devices)
