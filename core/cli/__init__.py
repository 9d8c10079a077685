"""The `jobmon` command line (typer). Runs outside jobs: heavy imports are fine here.

Nothing below the CLI imports it; `jobmon run` reaches jobmon.job.runner without it (see
jobmon.__main__), so the per-job path never loads typer or rich.
"""
from .commands import app

__all__ = ("app",)
