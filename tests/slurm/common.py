"""What the cluster modules share: where Slurm's programs are, the test user, job states."""
import shutil

TEST_USER = "jobmon-test"
SBIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# states after which a job (or step) never changes again
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
            "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED")


class ClusterError(RuntimeError):
    pass


def which(exe):
    """Full path of a Slurm/munge/MariaDB program (the daemons' ones live in sbin)."""
    return shutil.which(exe, path=SBIN_PATH) or exe
