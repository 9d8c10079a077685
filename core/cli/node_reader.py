"""`jobmon node-reader`: the node's reader of what needs root -- GPUs, RAPL energy, per-job
network counters -- published for the per-job samplers (a service, outside jobs).
`jobmon gpu-reader` is the same reader publishing GPUs only, as it did before it grew."""
import json
import logging
from typing import Optional

import typer

NODE_DIR, GPU_DIR = "/run/jobmon-node", "/run/jobmon-gpu"


def _sources(cfg, gpus, energy, network, recorded, powercap, cpu_stat, period, gpu_only):
    """The reader's sources; a typer.Exit where one that was asked for cannot start."""
    from ..node.gpus import GpuSource
    from ..probes.nvml import Nvml, NvmlError
    from ..node.recorded import RecordedSource
    log = logging.getLogger("jobmon.node")
    out = []
    if gpus:
        try:
            out.append(GpuSource(RecordedSource(recorded) if recorded else Nvml(), period))
        except (NvmlError, OSError, ValueError) as e:
            if gpu_only or recorded:
                typer.echo(f"jobmon: {e}", err=True)
                raise typer.Exit(2)
            log.info("no GPUs published: %s", e)
    if energy:
        from ..node.carbon import Intensity
        from ..node.rapl import EnergySource
        c = cfg["node_reader"]
        out.append(EnergySource(period, c["energy_share"],
                                Intensity(c["carbon_intensity"], c["carbon_intensity_file"]),
                                powercap, cpu_stat))
    if network and cfg["node_reader"]["network"]:
        from ..node.netcount import network_source
        src = network_source(period)
        if getattr(src, "why", None):
            log.warning("no per-job network counters: %s", src.why)
        out.append(src)
    return out


def _serve(directory, period, sources, once):
    from ..node.reader import NodeReader, ReaderError
    try:
        reader = NodeReader(sources, directory, period)
    except ReaderError as e:
        for s in sources:
            s.close()
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
        logging.getLogger("jobmon.node").info(
            "publishing %s in %s every %g s", ", ".join(s.file for s in sources), directory,
            period)
        try:
            reader.run(lambda: bool(stopping))
        except ReaderError as e:
            typer.echo(f"jobmon: {e}", err=True)
            raise typer.Exit(1)
    finally:
        reader.close(keep=once and published)


def register(app):
    def reader(gpu_only, directory, period, recorded, record, once, verbose, gpus, energy,
               network, powercap, cpu_stat, config_path):
        name = "gpu-reader" if gpu_only else "node-reader"
        logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                            format=f"jobmon {name}: %(levelname)s: %(message)s")
        if record:
            from ..probes.nvml import Nvml, NvmlError
            from ..node import recorded as rec
            try:
                source = rec.RecordedSource(recorded) if recorded else Nvml()
            except (NvmlError, OSError, ValueError) as e:
                typer.echo(f"jobmon: {e}", err=True)
                raise typer.Exit(2)
            with open(record, "w", encoding="utf-8") as f:
                json.dump(rec.record(source), f, indent=1)
                f.write("\n")
            source.close()
            return
        energy, network = energy and not gpu_only, network and not gpu_only
        cfg = None
        if energy or network:          # the GPUs need no site settings
            from .ship import load_config
            cfg = load_config(config_path)
        sources = _sources(cfg, gpus, energy, network, recorded, powercap, cpu_stat, period,
                           gpu_only)
        if not sources:
            typer.echo("jobmon: nothing to publish (no GPUs, energy and network off)", err=True)
            raise typer.Exit(2)
        _serve(directory, period, sources, once)

    def options(default_dir, gpu_only):
        def command(
            directory: str = typer.Option(default_dir, "--dir", metavar="DIR",
                                          help=f"Where to publish (jobs read $JOBMON_NODE_DIR, "
                                          f"default {NODE_DIR}, then {GPU_DIR})."),
            period: float = typer.Option(1.0, metavar="S", min=0.05,
                                         help="Seconds between refreshes; jobs use nothing "
                                         "older than two periods."),
            recorded: Optional[str] = typer.Option(None, metavar="FILE", help="Publish a "
                                                   "recorded NVML instead of asking NVML "
                                                   "(tests, demos: docs/gpu.md)."),
            once: bool = typer.Option(False, "--once", help="Publish once and exit."),
            record: Optional[str] = typer.Option(None, metavar="FILE", help="Write a recording "
                                                 "of this node's NVML to FILE and exit."),
            verbose: bool = typer.Option(False, "--verbose", "-v", help="Log every refresh."),
            gpus: bool = typer.Option(True, "--gpus/--no-gpus", help="GPUs through NVML "
                                      "(where a driver answers)."),
            energy: bool = typer.Option(True, "--energy/--no-energy", help="CPU and DRAM "
                                        "energy (RAPL) and the node's CPU time."),
            network: bool = typer.Option(True, "--network/--no-network", help="Per-job network "
                                         "counters (cgroup v2, BPF; [node_reader] network)."),
            powercap: str = typer.Option("/sys/class/powercap", metavar="DIR",
                                         help="The powercap tree (a recorded one in tests)."),
            cpu_stat: str = typer.Option("/proc/stat", metavar="FILE",
                                         help="The node's CPU time (a recorded one in tests)."),
            config_path: Optional[str] = typer.Option(None, "--config", metavar="PATH",
                                                      help="Site file (default "
                                                      "$JOBMON_CONFIG or /etc/jobmon/jobmon.toml)."),
        ):
            reader(gpu_only, directory, period, recorded, record, once, verbose, gpus, energy,
                   network, powercap, cpu_stat, config_path)
        return command

    node = options(NODE_DIR, False)
    node.__doc__ = """Read what needs root on this node -- GPUs (NVML), CPU and DRAM energy
    (RAPL), each job's network traffic (a BPF program) -- and publish it for the per-job
    samplers.

    One reader per node, as root (deploy/jobmon-node-reader.service), outside every job.
    Jobs read DIR's files, and trust them only where root made DIR and the reader's user
    alone can write it (docs/node-reader.md).
    """
    app.command("node-reader")(node)
    gpu = options(GPU_DIR, True)
    gpu.__doc__ = """The node reader publishing GPUs only (as `jobmon node-reader --no-energy
    --no-network`, in /run/jobmon-gpu by default): what this command did before the
    node reader grew out of it (docs/node-reader.md)."""
    app.command("gpu-reader")(gpu)
