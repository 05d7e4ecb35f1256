"""Pulsar's topic compaction, run on demand for compacted Kafka topics.

kop asks for a compaction itself (the admin API's `PUT .../compaction`, which a
tenant admin may call) instead of relying on a compaction threshold policy: it
must know when a compaction is done, to note the survivors' offsets before
retention may delete the ledgers below its horizon. Until then the pin (a
durable subscription of kop's own on the partition) keeps those ledgers.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kop.pulsar.admin import PulsarAdmin
from kop.storage.types import AdminError, Position, StorageError

log = logging.getLogger(__name__)

# The durable subscription that keeps what kop has not yet noted (see module doc).
PIN_SUBSCRIPTION = "kop-compaction"
_POLL_FIRST_S = 0.1
_POLL_MAX_S = 2.0


class PulsarCompaction:
    def __init__(self, admin: PulsarAdmin, timeout_s: float = 600.0) -> None:
        self._admin = admin
        self._timeout_s = timeout_s

    async def compact(self, topic: str) -> None:
        path = f"persistent/{topic.removeprefix('persistent://')}/compaction"
        try:
            async with asyncio.timeout(self._timeout_s):
                try:
                    await self._admin.request("PUT", path)
                except AdminError as exc:
                    if exc.status != 409:  # 409: one is running already; wait for it
                        raise
                    await self._wait(path)
                    await self._admin.request("PUT", path)
                await self._wait(path)
        except AdminError as exc:
            raise StorageError(f"compaction of {topic}: {exc}") from exc
        except TimeoutError:
            raise StorageError(
                f"compaction of {topic} not done after {self._timeout_s:.0f} s"
            ) from None

    async def _wait(self, path: str) -> None:
        delay = _POLL_FIRST_S
        while True:
            status: Any = await self._admin.request("GET", path)
            state = status.get("status") if isinstance(status, dict) else None
            if state == "SUCCESS":
                return
            if state == "ERROR":
                raise StorageError(f"Pulsar's compaction failed: {status.get('lastError')}")
            if state not in ("RUNNING", "NOT_RUN"):
                raise StorageError(f"unexpected compaction status {status!r}")
            await asyncio.sleep(delay)
            delay = min(_POLL_MAX_S, delay * 2)

    async def pin(self, topic: str, at: Position | None) -> None:
        try:
            if at is None:
                at = await self._first(topic)
            await self._admin.place_subscription(topic, PIN_SUBSCRIPTION, at)
        except AdminError as exc:
            raise StorageError(f"pinning {topic}: {exc}") from exc

    async def _first(self, topic: str) -> Position:
        """The first entry that may still exist: the oldest ledger's first entry."""
        ledgers = await self._admin.ledgers(topic)
        return Position(ledgers[0][0], 0) if ledgers else Position(0, 0)
