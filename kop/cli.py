"""Command line: `kop serve` (gateway against configured Pulsar), `kop standalone`
(the same plus a local Pulsar standalone provisioned by tools/pulsar.py), and
`kop groups` (consumer groups, through the admin HTTP)."""

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

from kop.app import Gateway, StartupError
from kop.config import ConfigError, KopConfig, load_config
from kop.groups_cli import groups
from kop.instances_cli import run_instances

log = logging.getLogger("kop")

_REPO = Path(__file__).resolve().parent.parent


def _options(fn: Any) -> Any:
    opts = [
        click.option(
            "--config", "config_file", type=click.Path(path_type=Path), help="TOML config file"
        ),
        click.option("--port", type=int, help="Kafka listener port [9092]"),
        click.option("--advertised-host", help="host name clients are told to connect to"),
        click.option("--admin-port", type=int, help="admin HTTP port [9094]; 0 disables"),
        click.option("--pulsar-service-url", help="pulsar://host:6650"),
        click.option("--pulsar-http-url", help="http://host:8080"),
        click.option("--default-entry-format", type=click.Choice(["pulsar", "kafka"])),
        click.option("--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"])),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _load(config_file: Path | None, flags: dict[str, Any]) -> KopConfig:
    try:
        config = load_config(config_file, **flags)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    logging.basicConfig(
        level=config.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
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
        asyncio.run(_serve(config))
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


@click.group()
def main() -> None:
    """kop: Kafka clients in, Apache Pulsar underneath."""


@main.command()
@_options
def serve(config_file: Path | None, **flags: Any) -> None:
    """Run the gateway against the Pulsar cluster in the configuration."""
    _run(_load(config_file, flags))
    _exit_now(0)


@main.command()
@_options
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
    already = (
        subprocess.run([sys.executable, str(tool), "status"], capture_output=True).returncode == 0
    )
    if not already and subprocess.run([sys.executable, str(tool), "start"]).returncode != 0:
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


main.add_command(groups)


if __name__ == "__main__":
    main()
