"""Produce requests of one connection, begun in order per partition rather than per
connection while a partition opens.

A connection's requests are begun one after another, so that each partition's batches
are written in the order they arrived. Right after a takeover the new owner opens each
partition it gained when a request first names it (catching up with its log, some
80 ms on a loaded machine), and a client sends its requests one partition at a time:
the connection then opened one partition after another and every later request waited,
whatever partition it named (a third of 1,000 partitions took 12-34 s to be served
again). A request naming a partition still to be opened is begun in the background,
after the connection's earlier requests for that partition; later requests for other
partitions go on; the answers still go out in request order."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
Key = tuple[str, int]  # the topic as the client names it, the partition


class PartitionChains:
    """One per connection: the last begin of each partition still running in the
    background."""

    def __init__(self) -> None:
        self._last: dict[Key, asyncio.Task[object]] = {}

    def busy(self, key: Key) -> bool:
        """Whether a begin of the partition is still running: the next one follows it."""
        return key in self._last

    def after(self, key: Key, begin: Callable[[], Awaitable[T]]) -> asyncio.Task[T]:
        """`begin()` once every earlier begin of the partition has finished."""
        before = self._last.get(key)

        async def in_turn() -> T:
            if before is not None:
                await asyncio.wait([before])  # its outcome is its own request's
            return await begin()

        task = asyncio.ensure_future(in_turn())
        self._last[key] = task
        task.add_done_callback(lambda done: self._forget(key, done))
        return task

    def _forget(self, key: Key, done: asyncio.Task[T]) -> None:
        if self._last.get(key) is done:
            del self._last[key]
