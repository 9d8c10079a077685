"""Where the embedded store lives."""
import os


def store_path(env=None):
    """Where the embedded store lives: $JOBMON_STORE, else the XDG data dir."""
    env = os.environ if env is None else env
    if env.get("JOBMON_STORE"):
        return env["JOBMON_STORE"]
    base = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "jobmon", "jobmon.db")
