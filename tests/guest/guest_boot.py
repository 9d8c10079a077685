"""Boot one pure cgroup v2 guest and run the guest tests (tests/guest/inside) in it, or the
host's tests that make real cgroups (those marked cgroup_tree, host_modules()).

The guest is virtme-ng on QEMU without KVM (nested KVM hangs at kernel entry on the CI
machines): it boots this machine's own root filesystem read-only, with a kernel image from
/boot, and so sees the repository and its .venv at the same paths. The kernel mounts pure
cgroup v2 with every controller; no systemd runs, so the tests shape the tree themselves.
Results come back through a shared directory (--rwdir): pytest's junit XML and its log.
An ext4 image attached with --disk gives io.stat a real block device to count.
"""
import glob
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
INSIDE = os.path.join(HERE, "inside")
REPO = os.path.dirname(os.path.dirname(HERE))
TESTS = os.path.dirname(HERE)
HOST_MARK = "cgroup_tree"   # a host test that makes real cgroups: the guest runs it too
VENV_BIN = os.path.dirname(sys.executable)   # the guest sees the same .venv at this path
FLAG = "JOBMON_GUEST"        # set inside the guest: the shared directory for results
DISK_LABEL = "jobmon-io"     # the ext4 image's label; the guest finds it by this
DISK_MIB = 256
LIMIT = 540                  # seconds for a whole guest, boot included, unless told more
GUEST_PYTEST_LIMIT = LIMIT - 90   # inside: leaves time to boot and to write the results
BOOT_ALLOWANCE = 90          # of a longer limit: what the pytest inside does not get
runs = []                    # the GuestRuns of this session, for the terminal summary


def in_guest():
    """True inside a guest this module booted: root, the flag set, pure cgroup v2."""
    if not os.environ.get(FLAG) or os.geteuid() != 0:
        return False
    with open("/proc/self/mountinfo") as f:
        fstypes = {line.partition(" - ")[2].split(" ")[0] for line in f}
    return "cgroup2" in fstypes and "cgroup" not in fstypes


def skip_outside_guest(items, directory, booted_by):
    """Guest-side tests collected on the host are skipped, never run there."""
    import pytest
    if in_guest():
        return
    skip = pytest.mark.skip(reason=f"runs only in the cgroup v2 guest ({booted_by})")
    for item in items:
        if str(item.path).startswith(directory + os.sep):
            item.add_marker(skip)


def host_modules():
    """The host's test modules (tests/test_*.py) that mark a test HOST_MARK: paths. The guest
    that runs them collects only the marked tests of each (tests/conftest.py)."""
    out = []
    for path in sorted(glob.glob(os.path.join(TESTS, "test_*.py"))):
        with open(path, encoding="utf-8") as f:
            if HOST_MARK in f.read():
                out.append(path)
    return out


def module_key(path_or_classname):
    """The name a test module's results go by: its name below tests/guest (test_oom), a host
    module's with its directory (tests/test_oom), so the two never mix."""
    parts = path_or_classname.replace(os.sep, ".").removesuffix(".py").split(".")
    i = next((n for n, p in enumerate(parts) if p.startswith("test_")), len(parts) - 1)
    return parts[i] if "guest" in parts[:i] else "tests/" + parts[i]


def kernel_image():
    """The newest kernel image in /boot (a Debian linux-image package), or None."""
    images = glob.glob("/boot/vmlinuz-*")
    return max(images, key=os.path.getmtime) if images else None


def _static_elf(path):
    """True for an ELF executable without a program interpreter (statically linked)."""
    import struct
    try:
        with open(os.path.realpath(path), "rb") as f:
            head = f.read(64)
            if head[:5] != b"\x7fELF\x02":
                return False
            phoff, = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return False
    return all(struct.unpack_from("<I", table, i * phentsize)[0] != 3 for i in range(phnum))


def vng():
    return shutil.which("vng", path=VENV_BIN + os.pathsep + os.environ.get("PATH", ""))


