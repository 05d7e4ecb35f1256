"""What every client driver offers the scenarios. A driver reports failures in its
own client's words (ClientError.name): kop and Kafka are compared per client, so
the names need not agree across clients."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from conformance.model import Rec

T = TypeVar("T")

# ListOffsets specs: "earliest", "latest", "max-timestamp", or a timestamp in ms.
OffsetSpec = str | int


class ClientError(Exception):
    """A request the client reported as failed, named as the client names it."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class Unsupported(Exception):
    """The client has no way to do this (the cell is left out, not failed)."""


class Client(Protocol):
    name: str
    codecs: tuple[str, ...]

    def produce(
        self,
        bootstrap: str,
        topic: str,
        recs: list[Rec],
        *,
        compression: str | None = None,
        idempotent: bool = False,
        max_request_bytes: int = 1 << 20,
    ) -> list[int]:
        """Send `recs` (each to its `partition`); their offsets, in order. The client's
        own request size limit is raised to `max_request_bytes` (its default is about
        1 MiB), for records larger than that."""
        ...

    def consume(
        self, bootstrap: str, topic: str, n: int, *, partition: int = 0, start: int = 0
    ) -> list[Rec]:
        """The first `n` records of a partition from `start` (fewer after a timeout)."""
        ...

    def list_offset(self, bootstrap: str, topic: str, partition: int, spec: OffsetSpec) -> int:
        """ListOffsets for one partition (raise Unsupported for a spec the client lacks)."""
        ...

    def group_consume(self, bootstrap: str, topic: str, group: str, n: int) -> list[Rec]:
        """subscribe() as a member of `group` (earliest when nothing is committed), take
        `n` records, commit the offsets after them, leave the group."""
        ...

    def committed(self, bootstrap: str, group: str, topic: str, partition: int) -> int | None:
        """The group's committed offset for a partition (None: nothing committed)."""
        ...

    def member_loop(
        self, bootstrap: str, topic: str, group: str, stop: threading.Event,
        report: Callable[[frozenset[int]], None],
    ) -> None:  # fmt: skip
        """Be a member of `group` subscribed to `topic`, polling until `stop` is set and
        calling `report` with the assignment after each poll; then leave cleanly.
        Runs in a thread of its own (conformance/members.py)."""
        ...


def until(what: str, within: float, step: Callable[[], T | None]) -> T:
    """Call `step` until it returns something, or fail after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        got = step()
        if got is not None:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: nothing within {within:.0f} s")
