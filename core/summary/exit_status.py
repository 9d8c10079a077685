"""A job's exit as the summary holds it: exit_code or signal, from a wait status."""
import os

# Linux's largest signal number (SIGRTMAX): a "signal" beyond it is no signal (a
# scheduler may report its out-of-memory kill as 125, its SIG_OOM 253 & 0x7f)
MAX_SIGNAL = 64


def exit_fields(status):
    """exit_code / signal from a wait status (None: unknown; a status whose signal number
    no Linux signal has gives neither -- the scheduler's record says what it was)."""
    if status is None:
        return {"exit_code": None, "signal": None}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return {"exit_code": None, "signal": sig if sig <= MAX_SIGNAL else None}
    return {"exit_code": os.WEXITSTATUS(status), "signal": None}


# the end-of-job figures of its exit, declared (jobmon.metrics.declared)
FIGURES = (
    {"name": "exit_code", "unit": "", "range": "status", "method": "exact",
     "meaning": "exit code of the command, null if it died by a signal"},
    {"name": "signal", "unit": "", "range": "status", "method": "exact",
     "meaning": "signal that killed the command, null if it exited"},
)
