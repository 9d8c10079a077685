"""A 300-byte exec trampoline, so a job's memory peak is its own.

The kernel's per-process resident high-water mark (ru_maxrss) keeps the largest memory
a process ever had, including before it called exec. A job forked from jobmon is a copy
of jobmon's Python process (~9 MB) until it execs, so `sleep 1` would show a 9 MB peak.
Instead, jobmon's forked child execs this tiny static program, which starts the job
with clone(CLONE_PARENT | CLONE_VM | CLONE_VFORK): the job's parent is jobmon itself
(it waits for the job, forwards signals, reaps it), and the job's memory starts from
the trampoline's few pages, not from Python's. The trampoline then reports the job's
pid on a pipe and exits; jobmon reaps it and leaves its (Python-sized) peak out.

x86-64 Linux only; elsewhere, or where the kernel refuses to execute a memfd, jobmon
execs the job from its forked child directly, as before (docs/metrics.md says what the
resident peak then includes).

The code, assembled from this source (GNU as, AT&T syntax):

    argv: [name, report fd (decimal), exe, job argv 0, ..., NULL], then envp
    _start: mov (%rsp),%rbx; lea 8(%rsp),%rbp; lea 8(%rbp,%rbx,8),%r14   # argc argv envp
            mov 8(%rbp),%rsi; xor %r15d,%r15d                          # r15 = atoi(argv[1])
        1:  movzbl (%rsi),%eax; test %eax,%eax; jz 2f; sub $48,%eax
            imul $10,%r15d,%r15d; add %eax,%r15d; inc %rsi; jmp 1b
        2:  fcntl(r15, F_SETFD, FD_CLOEXEC)            # the job must not inherit the pipe
            mov 16(%rbp),%r12; lea 24(%rbp),%r13       # exe, job argv
            clone(0xc100 = CLONE_PARENT|CLONE_VFORK|CLONE_VM, stack 0, 0, 0, 0)
            test %rax,%rax; jnz 3f
            execve(r12, r13, r14)                      # child; on failure:
            write(r15, &(errno | 0x80000000), 4); exit(127)
        3:  write(r15, &eax, 4); exit_group(0)         # the job's pid, or -errno of clone
"""
import os
import struct

CODE = bytes.fromhex(
    "488b1c24488d6c24084c8d74dd08488b75084531ff0fb60685c0740f83e830456bff0a4101c748ffc6"
    "ebeab8480000004489ffbe02000000ba010000000f054c8b65104c8d6d18b838000000bf00c1000031"
    "f631d24531d24531c00f054885c0753b4c89e74c89ee4c89f2b83b0000000f05f7d80d000000808944"
    "24f8b8010000004489ff488d7424f8ba040000000f05bf7f000000b83c0000000f05894424f8b80100"
    "00004489ff488d7424f8ba040000000f0531ffb8e70000000f05")
EXEC_FAILED = 0x80000000
_BASE = 0x400000
MFD_EXEC = 0x0010   # Linux 6.3+: say the memfd is meant to be executed


def elf(code):
    """A static ELF64 executable: header, a PT_LOAD of the whole file, a non-exec stack."""
    ehsize, phsize, phnum = 64, 56, 2
    entry_off = ehsize + phsize * phnum
    size = entry_off + len(code)
    header = struct.pack("<4sBBBBB7xHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0,
                         2, 62, 1, _BASE + entry_off, ehsize, 0, 0, ehsize, phsize, phnum,
                         0, 0, 0)
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, _BASE, _BASE, size, size, 0x1000)
    stack = struct.pack("<IIQQQQQQ", 0x6474E551, 6, 0, 0, 0, 0, 0, 16)
    return header + load + stack + code


def load():
    """A sealed memfd holding the trampoline, or None where it cannot be used."""
    if os.uname().machine != "x86_64" or not hasattr(os, "memfd_create") \
            or os.execve not in os.supports_fd:
        return None
    flags = os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING
    try:
        try:
            fd = os.memfd_create("jobmon-exec", flags | MFD_EXEC)
        except OSError:   # kernels before 6.3 do not know MFD_EXEC
            fd = os.memfd_create("jobmon-exec", flags)
    except OSError:
        return None
    try:
        os.write(fd, elf(CODE))
        import fcntl
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK
                    | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE)
    except OSError:
        os.close(fd)
        return None
    return fd
