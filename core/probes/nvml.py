"""GPU metrics through NVML (libnvidia-ml, the NVIDIA driver's own library), via ctypes:
no Python package, nothing loaded on a node without an NVIDIA driver.

GPU use is added to the main probe's readings (cgroup or procfs), so `GpuProbe` wraps it:
the main probe says which processes are the job's, NVML says what they hold on the GPUs.

Which GPUs are the job's: those in CUDA_VISIBLE_DEVICES (indices or GPU-/MIG- UUIDs,
as HTCondor and Slurm set it), else every GPU of the node.
"""
import ctypes
import os
import time

NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_INSUFFICIENT_SIZE = 7


class NvmlError(Exception):
    pass


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class _Process(ctypes.Structure):       # nvmlProcessInfo_t (v2, the _v3 calls)
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


class Nvml:
    """The few NVML calls jobmon uses."""

    def __init__(self, path="libnvidia-ml.so.1"):
        try:
            self.lib = ctypes.CDLL(path)
        except OSError as e:
            raise NvmlError(f"cannot load {path}: {e}")
        self._call("nvmlInit_v2")

    def _call(self, name, *args):
        rc = getattr(self.lib, name)(*args)
        if rc != NVML_SUCCESS:
            raise NvmlError(f"{name}: {self._error(rc)}")

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

    def utilization(self, h):
        """Percent of the last sample period (1/6 s to 1 s) a kernel ran; device-wide."""
        u = _Utilization()
        self._call("nvmlDeviceGetUtilizationRates", h, ctypes.byref(u))
        return u.gpu

    def memory_used(self, h):
        m = _Memory()
        self._call("nvmlDeviceGetMemoryInfo", h, ctypes.byref(m))
        return m.used

    def energy_mj(self, h):
        """Energy since the driver was loaded, in mJ (Volta and later)."""
        e = ctypes.c_ulonglong()
        self._call("nvmlDeviceGetTotalEnergyConsumption", h, ctypes.byref(e))
        return e.value

    def processes(self, h):
        """{pid: GPU memory bytes} of the compute and graphics processes on the device."""
        out = {}
        for name in ("nvmlDeviceGetComputeRunningProcesses_v3",
                     "nvmlDeviceGetGraphicsRunningProcesses_v3"):
            n = ctypes.c_uint(0)
            rc = getattr(self.lib, name)(h, ctypes.byref(n), None)
            while rc == NVML_ERROR_INSUFFICIENT_SIZE:   # the list can grow in between
                n = ctypes.c_uint(n.value + 8)
                procs = (_Process * n.value)()
                rc = getattr(self.lib, name)(h, ctypes.byref(n), procs)
                if rc == NVML_SUCCESS:
                    for p in procs[:n.value]:
                        out[p.pid] = out.get(p.pid, 0) + p.usedGpuMemory
            if rc not in (NVML_SUCCESS, NVML_ERROR_NOT_SUPPORTED):   # compute-only GPUs
                raise NvmlError(f"{name}: {self._error(rc)}")
        return out

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
        self.energy_at = time.monotonic()

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
            pids = set(self.main.pids())
            values["gpu_mem_bytes"] = sum(
                used for h in self.devices for pid, used in self.nvml.processes(h).items()
                if pid in pids)
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