def missing():
    """One line saying what this machine lacks to boot the guest, or None."""
    lacks = []
    if not vng():
        lacks.append("vng (pip install virtme-ng)")
    if not shutil.which("qemu-system-x86_64"):
        lacks.append("qemu-system-x86_64 (Debian qemu-system-x86)")
    k = kernel_image()
    if not k:
        lacks.append("a kernel image in /boot (Debian linux-image-amd64)")
    elif not os.access(k, os.R_OK):
        lacks.append(f"read access to {k} (run as root)")
    busybox = shutil.which("busybox")
    if not busybox or not _static_elf(busybox):
        lacks.append("a static busybox for the guest's initramfs (Debian busybox-static)")
    if not shutil.which("mkfs.ext4"):
        lacks.append("mkfs.ext4 (Debian e2fsprogs)")
    if os.geteuid() != 0:
        lacks.append("root")
    return ("cannot boot the cgroup v2 guest: missing " + ", ".join(lacks)) if lacks else None


def make_disk(workdir):
    """A sparse ext4 image, inode tables written now (no lazy-init writes in the guest)."""
    img = os.path.join(workdir, "io.img")
    with open(img, "wb") as f:
        f.truncate(DISK_MIB << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-L", DISK_LABEL,
                    "-E", "lazy_itable_init=0,lazy_journal_init=0", img],
                   check=True, timeout=60, capture_output=True)
    return img


def guest_command(rw, pytest_args, inside=INSIDE, pytest_limit=GUEST_PYTEST_LIMIT):
    """What the guest runs: note the time it got there, run pytest on `inside` (a
    directory of guest tests, or a list of test modules), leave its status."""
    q = shlex.quote
    paths = [inside] if isinstance(inside, str) else list(inside)
    pytest = [os.path.join(VENV_BIN, "python"), "-m", "pytest", "-p", "no:cacheprovider",
              "-p", "no:hypothesispytest", "-o", "faulthandler_timeout=300", "-rA",
              f"--junitxml={rw}/junit.xml", "-o", "junit_logging=all"] + \
        [os.path.relpath(p, REPO) for p in paths] + list(pytest_args)
    return (f"cat /proc/uptime > {q(rw)}/started; cd {q(REPO)} && "
            f"{FLAG}={q(rw)} PYTHONDONTWRITEBYTECODE=1 "
            # SIGINT at the limit: pytest stops and still writes the results it has
            f"timeout -s INT -k 20 {pytest_limit} {' '.join(q(a) for a in pytest)} "
            f"> {q(rw)}/pytest.log 2>&1; echo $? > {q(rw)}/rc")


