"""Where the stack is: the flags every job shares, defaulting to `make run`'s stack."""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click


@dataclass(frozen=True, slots=True)
class Stack:
    topic: str
    bootstrap: str
    pulsar_url: str
    admin_url: str
    namespace: str  # the Pulsar tenant/namespace kop maps plain Kafka names into
    system_namespace: str  # kop's own: the offset-index checkpoints live there
    master: str | None
    report_dir: Path

    def pulsar_topic(self) -> str:
        """The Pulsar name of the topic (a full persistent:// name is kept as it is)."""
        if self.topic.startswith("persistent://"):
            return self.topic
        return f"persistent://{self.namespace}/{self.topic}"


def stack_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option("--topic", default="events", show_default=True, help="Kafka topic name"),
        click.option("--bootstrap", default="localhost:9092", show_default=True,
                     help="kop's Kafka listener"),
        click.option("--pulsar-url", default="pulsar://localhost:6650", show_default=True),
        click.option("--admin-url", default="http://localhost:8080", show_default=True,
                     help="Pulsar's admin REST"),
        click.option("--namespace", default="public/default", show_default=True,
                     help="Pulsar namespace of plain Kafka topic names (kop's tenant/namespace)"),
        click.option("--system-namespace", default="public/__kop", show_default=True,
                     help="kop's system namespace (offset-index checkpoints)"),
        click.option("--master", default=None,
                     help="Spark master; default local[*], or what spark-submit says"),
        click.option("--report-dir", type=click.Path(path_type=Path),
                     default=Path("spark-reports"), show_default=True,
                     help="JSON reports and PNG charts go here"),
    ]  # fmt: skip
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def unreachable(stack: Stack) -> list[str]:
    """What of the stack does not answer a TCP connect: said before Spark starts,
    instead of a Java stack trace a minute later."""
    wanted = {
        "kop (--bootstrap)": stack.bootstrap.split(",")[0],
        "Pulsar (--pulsar-url)": urlsplit(stack.pulsar_url).netloc,
        "Pulsar admin (--admin-url)": urlsplit(stack.admin_url).netloc,
    }
    out = []
    for what, address in wanted.items():
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
                pass
        except (OSError, ValueError) as exc:
            out.append(f"{what} at {address}: {exc}")
    return out


def stack_from(kwargs: dict[str, Any]) -> Stack:
    """Pops the shared flags out of a command's keyword arguments."""
    names = ("topic", "bootstrap", "pulsar_url", "admin_url", "namespace",
             "system_namespace", "master", "report_dir")  # fmt: skip
    return Stack(**{n: kwargs.pop(n) for n in names})
