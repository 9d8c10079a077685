"""The `jobmon` command.

`jobmon run` is the per-job path: it must start the job in milliseconds and stay small,
so it is dispatched here before the CLI framework (typer, rich) is imported. Every other
command, and `jobmon run --help`, goes through the full CLI.
"""
import os
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"] and not _wants_help(argv[1:]) and "_JOBMON_COMPLETE" not in os.environ:
        from .job.runner import main as run
        return run(argv[1:])
    from .cli import app
    return app(args=argv, prog_name="jobmon")


def _wants_help(args):
    before = args[:args.index("--")] if "--" in args else args
    return "--help" in before or "-h" in before or not args


if __name__ == "__main__":
    sys.exit(main())
