"""`jobmon gpu-reader`: the node's GPU reader (a service, outside jobs)."""
import json
import logging
from typing import Optional

import typer


def register(app):
    @app.command("gpu-reader")
    def gpu_reader(
        directory: str = typer.Option("/run/jobmon-gpu", "--dir", metavar="DIR",
                                      help="Where to publish (jobs read $JOBMON_GPU_DIR, "
                                      "default /run/jobmon-gpu)."),
        period: float = typer.Option(1.0, metavar="S", min=0.05,
                                     help="Seconds between refreshes; jobs use nothing older "
                                     "than two periods."),
        recorded: Optional[str] = typer.Option(None, metavar="FILE", help="Publish a "
                                               "recording instead of asking NVML (tests, "
                                               "demos: docs/gpu.md)."),
        once: bool = typer.Option(False, "--once", help="Publish one snapshot and exit."),
        record: Optional[str] = typer.Option(None, metavar="FILE", help="Write a recording "
                                             "of this node's NVML to FILE and exit."),
        verbose: bool = typer.Option(False, "--verbose", "-v", help="Log every refresh."),
    ):
        """Read this node's GPUs through NVML and publish them for the per-job samplers.

        One reader per node, as a service user (deploy/jobmon-gpu-reader.service), so no
        job loads NVML (~19 MiB). Jobs read DIR/gpus.json, and trust it only where root
        made DIR and the reader's user alone can write it.
        """
        logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                            format="jobmon gpu-reader: %(levelname)s: %(message)s")
        from ..probes.nvml import Nvml, NvmlError
        from ..gpu.reader import GpuReader, ReaderError
        from ..gpu.recorded import RecordedSource
        from ..gpu import recorded as rec
        try:
            source = RecordedSource(recorded) if recorded else Nvml()
        except (NvmlError, OSError, ValueError) as e:
            typer.echo(f"jobmon: {e}", err=True)
            raise typer.Exit(2)
        if record:
            with open(record, "w", encoding="utf-8") as f:
                json.dump(rec.record(source), f, indent=1)
                f.write("\n")
            source.close()
            return
        try:
            reader = GpuReader(source, directory, period)
        except ReaderError as e:
            typer.echo(f"jobmon: {e}", err=True)
            raise typer.Exit(2)
        published = False
        try:
            if once:
                published = reader.refresh()
                if not published:
                    raise typer.Exit(1)
                return
            import signal
            stopping = []
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: stopping.append(1))
            logging.getLogger("jobmon.gpu").info("publishing %s every %g s", reader.path, period)
            try:
                reader.run(lambda: bool(stopping))
            except ReaderError as e:
                typer.echo(f"jobmon: {e}", err=True)
                raise typer.Exit(1)
        finally:
            reader.close(keep=once and published)
