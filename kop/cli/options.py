"""The options every command that builds a configuration takes (`serve`, `standalone`,
`config show`, `config check`), and loading it into one readable error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kop.config.settings import ConfigError, KopConfig, load_config


def config_options(fn: Any) -> Any:
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


def build(config_file: Path | None, flags: dict[str, Any]) -> KopConfig:
    """The configuration, or a ClickException of one line per problem."""
    try:
        return load_config(config_file, **flags)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