class GuestRun:
    """What one guest run gave: per-module test cases, timings, and the logs."""

    def __init__(self, workdir, what="guest tests"):
        self.workdir = workdir
        self.what = what         # which tests, for the timing line
        self.rw = os.path.join(workdir, "rw")
        self.problem = None      # why there are no results (boot failure, time-out)
        self.cases = {}          # module name -> [Case]
        self.collected = {}      # module name -> [test names the guest's pytest collected]
        self.boot_s = self.total_s = self.tests_s = None

    def file(self, name):
        try:
            with open(os.path.join(self.rw, name), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def not_run(self, module):
        """The tests of `module` the guest collected but gave no result for (its pytest
        stopped at its time limit before it got to them)."""
        done = {c.name for c in self.cases.get(module, [])}
        return [n for n in self.collected.get(module, []) if n not in done]

    def console_tail(self, n=40):
        with open(os.path.join(self.workdir, "console.log"), errors="replace") as f:
            return "".join(f.readlines()[-n:])

    def timing_line(self):
        counts = {}
        for cases in self.cases.values():
            for c in cases:
                counts[c.outcome] = counts.get(c.outcome, 0) + 1
        what = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no results"
        fmt = lambda v: "?" if v is None else f"{v:.0f} s"  # noqa: E731
        return (f"cgroup v2 guest: boot {fmt(self.boot_s)}, {self.what} {fmt(self.tests_s)}, "
                f"total {fmt(self.total_s)} ({what})")


class Case:
    def __init__(self, name, outcome, message="", output=""):
        self.name, self.outcome, self.message, self.output = name, outcome, message, output


def parse_junit(path):
    """{module: [Case]} from pytest's junit XML (xunit2); module as module_key() names it."""
    out = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        # classname is "tests.guest.inside.test_x", "tests.test_x" (or ".Class" below it)
        module = module_key(tc.get("classname", ""))
        outcome, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            el = tc.find(kind)
            if el is not None:
                outcome = {"failure": "failed", "error": "error"}.get(kind, "skipped")
                if kind == "skipped" and el.get("type") == "pytest.xfail":
                    outcome = "xfailed"
                message = (el.get("message") or "") + "\n" + (el.text or "")
                break
        output = "\n".join(e.text or "" for e in tc if e.tag in ("system-out", "system-err"))
        out.setdefault(module, []).append(Case(tc.get("name"), outcome, message, output))
    return out


def _group_alive(p):
    p.poll()   # reaps vng once it is gone, so its zombie does not count
    try:
        os.killpg(p.pid, 0)
        return True
    except ProcessLookupError:
        return False


def _stop(p):
    """End vng and all of its process group (virtme-run, QEMU), by the group's id."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _group_alive(p):
            break
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + 5
        while _group_alive(p) and time.monotonic() < deadline:
            time.sleep(0.1)
    p.wait()


def run(workdir=None, pytest_args=(), limit=LIMIT, inside=INSIDE, what="guest tests"):
    """Boot the guest, run the guest tests (those in `inside`: a directory, or a list of
    test modules), return a GuestRun. Never leaves QEMU behind."""
    workdir = workdir or tempfile.mkdtemp(prefix="jobmon-guest-")
    r = GuestRun(workdir, what)
    runs.append(r)
    os.makedirs(r.rw, exist_ok=True)
    os.chmod(r.rw, 0o1777)
    disk = make_disk(workdir)
    pytest_limit = limit - BOOT_ALLOWANCE if limit > LIMIT else GUEST_PYTEST_LIMIT
    argv = [vng(), "--disable-kvm", "-r", kernel_image(), "--memory", "2G", "--cpus", "2",
            "--rwdir", r.rw, "--disk", disk,
            "--exec", guest_command(r.rw, pytest_args, inside, pytest_limit)]
    env = dict(os.environ, PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""))
    t0 = time.time()
    with open(os.path.join(workdir, "console.log"), "wb") as console:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=console,
                             stderr=subprocess.STDOUT, cwd=REPO, env=env,
                             start_new_session=True)
        try:
            p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            r.problem = f"the guest did not finish within {limit} s"
        finally:
            _stop(p)
    r.total_s = time.time() - t0
    started = os.path.join(r.rw, "started")
    if os.path.exists(started):
        r.boot_s = os.path.getmtime(started) - t0
    for nodeid in r.file("collected").splitlines():
        path, _, name = nodeid.partition("::")
        r.collected.setdefault(module_key(path),
                               []).append(name.split("::")[-1])
    junit = os.path.join(r.rw, "junit.xml")
    if os.path.exists(junit):
        r.cases = parse_junit(junit)
        suite = ET.parse(junit).getroot().find("testsuite")
        r.tests_s = float(suite.get("time", 0)) if suite is not None else None
    elif r.problem is None:
        r.problem = ("the guest left no results (exit status of its pytest: "
                     f"{r.file('rc').strip() or 'none'})" if r.boot_s else
                     "the guest did not boot")
    return r


if __name__ == "__main__":
    # python tests/guest/guest_boot.py [--host] [PYTEST ARGS]: run the guest tests, or with
    # --host the host's tests marked cgroup_tree
    why = missing()
    if why:
        sys.exit(why)
    args = sys.argv[1:]
    host = args[:1] == ["--host"]
    res = run(pytest_args=args[1:] if host else args,
              inside=host_modules() if host else INSIDE,
              what="host tests" if host else "guest tests")
    print(res.file("pytest.log") or res.console_tail())
    print(res.timing_line(), f"(logs in {res.workdir})")
    sys.exit(1 if res.problem or any(c.outcome in ("failed", "error")
                                     for cs in res.cases.values() for c in cs) else 0)
