"""Writers the appender no longer trusts, and the settling after each.

A writer is retired when a send failed or timed out (some of it may be stored,
the rest not) or when entries went missing under the tail follower: its
numbering then no longer names its entries. Settling closes it and lets the
follower catch up with the log's end, after which what the log holds of every
batch is known and a retry writes only what is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from kop.log.own_writes import OwnWrites
from kop.storage.port import MessageLog
from kop.storage.types import Position, StorageError

log = logging.getLogger(__name__)

# Waits until the tail follower has counted the entry at a position.
CaughtUp = Callable[[Position], Awaitable[None]]


class Retirements:
    def __init__(
        self,
        storage: MessageLog,
        topic: str,
        own: OwnWrites,
        caught_up: CaughtUp,
        timeout_s: float,
    ) -> None:
        self._storage = storage
        self._topic = topic
        self._own = own
        self._caught_up = caught_up
        self._timeout_s = timeout_s
        self.retired: set[str] = set()
        self.settling: asyncio.Task[None] | None = None  # the latest, after the earlier

    def retire(self, writer: str, why: str) -> None:
        """Stop using `writer`: fail what it has in flight, close it, and settle."""
        if not writer or writer in self.retired:
            return
        self.retired.add(writer)
        log.info("%s: retiring writer %s (%s)", self._topic, writer, why)
        self._own.fail_writer(writer, f"writer retired: {why}")
        self.settling = asyncio.ensure_future(self._settle(writer, self.settling))

    def gap(self) -> None:
        """Messages went missing under the tail follower: counting no longer names
        any writer's entries, so every writer in use is retired."""
        for writer in self._own.writers():
            self.retire(writer, "entries went missing under the tail follower")

    def cancel(self) -> None:
        if self.settling is not None:
            self.settling.cancel()

    async def _settle(self, writer: str, previous: asyncio.Task[None] | None) -> None:
        """Once the retired writer is closed (all it sent is stored or failed) and the
        follower counted up to the log's end, the log's state of every batch is known."""
        if previous is not None:
            with contextlib.suppress(Exception):
                await previous
        try:
            async with asyncio.timeout(self._timeout_s):
                await self._storage.close_writer(self._topic, writer)
                end = await self._storage.end(self._topic)
                if end is not None:
                    await self._caught_up(end)
        except (TimeoutError, StorageError) as exc:
            log.warning("%s: settling after a failed write: %s", self._topic, exc)
