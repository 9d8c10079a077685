"""The few bpf(2) commands the node reader uses, through ctypes: no compiler, no library,
nothing but the kernel's own interface (include/uapi/linux/bpf.h). Each attribute block
is packed exactly as the kernel's `union bpf_attr` lays out that command's fields; the
rest of the block is zero, as the kernel requires.

An assembler for the few instructions the node reader's programs use is at the end: an
instruction is 8 bytes (opcode, dst and src registers, 16-bit offset, 32-bit immediate).
"""
import ctypes
import os
import platform
import struct

# the syscall's number (asm/unistd*.h)
SYS_BPF = {"x86_64": 321, "aarch64": 280, "ppc64le": 361, "s390x": 351,
           "riscv64": 280}.get(platform.machine())

# commands
MAP_CREATE, MAP_LOOKUP_ELEM, MAP_DELETE_ELEM, MAP_GET_NEXT_KEY = 0, 1, 3, 4
MAP_LOOKUP_BATCH = 24
PROG_LOAD, PROG_TEST_RUN, LINK_CREATE = 5, 10, 28
# map, program and attach types, flags
MAP_PERCPU_HASH = 5
NO_PREALLOC = 1
PROG_CGROUP_SKB = 8
CGROUP_INET_INGRESS, CGROUP_INET_EGRESS = 0, 1
ATTR_SIZE = 128       # larger than every block used here; the kernel wants the tail zero
LOG_SIZE = 1 << 20    # the verifier's log, asked for only when it refuses a program


class BpfError(OSError):
    pass


_libc = None


def _syscall(cmd, attr, errors=None):
    """(result, the attributes as the kernel left them). A failure raises BpfError, or
    where its errno is in `errors` gives (-errno, attributes): a batch's last call fails
    with ENOENT and says in its attributes how many it read."""
    global _libc
    if SYS_BPF is None:
        raise BpfError(0, f"bpf(2) not known on {platform.machine()}")
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(attr.ljust(ATTR_SIZE, b"\0"), ATTR_SIZE)
    r = _libc.syscall(ctypes.c_long(SYS_BPF), ctypes.c_int(cmd), buf, ctypes.c_uint(ATTR_SIZE))
    if r < 0:
        e = ctypes.get_errno()
        if errors and e in errors:
            return -e, buf
        raise BpfError(e, os.strerror(e))
    return r, buf


def _addr(buf):
    return ctypes.addressof(buf)


def _name(text):
    return text.encode()[:15].ljust(16, b"\0")


def map_create(map_type, key_size, value_size, max_entries, flags=0, name=""):
    """A map's file descriptor."""
    attr = struct.pack("<7I16s", map_type, key_size, value_size, max_entries, flags, 0, 0,
                       _name(name))
    return _syscall(MAP_CREATE, attr)[0]


def prog_load(prog_type, insns, expected_attach_type=0, name="", license="GPL"):
    """A program's file descriptor, once the kernel's verifier accepted `insns` (bytes).
    A refusal raises BpfError with the verifier's log in its message."""
    code = ctypes.create_string_buffer(insns, len(insns))
    lic = ctypes.create_string_buffer(license.encode())

    def load(log_level, log):
        attr = struct.pack("<IIQQIIQII16sII", prog_type, len(insns) // 8, _addr(code),
                           _addr(lic), log_level, len(log) if log else 0,
                           _addr(log) if log else 0, 0, 0, _name(name), 0,
                           expected_attach_type)
        return _syscall(PROG_LOAD, attr)[0]
    try:
        return load(0, None)
    except BpfError as e:
        log = ctypes.create_string_buffer(LOG_SIZE)
        try:
            return load(1, log)      # loaded the second time: nothing to explain
        except BpfError as again:
            text = log.value.decode("utf-8", "replace").strip()
            raise BpfError(again.errno, f"{again.strerror}: the kernel's verifier refused "
                                        f"the program: {text[-2000:]}" if text else
                           again.strerror) from e


def link_create(prog_fd, target_fd, attach_type):
    """Attach a program to a cgroup through a link: the program is detached when the link's
    last descriptor closes, so a reader that dies leaves nothing attached. (Linux 5.7)"""
    return _syscall(LINK_CREATE, struct.pack("<4I", prog_fd, target_fd, attach_type, 0))[0]


def _elem(cmd, map_fd, key, value_or_next):
    attr = struct.pack("<IIQQQ", map_fd, 0, _addr(key),
                       _addr(value_or_next) if value_or_next is not None else 0, 0)
    return _syscall(cmd, attr)


def map_keys(map_fd, key_size):
    """Every key of a hash map (keys that vanish meanwhile are skipped by the kernel)."""
    keys = []
    key = ctypes.create_string_buffer(key_size)
    nxt = ctypes.create_string_buffer(key_size)
    first = True
    while True:
        attr = struct.pack("<IIQQQ", map_fd, 0, 0 if first else _addr(key), _addr(nxt), 0)
        try:
            _syscall(MAP_GET_NEXT_KEY, attr)
        except BpfError as e:
            if e.errno == 2:      # ENOENT: no more keys
                return keys
            raise
        keys.append(nxt.raw)
        ctypes.memmove(key, nxt, key_size)
        first = False


