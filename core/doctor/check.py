"""What every check of `jobmon doctor` shares: its answer (Check: ok / warn / fail, with
the fix) and the node under check (Node: the site file, who to check as, its tools)."""
import os
import shutil
import subprocess

from ..job import job_user_check

OK, WARN, FAIL = "ok", "warn", "fail"


class Check:
    """One line of the doctor's answer."""

    __slots__ = ("name", "status", "message", "fix")

    def __init__(self, name, status, message, fix=""):
        self.name, self.status, self.message, self.fix = name, status, message, fix

    def as_dict(self):
        return {"check": self.name, "status": self.status, "message": self.message,
                "fix": self.fix}

    def line(self):
        fix = f" -- fix: {self.fix}" if self.fix and self.status != OK else ""
        return f"{self.status:4}  {self.name:12} {self.message}{fix}"


class Node:
    """What the checks share: the site file (once read), who to check as, and how to run
    the node's tools."""

    def __init__(self, config_path=None, check_user=job_user_check.CHECK_USER,
                 shipper_user=None, env=None, timeout=30):
        from .. import config
        self.env = os.environ if env is None else env
        self.config_path = config.path_from(config_path, self.env)
        self.cfg = None                 # set by the config check when the file loads
        self.check_user = check_user
        self.shipper_user = shipper_user
        self.timeout = timeout
        self.auto = False               # the schedulers were found, not named

    def tool(self, name):
        return shutil.which(name, path=self.env.get("PATH") or os.defpath)

    def run(self, argv, env=None):
        """(exit status, stdout, stderr) of one of the node's tools."""
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout,
                               env=self.env if env is None else env)
        except (OSError, subprocess.TimeoutExpired) as e:
            return 127, "", str(e)
        return r.returncode, r.stdout, r.stderr

