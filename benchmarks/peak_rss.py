"""Peak RSS (VmHWM) of a command's own process, polled while it runs (for benchmarks)."""
import subprocess
import time


def peak_rss_mib(argv, env):
    p = subprocess.Popen(argv, env=env)
    peak = 0
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.05)
    return peak / 1024
