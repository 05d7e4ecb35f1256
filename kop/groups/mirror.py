"""Committed offsets mirrored onto Pulsar: a durable subscription named after the
group behind kop's prefix (`SubscriptionNames`) on each partition it committed,
placed at the committed offset's message (found through the offset index), so
Pulsar's tools list the group with its backlog and Pulsar retention keeps what
the group has not consumed. A subscription without the prefix is never touched.

The instance that owns a partition mirrors every group's commits on it, whichever
instance coordinates the group: placing needs the partition's offset index, which
only its owner holds, and every instance reads every commit (`CommittedView`).
Commits seen for a partition owned elsewhere are kept aside and placed if this
instance comes to serve it (a takeover), at the offset committed by then.

Commits only note what to place; a background task places the latest offset
of each (group, partition) every `interval_s`, at most `per_round` of them, so
a busy group costs Pulsar one admin call per partition per interval, not one per
commit. Those queues live in memory and a restart loses them, so once the view
is loaded `MirrorReconciler` compares the subscriptions on the topics kop serves
with the committed offsets: it queues the removal of those no offset backs any
more, and re-places every group's subscription when its partition is next open
(placing needs the partition's offset index). Pulsar counts a backlog in entries:
with one record per entry it equals the Kafka lag; records sharing an entry count once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from kop.groups.mirror_names import SubscriptionNames
from kop.groups.mirror_reconcile import CommittedOffsets, MirrorReconciler
from kop.groups.scope import GroupScope
from kop.groups.types import TopicPartition
from kop.partitions.manager import LogManager
from kop.protocol.errors import KafkaError
from kop.storage.naming import InvalidTopicName
from kop.storage.port import StorageAdmin
from kop.storage.types import AdminError, StorageError
from kop.topics.catalog import TopicCatalog

log = logging.getLogger(__name__)

Key = tuple[str, TopicPartition]


class SubscriptionMirror:
    def __init__(
        self,
        admin: StorageAdmin,
        logs: LogManager,
        catalog: TopicCatalog,
        scope: GroupScope,
        interval_s: float = 5.0,
        per_round: int = 500,
        names: SubscriptionNames | None = None,
    ) -> None:
        self.admin = admin
        self.catalog = catalog
        self.scope = scope  # where each group's topics are, and its subscription name
        self.names = names or SubscriptionNames()
        self.view: CommittedOffsets | None = None  # every group's commits, once attached
        self._logs = logs
        self._interval_s = interval_s
        self._per_round = per_round
        self._place: dict[Key, int] = {}  # latest committed offset not yet mirrored
        self._remove: set[Key] = set()
        self._deferred: dict[str, set[Key]] = {}  # by partition: re-place once it is open
        self.placed = 0  # subscriptions placed or moved, for tests and metrics
        self.removed = 0

    def attach(self, view: CommittedOffsets) -> None:
        self.view = view

    def committed(self, group: str, offsets: dict[TopicPartition, int]) -> None:
        for tp, offset in offsets.items():
            self._remove.discard((group, tp))
            self._place[(group, tp)] = offset

    def forgotten(self, group: str, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self._place.pop((group, tp), None)
            self._remove.add((group, tp))

    def defer(self, partition_topic: str, key: Key) -> None:
        """Re-place `key` at its committed offset once `partition_topic` is open."""
        self._deferred.setdefault(partition_topic, set()).add(key)

    def subscription(self, group: str) -> str:
        """The group's subscription, named as its own clients name the group."""
        return self.names.of(self.scope.split(group)[1])

    def owns(self, partition_topic: str) -> bool:
        """Whether this instance mirrors onto the partition: its owner does."""
        return self._logs.owns(partition_topic)

    def committed_at(self, group: str, full_topic: str, partition: int) -> int | None:
        """The group's committed offset on that partition now, however the client
        named the topic; None without one (or before the groups are attached)."""
        if self.view is None:
            return None
        for tp, committed in self.view.of(group).items():
            if tp.partition != partition:
                continue
            try:
                if self.scope.topic(group, tp.topic).full == full_topic:
                    return committed.offset
            except InvalidTopicName:
                continue
        return None

    def _committed_now(self, group: str, tp: TopicPartition) -> int | None:
        return self.committed_at(group, self.scope.topic(group, tp.topic).full, tp.partition)

    async def run(self) -> None:
        reconcile = asyncio.create_task(MirrorReconciler(self).run(), name="mirror-reconcile")
        try:
            while True:
                await asyncio.sleep(self._interval_s)
                await self.flush()
        finally:
            reconcile.cancel()
            await asyncio.gather(reconcile, return_exceptions=True)

    async def flush(self) -> None:
        """One round: deferred placements of partitions now open join the queue; then
        removals first, then placements, each bounded."""
        self._activate_deferred()
        for key in list(self._remove)[: self._per_round]:
            self._remove.discard(key)
            await self._remove_one(key)
        for key in list(self._place)[: self._per_round]:
            offset = self._place.pop(key)
            await self._place_one(key, offset)

    def _activate_deferred(self) -> None:
        if not self._deferred:
            return
        owned = self._logs.owned()
        for topic in [t for t in self._deferred if t in owned]:
            for group, tp in self._deferred.pop(topic):
                offset = self._committed_now(group, tp)
                if offset is not None:
                    self._place.setdefault((group, tp), offset)

    async def _remove_one(self, key: Key) -> None:
        group, tp = key
        topic = await self._partition_topic(group, tp)
        if topic is None or not self.owns(topic):  # its owner removes it
            return
        if self._committed_now(group, tp) is not None:
            return  # committed again meanwhile (perhaps under another name of the topic)
        if await self._attempt(
            self.admin.delete_subscription(topic, self.subscription(group)), key
        ):
            self.removed += 1

    async def _place_one(self, key: Key, offset: int) -> None:
        group, tp = key
        topic = await self._partition_topic(group, tp)
        if topic is None:
            return
        if not self.owns(topic):  # placing needs its offset index: its owner's
            self.defer(topic, key)
            return
        try:
            plog = await self._logs.partition(topic)
            at = await plog.position_of(min(max(offset, plog.log_start), plog.high_watermark))
        except (KafkaError, StorageError) as exc:
            log.debug("mirror of %s %s: %s (again next round)", group, tp, exc)
            self._place.setdefault(key, offset)
            return
        name = self.subscription(group)
        if await self._attempt(self.admin.place_subscription(topic, name, at), key, offset):
            self.placed += 1

    async def _attempt(self, call: Awaitable[None], key: Key, offset: int | None = None) -> bool:
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

    async def _partition_topic(self, group: str, tp: TopicPartition) -> str | None:
        try:
            view = await self.catalog.describe(self.scope.topic(group, tp.topic))
        except (InvalidTopicName, AdminError, StorageError):
            return None
        if view is None or not 0 <= tp.partition < view.partitions:
            return None
        return view.partition_topic(tp.partition)
