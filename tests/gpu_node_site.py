"""A node with a GPU reader, for the tests: a recorded NVML (tests/fixtures/gpu), the real
`jobmon gpu-reader` publishing it, device nodes /dev/nvidiaN made with mknod in a private
directory, and `jobmon run` jobs pointed at them. Needs root (mknod, and the directory
chain the job side trusts must be root's)."""
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time

from helpers import JOBMON, as_user, fixture


class GpuNode:
    def __init__(self, recording="h100x2.json", reader_user=None):
        # root-owned, 0755, in sticky /tmp: a chain the job side trusts (see gpu_published)
        self.base = tempfile.mkdtemp(prefix="jobmon-gpu-test-")
        os.chmod(self.base, 0o755)
        self.dir = os.path.join(self.base, "gpu")
        os.mkdir(self.dir, 0o755)
        if reader_user:
            import pwd
            pw = pwd.getpwnam(reader_user)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.reader_user = reader_user
        self.dev = os.path.join(self.base, "dev")
        os.mkdir(self.dev, 0o755)
        with open(fixture("gpu", recording)) as f:
            self.rec = json.load(f)
        for d in self.rec["devices"]:         # as the driver makes them: crw-rw-rw- 195:N
            node = os.path.join(self.dev, f"nvidia{d['minor']}")
            os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(195, d["minor"]))
            os.chmod(node, 0o666)
        self.recording = os.path.join(self.base, "recording.json")
        self.write()
        self.reader = None

    @property
    def file(self):
        return os.path.join(self.dir, "gpus.json")

    def write(self):
        """The recording, replaced whole (the reader may be reading it)."""
        tmp = self.recording + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.rec, f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.recording)

    def set_procs(self, gpu, procs, mig=None):
        """procs: [(pid, bytes)] now on GPU index `gpu` (or its MIG device index `mig`)."""
        d = self.rec["devices"][gpu]
        target = d if mig is None else d["mig_devices"][mig]
        gi, ci = (0xFFFFFFFF, 0xFFFFFFFF) if mig is None else (target["gi"], target["ci"])
        target["processes"] = [[pid, used, gi, ci] for pid, used in procs]
        self.write()

    def start(self, period=0.2):
        argv = [JOBMON, "gpu-reader", f"--dir={self.dir}", f"--recorded={self.recording}",
                f"--period={period}"]
        if self.reader_user:
            argv = as_user(argv, self.reader_user)
        self.reader = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
        self.wait_published()
        return self

    def wait_published(self, after_seq=0, timeout=15):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            assert self.reader is None or self.reader.poll() is None, self.reader.stderr.read()
            try:
                snap = load_snapshot(self.file)
                if snap["seq"] > after_seq:
                    return snap
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        raise AssertionError("the GPU reader published nothing")

    def snapshot(self):
        return load_snapshot(self.file)

    def stop(self):
        if self.reader and self.reader.poll() is None:
            self.reader.terminate()
            self.reader.wait(10)

    def env(self, **extra):
        env = dict(os.environ, JOBMON_GPU="node", JOBMON_GPU_DIR=self.dir,
                   JOBMON_GPU_DEV=self.dev)
        env.pop("CUDA_VISIBLE_DEVICES", None)
        env.update(extra)
        return env

    def job(self, tmp, cmd, env=None, wrap=(), interval=0.1, **popen):
        """`jobmon run` of cmd, started (Popen); finish it with done()."""
        out = os.path.join(tmp, "samples.jsonl")
        summary = os.path.join(tmp, "summary.json")
        argv = list(wrap) + [JOBMON, "run", f"--interval={interval}", f"--out={out}",
                             f"--summary={summary}", "--store=none", "--"] + list(cmd)
        p = subprocess.Popen(argv, env=env or self.env(), stderr=subprocess.PIPE, text=True,
                             **popen)
        return Job(p, out, summary)

    def close(self):
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


class Job:
    def __init__(self, p, out, summary):
        self.p, self.out, self.summary_path = p, out, summary

    def done(self, timeout=60):
        _, self.stderr = self.p.communicate(timeout=timeout)
        assert self.p.returncode == 0, self.stderr
        with open(self.out) as f:
            self.samples = [json.loads(line) for line in f]
        with open(self.summary_path) as f:
            self.summary = json.load(f)
        return self


def load_snapshot(path):
    """The published JSON lines as one dict: the header, with "gpus" the GPU lines."""
    with open(path, "rb") as f:
        lines = f.read().splitlines()
    snap = json.loads(lines[0])
    snap["gpus"] = [json.loads(line) for line in lines[1:]]
    return snap


def wait_for_file(path, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(path) as f:
                text = f.read()
            if text.strip():
                return text.strip()
        except OSError:
            pass
        time.sleep(0.02)
    raise AssertionError(f"{path} never written")


# a job that tells its pid, then runs `seconds`
TELL_PID = ("import os, sys, time\n"
            "open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\n"
            "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
            "time.sleep(float(sys.argv[2]))\n")