def map_items(map_fd, key_size, value_size, chunk=4096):
    """Every (key, value bytes) of a hash map, `chunk` a system call (BPF_MAP_LOOKUP_BATCH,
    Linux 5.6): a full map of 16,384 counters in a few calls rather than 32,768. A per-CPU
    map's value_size is its values of every CPU, each rounded up to 8 bytes."""
    keys = ctypes.create_string_buffer(key_size * chunk)
    values = ctypes.create_string_buffer(value_size * chunk)
    token_in, token_out = ctypes.create_string_buffer(8), ctypes.create_string_buffer(8)
    out, first = [], True
    while True:
        attr = struct.pack("<QQQQIIQQ", 0 if first else _addr(token_in), _addr(token_out),
                           _addr(keys), _addr(values), chunk, map_fd, 0, 0)
        r, buf = _syscall(MAP_LOOKUP_BATCH, attr, errors=(2,))   # ENOENT: the last batch
        n = struct.unpack_from("<I", buf.raw, 32)[0]              # batch.count
        raw_k, raw_v = keys.raw, values.raw
        out += [(raw_k[i * key_size:(i + 1) * key_size],
                 raw_v[i * value_size:(i + 1) * value_size]) for i in range(n)]
        if r < 0:
            return out
        ctypes.memmove(token_in, token_out, 8)
        first = False


def map_lookup(map_fd, key, value_size):
    """The value bytes of `key`, or None if it is not there."""
    k = ctypes.create_string_buffer(key, len(key))
    v = ctypes.create_string_buffer(value_size)
    try:
        _elem(MAP_LOOKUP_ELEM, map_fd, k, v)
    except BpfError as e:
        if e.errno == 2:
            return None
        raise
    return v.raw


def map_delete(map_fd, key):
    k = ctypes.create_string_buffer(key, len(key))
    try:
        _elem(MAP_DELETE_ELEM, map_fd, k, None)
    except BpfError as e:
        if e.errno != 2:
            raise


def test_run(prog_fd, data, repeat):
    """(return value, mean ns per run) of the program run `repeat` times by the kernel on
    a packet of `data` (BPF_PROG_TEST_RUN; the kernel gives it a socket of the caller's
    cgroup)."""
    buf = ctypes.create_string_buffer(data, len(data))
    attr = struct.pack("<IIIIQQII", prog_fd, 0, len(data), 0, _addr(buf), 0, repeat, 0)
    _r, out = _syscall(PROG_TEST_RUN, attr)
    retval, duration = struct.unpack_from("<I", out.raw, 4)[0], \
        struct.unpack_from("<I", out.raw, 36)[0]
    return retval, duration


def possible_cpus(path="/sys/devices/system/cpu/possible"):
    """How many CPUs a per-CPU map holds values for: the kernel's possible CPUs ("0-63",
    "0,2-5")."""
    with open(path) as f:
        text = f.read().strip()
    n = 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        n = max(n, int(hi or lo) + 1)
    return n


# --- an assembler for the instructions used here (Documentation/bpf/instruction-set.rst) ---

R0, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10 = range(11)
PSEUDO_MAP_FD = 1


class Asm:
    """Instructions with labels: jumps name a label, resolved by code()."""

    def __init__(self):
        self.insns = []      # [opcode, dst, src, off or label, imm]
        self.labels = {}

    def _op(self, code, dst=0, src=0, off=0, imm=0):
        self.insns.append([code, dst, src, off, imm])

    def label(self, name):
        self.labels[name] = len(self.insns)

    def mov(self, dst, src):               # dst = src (64-bit)
        self._op(0xBF, dst, src)

    def mov_imm(self, dst, imm):            # dst = imm
        self._op(0xB7, dst, imm=imm)

    def add_imm(self, dst, imm):            # dst += imm (64-bit)
        self._op(0x07, dst, imm=imm)

    def load32(self, dst, src, off):        # dst = *(u32 *)(src + off)
        self._op(0x61, dst, src, off)

    def store64(self, dst, off, src):       # *(u64 *)(dst + off) = src
        self._op(0x7B, dst, src, off)

    def store64_imm(self, dst, off, imm):   # *(u64 *)(dst + off) = imm
        self._op(0x7A, dst, off=off, imm=imm)

    def atomic_add64(self, dst, off, src):  # lock *(u64 *)(dst + off) += src
        self._op(0xDB, dst, src, off, 0x00)

    def load_map_fd(self, dst, fd):         # dst = the map (two instructions)
        self._op(0x18, dst, PSEUDO_MAP_FD, imm=fd)
        self._op(0x00)

    def jump_if_zero(self, reg, label):     # if reg == 0 goto label
        self._op(0x15, reg, off=label)

    def jump_if_not_zero(self, reg, label):
        self._op(0x55, reg, off=label)

    def jump(self, label):
        self._op(0x05, off=label)

    def call(self, helper):
        self._op(0x85, imm=helper)

    def exit(self):
        self._op(0x95)

    def code(self):
        out = bytearray()
        for pc, (op, dst, src, off, imm) in enumerate(self.insns):
            if isinstance(off, str):
                off = self.labels[off] - pc - 1
            out += struct.pack("<BBhi", op, (src << 4) | dst, off, imm)
        return bytes(out)
