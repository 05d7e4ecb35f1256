"""Committed offsets mirrored onto Pulsar: a durable subscription named after the
group on each partition it committed, placed at the committed offset's message
(found through the offset index), so Pulsar's tools list the group with its
backlog and Pulsar retention keeps what the group has not consumed.

Commits only note what to place; a background task places the latest offset
of each (group, partition) every `interval_s`, at most `per_round` of them, so
a busy group costs Pulsar one admin call per partition per interval, not one per
commit. Pulsar counts a backlog in entries: with one record per entry (`pulsar`
format, records sent one by one) it equals the Kafka lag; records sharing an
entry (a batch) count once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from kop.groups.types import TopicPartition
from kop.log.manager import LogManager
from kop.log.topics import TopicCatalog
from kop.protocol.errors import KafkaError
from kop.storage.naming import InvalidTopicName, Namespace, resolve
from kop.storage.port import StorageAdmin
from kop.storage.types import AdminError, StorageError

log = logging.getLogger(__name__)

Key = tuple[str, TopicPartition]


class SubscriptionMirror:
    def __init__(
        self,
        admin: StorageAdmin,
        logs: LogManager,
        catalog: TopicCatalog,
        ns: Namespace,
        interval_s: float = 5.0,
        per_round: int = 500,
    ) -> None:
        self._admin = admin
        self._logs = logs
        self._catalog = catalog
        self._ns = ns
        self._interval_s = interval_s
        self._per_round = per_round
        self._place: dict[Key, int] = {}  # latest committed offset not yet mirrored
        self._remove: set[Key] = set()
        self.placed = 0  # subscriptions placed or moved, for tests and metrics

    def committed(self, group: str, offsets: dict[TopicPartition, int]) -> None:
        for tp, offset in offsets.items():
            self._remove.discard((group, tp))
            self._place[(group, tp)] = offset

    def forgotten(self, group: str, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self._place.pop((group, tp), None)
            self._remove.add((group, tp))

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            await self.flush()

    async def flush(self) -> None:
        """One round: removals first, then placements, each bounded."""
        for key in list(self._remove)[: self._per_round]:
            self._remove.discard(key)
            topic = await self._partition_topic(key[1])
            if topic is not None:
                await self._attempt(self._admin.delete_subscription(topic, key[0]), key, None)
        for key in list(self._place)[: self._per_round]:
            offset = self._place.pop(key)
            await self._place_one(key, offset)

    async def _place_one(self, key: Key, offset: int) -> None:
        group, tp = key
        topic = await self._partition_topic(tp)
        if topic is None:
            return
        try:
            plog = await self._logs.partition(topic)
            at = await plog.position_of(min(max(offset, plog.log_start), plog.high_watermark))
        except (KafkaError, StorageError) as exc:
            log.debug("mirror of %s %s: %s (again next round)", group, tp, exc)
            self._place.setdefault(key, offset)
            return
        if await self._attempt(self._admin.place_subscription(topic, group, at), key, offset):
            self.placed += 1

    async def _attempt(self, call: Awaitable[None], key: Key, offset: int | None) -> bool:
        try:
            await call
            return True
        except (AdminError, StorageError) as exc:
            log.warning("mirroring %s on %s: %s", key[0], key[1].topic, exc)
            if offset is None:
                self._remove.add(key)
            else:
                self._place.setdefault(key, offset)
            return False

    async def _partition_topic(self, tp: TopicPartition) -> str | None:
        try:
            view = await self._catalog.describe(resolve(tp.topic, self._ns))
        except (InvalidTopicName, AdminError, StorageError):
            return None
        if view is None or not 0 <= tp.partition < view.partitions:
            return None
        return view.partition_topic(tp.partition)
