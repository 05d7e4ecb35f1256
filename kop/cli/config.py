"""`kop config show` and `kop config check`: the configuration kop would run with, and
where each value came from (a flag, a `KOP_*` variable, the TOML file, or the
default), before anything starts. Secrets are never printed."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import click
from pydantic import SecretStr

from kop.cli.options import build, config_options
from kop.config.settings import KopConfig


@click.group("config")
def config() -> None:
    """Show or check the configuration (defaults < TOML file < KOP_* < flags)."""


@config.command()
@config_options
def show(config_file: Path | None, **flags: Any) -> None:
    """Print every setting as TOML, each with where its value came from."""
    settings = build(config_file, flags)
    for line in render(settings, sources(config_file, flags)):
        click.echo(line)


@config.command()
@config_options
def check(config_file: Path | None, **flags: Any) -> None:
    """Validate the configuration (exit 1 with one line per problem)."""
    build(config_file, flags)
    origin = list(sources(config_file, flags).values())
    given = [f"{n} from {kind}" for kind in _GIVEN if (n := origin.count(kind))]
    click.echo(f"configuration is valid: {', '.join(given) or 'every setting at its default'}")


_GIVEN = ("flag", "environment", "file")  # the sources beside the defaults


def sources(config_file: Path | None, flags: dict[str, Any]) -> dict[str, str]:
    """Where each setting's value comes from, by the precedence `load_config` applies."""
    in_file: set[str] = set()
    if config_file is not None and config_file.is_file():
        with config_file.open("rb") as f:
            in_file = set(tomllib.load(f))
    env = {name.upper() for name in os.environ}
    out = {}
    for name in KopConfig.model_fields:
        if name == "config_file":
            continue
        if flags.get(name) is not None:
            out[name] = "flag"
        elif f"KOP_{name.upper()}" in env:
            out[name] = "environment"
        elif name in in_file:
            out[name] = "file"
        else:
            out[name] = "default"
    return out


def render(settings: KopConfig, origin: dict[str, str]) -> list[str]:
    """`name = value  # source` per setting, in TOML (an unset one commented out, a
    secret as whether it is set)."""
    lines = []
    for name, source in origin.items():
        value = getattr(settings, name)
        if isinstance(value, SecretStr):
            shown = '"(set, not shown)"' if value.get_secret_value() else '""'
            lines.append(f"{name} = {shown}  # {source}")
        elif value is None:
            lines.append(f"# {name} is not set  # {source}")
        else:
            lines.append(f"{name} = {_toml(value)}  # {source}")
    return lines


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Path):
        return json.dumps(str(value))
    if isinstance(value, list | tuple | set | frozenset):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items()) + " }"
        )
    return json.dumps(str(value))
