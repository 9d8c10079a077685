"""A 141-byte static program that measures what a command costs, the way only a parent can.

    reaper CMD ARGS...   runs CMD as its child, waits for it, writes two struct rusage to
                         stdout (the child's from wait4, then its own), exits with its status

A process's own getrusage leaves out its exit (under emulation 5-70 ms for a Python process);
its parent's wait4 has all of it, and all it reaped. The jobs put a reaper where the only
parent would be jobmon itself (the job's top process, the escaped daemon), so the jobs' CPU
truth leaves out nothing but the reapers' own exits: a few pages each.

The code, assembled from this source (GNU as, AT&T syntax):

    _start: mov (%rsp),%rbx; lea 8(%rsp),%rbp; lea 8(%rbp,%rbx,8),%r14    # argc argv envp
            fork(); test %rax,%rax; jnz 1f
            execve(argv[1], argv + 1, envp); exit(127)                   # child
        1:  sub $320,%rsp                      # status at 0, rusage at 16 and 160
            wait4(pid, %rsp, 0, 16(%rsp)); getrusage(RUSAGE_SELF, 160(%rsp))
            write(1, 16(%rsp), 288); exit_group((status >> 8) & 255)
"""
import os
import struct
import tempfile

CODE = bytes.fromhex(
    "488b1c24488d6c24084c8d74dd08b8390000000f054885c0751e488b7d08488d75084c89f2b83b0000"
    "000f05bf7f000000b83c0000000f054881ec400100004889c74889e631d24c8d542410b83d0000000f"
    "0531ff488db424a0000000b8620000000f05bf01000000488d742410ba20010000b8010000000f058b"
    "3c24c1ef0881e7ff000000b8e70000000f05")
RUSAGE = 144   # sizeof(struct rusage) on x86-64; it starts with ru_utime, ru_stime
_path = None


def _elf(code, base=0x400000):
    """A static ELF64 executable: header, one PT_LOAD of the whole file, no exec stack."""
    entry = 64 + 2 * 56
    size = entry + len(code)
    header = struct.pack("<4sBBBBB7xHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0, 2, 62, 1,
                         base + entry, 64, 0, 0, 64, 56, 2, 0, 0, 0)
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, size, size, 0x1000)
    stack = struct.pack("<IIQQQQQQ", 0x6474E551, 6, 0, 0, 0, 0, 0, 16)
    return header + load + stack + code


def path():
    """The reaper as a file anyone may run (made once per test session)."""
    global _path
    if _path is None:
        d = tempfile.mkdtemp(prefix="jobmon-reaper-")
        os.chmod(d, 0o755)
        p = os.path.join(d, "reaper")
        with open(p, "wb") as f:
            f.write(_elf(CODE))
        os.chmod(p, 0o755)
        _path = p
    return _path


def cpu(data):
    """Seconds of CPU in the reaper's output: its child's (all of it) plus its own."""
    assert len(data) >= 2 * RUSAGE, f"reaper wrote {len(data)} bytes"
    total = 0.0
    for at in (0, RUSAGE):
        us, uu, ss, su = struct.unpack_from("<4q", data, at)
        total += us + uu / 1e6 + ss + su / 1e6
    return total
