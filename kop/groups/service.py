"""The group coordinator as a service: every kind of group (classic through
classic_protocol.py, KIP-848 and share groups through their services), offset commits
(commits.py), committed offsets through the offsets store, for the groups of the
offsets partitions this instance owns (loading.py reads them back as ownership moves).

A group of a partition owned elsewhere gets NOT_COORDINATOR; one of a partition
still being read back gets COORDINATOR_LOAD_IN_PROGRESS (retriable), as from a
Kafka coordinator loading its partitions. A commit is answered only after Pulsar
persisted it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from kop.cluster.coordinated import CoordinatedPartitions
from kop.cluster.member import Member
from kop.cluster.ownership import Ownership, Solo
from kop.groups.classic_protocol import ClassicProtocol
from kop.groups.commits import OffsetCommits
from kop.groups.committed_view import CommittedView
from kop.groups.consumer.classic_service import ClassicMembers
from kop.groups.consumer.coordinator import ConsumerCoordinator, ConsumerSettings
from kop.groups.consumer.migrating import ClassicGroups
from kop.groups.consumer.service import ConsumerGroups
from kop.groups.coordinator import Coordinator, Limits
from kop.groups.deleting import delete_group
from kop.groups.driver import Driver
from kop.groups.full_warning import FullWarning
from kop.groups.group_config_book import GroupConfigBook, LocalGroupConfigs
from kop.groups.group_configs import broker_wide
from kop.groups.kinds import GroupKinds
from kop.groups.loading import PartitionLoading
from kop.groups.mirror import SubscriptionMirror
from kop.groups.offsets import Offsets
from kop.groups.offsets_store import OffsetsStore
from kop.groups.scope import GroupScope
from kop.groups.share.coordinator import ShareCoordinator, ShareSettings
from kop.groups.share.service import ShareGroups
from kop.groups.txn_offsets import PendingOffsets
from kop.groups.types import GroupMetadata
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.group_configs import GroupConfigStore
from kop.storage.naming import Namespace
from kop.storage.types import StorageError, WriterFenced
from kop.systables.held_topic import NotHeld

log = logging.getLogger(__name__)


def wall_ms() -> int:
    return int(time.time() * 1000)


class GroupService:
    def __init__(
        self,
        store: OffsetsStore,
        limits: Limits | None = None,
        offsets_retention_ms: int = 7 * 24 * 3600 * 1000,
        clock: Callable[[], int] = wall_ms,
        mirror: SubscriptionMirror | None = None,
        ownership: Ownership | None = None,
        scope: GroupScope | None = None,
        consumer: ConsumerSettings | None = None,
        share: ShareSettings | None = None,
        configs: GroupConfigStore | None = None,
    ) -> None:
        # whose each group is (its tenant's namespace: kop.groups.scope)
        self.scope = scope or GroupScope(Namespace("public", "default"))
        self.coordinator = Coordinator(limits)
        self.offsets = Offsets(store, offsets_retention_ms)
        # every group's commits, also those coordinated elsewhere: for the mirror and
        # the lag of the partitions this instance serves
        self.committed = CommittedView(
            store.storage, [store.partition_topic(p) for p in range(store.partitions)]
        )
        self.mirror = mirror
        if mirror is not None:
            self.committed.sink = mirror
            mirror.attach(self.committed)
        self._store = store
        self._driver = Driver(self.coordinator, store, clock, self.failed)
        alone = Member(-1, "", 0, "")
        self._ownership = ownership or Ownership(Solo(alone), alone)
        self.pending = PendingOffsets(store, self.offsets, lambda p: self.partitions.coordinates(p))
        consumer, share = consumer or ConsumerSettings(), share or ShareSettings()
        # per-group configs (kafka-configs --entity-type groups), kept in Pulsar
        self.configs = GroupConfigBook(
            configs or LocalGroupConfigs(), broker_wide(consumer, share), self.scope
        )
        consumers = ConsumerCoordinator(
            consumer, lambda key: self.configs.settings(key).consumer_session_ms
        )
        shares = ShareCoordinator(share, lambda key: self.configs.settings(key).share_session_ms)
        self._kinds = GroupKinds(self.coordinator, consumers, shares)
        kinds = self._kinds
        self.share = ShareGroups(
            shares, clock, self.check, kinds.is_not_share, kinds.room, store, self.failed
        )
        self.consumer = ConsumerGroups(
            store, consumers, clock, self.failed,
            self._classic_groups(), self._kinds.room, self.offsets, self.check,
        )  # fmt: skip
        loading = PartitionLoading(
            store, self.coordinator, self.offsets, self._driver, self.pending,
            self.consumer.coordinator, self.share,
        )  # fmt: skip
        self.partitions = CoordinatedPartitions(
            store.partitions, store.partition_topic, loading.load, loading.unload
        )
        full = FullWarning(self.coordinator)
        # the classic protocol's requests, and offset commits of every kind of group
        inside = ClassicMembers(self.consumer, self.coordinator.limits, clock)
        self.classic = ClassicProtocol(
            self.coordinator, self._driver, kinds, inside, full, self.check
        )
        self.commits = OffsetCommits(
            self.coordinator, self._driver, self.consumer, self.offsets, self.pending, full,
            self.check, self.failed,
        )  # fmt: skip

    def _classic_groups(self) -> ClassicGroups:
        """The classic coordinator as the consumer groups see it (through the driver, so
        the answers to parked requests go out)."""
        c, now = self.coordinator, self._driver.now

        def metadata(group_id: str) -> GroupMetadata | None:
            g = c.groups.get(group_id)
            return g.to_metadata() if g is not None else None

        def adopt(meta: GroupMetadata, rebalance: bool) -> None:
            now(lambda t: c.adopt(meta, t) if rebalance else c.restore(meta, t))

        return ClassicGroups(
            self._kinds.classic_members, c.forget, metadata,
            lambda group_id: now(lambda _t: c.hand_over(group_id, ErrorCode.rebalance_in_progress)),
            adopt, c.limits.max_size,
        )  # fmt: skip

    # -- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        self._driver.spawn(self.partitions.follow(self._ownership), "groups-partitions")
        self._driver.spawn(self._driver.run_timers(self._expire), "groups-timers")
        self._driver.spawn(self.consumer.run_timers(), "consumer-groups-timers")
        self._driver.spawn(self.share.run_timers(), "share-groups-timers")
        self._driver.spawn(self.committed.run(), "groups-committed-view")
        if self.mirror is not None:
            self._driver.spawn(self.mirror.run(), "groups-mirror")

    def background(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        """A task that lives no longer than the service."""
        self._driver.spawn(coro, name)

    async def close(self) -> None:
        await self._driver.close()
        await self._store.close()

    @property
    def loaded(self) -> bool:
        """Every offsets partition this instance owns is read back."""
        return self.partitions.all_loaded

    def check_loaded(self) -> None:
        if not self.loaded:
            raise KafkaError(ErrorCode.coordinator_load_in_progress, "groups are loading")

    def partition_of(self, group_id: str) -> int:
        return self._store.partition_for(group_id)

    @property
    def offsets_topic(self) -> str:
        return self._store.topic

    def partition_topic(self, partition: int) -> str:
        """What its ownership is decided by: the offsets topic's Pulsar partition."""
        return self._store.partition_topic(partition)

    def check(self, group_id: str) -> None:
        """Raise NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS unless this instance
        coordinates the group now."""
        self.partitions.check(self.partition_of(group_id))

    def coordinates(self, group_id: str) -> bool:
        return self.partitions.coordinates(self.partition_of(group_id))

    async def _expire(self, now_ms: int) -> None:
        kept = self._kinds.consumer_in_use
        groups = self.coordinator.groups
        for group in await self.offsets.expire(groups, now_ms, self.failed, kept):
            self.coordinator.forget(group)

    def failed(self, group_id: str, exc: StorageError) -> ErrorCode:
        """A write that failed because this instance no longer holds the group's offsets
        partition is NOT_COORDINATOR (the client finds the new coordinator), and the
        partition is let go; any other failure is retriable where it is."""
        if isinstance(exc, WriterFenced | NotHeld):
            self.partitions.fenced(self.partition_of(group_id))
            return ErrorCode.not_coordinator
        return ErrorCode.coordinator_not_available

    async def delete(self, group_id: str) -> ErrorCode:
        """DeleteGroups of one group (kop/groups/deleting.py)."""
        self.check(group_id)
        return await delete_group(self, group_id)
