"""Command line: `kop serve` (gateway against configured Pulsar), `kop standalone`
(the same plus a local Pulsar standalone provisioned by tools/pulsar.py), and
`kop groups` (consumer groups, through the admin HTTP) and `kop config` (the
effective configuration, checked, with where each value came from)."""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import gc
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import click

import kop
from kop.cli import event_loop
from kop.cli.config import config
from kop.cli.groups import groups
from kop.cli.instances import run_instances
from kop.cli.options import build, config_options
from kop.config.settings import KopConfig
from kop.ops import log_format
from kop.wiring.app import Gateway
from kop.wiring.errors import StartupError

log = logging.getLogger("kop")

_REPO = Path(__file__).resolve().parents[2]  # the checkout: kop/cli/main.py


def _load(config_file: Path | None, flags: dict[str, Any]) -> KopConfig:
    config = build(config_file, flags)
    log_format.configure(config.log_level, config.log_format)
    # `kill -USR1` prints every thread's stack to stderr, also when the event loop is
    # stuck and nothing else answers: what an operator needs for a report.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    return config


async def _serve(config: KopConfig) -> None:
    gateway = Gateway(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await gateway.start()
        # What start-up made (modules, protobuf descriptors, kio's schemas) lives as long
        # as the process: out of the collector's sight, a full collection scans only what
        # serving made. Unfrozen, one stopped the event loop for 89 ms under load.
        gc.freeze()
        await stop.wait()
        log.info("stopping: finishing in-flight requests")
    finally:
        await gateway.stop()


def _run(config: KopConfig) -> None:
    try:
        event_loop.run(_serve(config), config.event_loop)
    except StartupError as exc:
        raise click.ClickException(str(exc)) from None


def _exit_now(code: int) -> None:
    """Leave without interpreter finalization once everything is flushed and closed:
    tearing down the Pulsar C++ client's objects in finalization order can abort
    the process ("terminate called without an active exception")."""
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(kop.version(), "--version", "-V", prog_name="kop")
def main() -> None:
    """kop: Kafka clients in, Apache Pulsar underneath."""


@main.command()
@config_options
def serve(config_file: Path | None, **flags: Any) -> None:
    """Run the gateway against the Pulsar cluster in the configuration."""
    _run(_load(config_file, flags))
    _exit_now(0)


@main.command()
@config_options
@click.option(
    "--instances", type=click.IntRange(1, 256), default=1,
    help="kop instances, node ids 0..N-1, Kafka on --port + 100 i [1]",
)  # fmt: skip
def standalone(config_file: Path | None, instances: int, **flags: Any) -> None:
    """Start (or reuse) a local Pulsar standalone, then run the gateway in front of it."""
    config = _load(config_file, dict(flags))
    tool = Path(os.environ.get("KOP_PULSAR_TOOL", _REPO / "tools" / "pulsar.py"))
    if not tool.is_file():
        raise click.ClickException(
            f"{tool} not found: run from a kop checkout or set KOP_PULSAR_TOOL"
        )
    already = pulsar_running(tool)
    if subprocess.run([sys.executable, str(tool), "start"]).returncode != 0:  # or reuse it
        raise click.ClickException("local Pulsar did not start (see the line above)")
    try:
        if instances == 1:
            _run(config)
        else:
            run_instances(instances, config_file, flags)
    finally:
        if not already:
            click.echo("stopping the Pulsar standalone kop started")
            with contextlib.suppress(Exception):
                subprocess.run([sys.executable, str(tool), "stop"], check=False)
    _exit_now(0)


def pulsar_running(tool: Path) -> bool:
    """Whether a Pulsar is there before kop starts one: healthy, or one tools/pulsar.py
    started that does not answer yet (still starting, or slow on a busy machine). kop
    stops only a Pulsar it started: taking a slow one for none stopped the Pulsar that
    the whole integration suite was using, under load."""
    status = subprocess.run([sys.executable, str(tool), "status"], capture_output=True, text=True)
    return status.returncode == 0 or "started by this tool is running" in status.stdout


main.add_command(groups)
main.add_command(config)


if __name__ == "__main__":
    main()
