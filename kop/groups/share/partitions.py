"""The share-partitions this instance serves: one per share group and partition it
leads, each a consumer on the group's Pulsar Shared subscription of that partition,
named `kafka-share-<group>` so an operator recognizes it (D27).

Opened by a group's first fetch of the partition (a new subscription starts where the
group's `share.auto.offset.reset` says: at the first entry, at the end, or, with
`by_duration:`, at the first record written within that duration before now, placed
through the storage admin before kop's consumer attaches); closed when the partition is no
longer this instance's (a takeover: what it held goes back to the subscription and
the new leader's consumer gets it), after `idle_s` without a fetch while holding no
acquired record, and when kop stops. Bounded per instance: each is a Pulsar consumer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from kop.groups.consumer.coordinator import ConsumerSettings
from kop.groups.group_configs import GroupSettings, broker_wide
from kop.groups.share.coordinator import ShareSettings
from kop.groups.share.dead_letters import DeadLetterPolicy, DeadLetterSink
from kop.groups.share.partition import SharePartition
from kop.groups.share.records import ShareLimits
from kop.log.partition_log import PartitionLog
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.port import SharedSubscriptions
from kop.storage.types import AdminError, Position, StorageError

log = logging.getLogger(__name__)

SUBSCRIPTION_PREFIX = "kafka-share-"
TICK_S = 0.25  # how often lock deadlines are checked
Key = tuple[str, str]  # (group key, the partition's Pulsar topic)


def subscription_of(group_id: str) -> str:
    return SUBSCRIPTION_PREFIX + group_id


class SubscriptionStarts(Protocol):
    """The storage admin's call that makes a subscription at a place (StorageAdmin)."""

    async def create_subscription(self, topic: str, name: str, at: Position | None) -> bool: ...


class SharePartitions:
    def __init__(
        self,
        storage: SharedSubscriptions,
        settings: ShareSettings,
        clock: Callable[[], int],
        current: Callable[[str], PartitionLog | None],
        max_open: int = 10_000,
        idle_s: float = 120.0,
        settings_of: Callable[[str], Awaitable[GroupSettings]] | None = None,
        starts: SubscriptionStarts | None = None,
    ) -> None:
        self._storage = storage
        self._starts = starts  # None: a by_duration reset starts at the end
        self.settings = settings
        # a group's settings by its key: its overrides (kafka-configs --entity-type
        # groups) over the broker-wide ones
        self._settings_of = settings_of or self._broker_wide
        self._defaults = broker_wide(ConsumerSettings(), settings)
        self._clock = clock
        self._current = current  # the log this instance serves a topic with now, if any
        self._max_open = max_open
        self._idle_s = idle_s
        self._open: dict[Key, SharePartition] = {}
        self._locks: dict[Key, asyncio.Lock] = {}
        # where dead letters go (set once the request handlers exist: kop.wiring.app);
        # None: a rejected record is archived without one
        self.dead_letters: DeadLetterSink | None = None

    def __len__(self) -> int:
        return len(self._open)

    async def _broker_wide(self, _group_key: str) -> GroupSettings:
        return self._defaults

    async def of(
        self, group_key: str, group_id: str, plog: PartitionLog, source: tuple[str, int]
    ) -> SharePartition:
        """The group's share-partition of `plog` (partition `source`: topic as the
        member names it, and index), opened if it is not; its record limits and
        dead-letter settings are the group's now (a changed
        share.record.lock.duration.ms, share.delivery.count.limit,
        share.partition.max.record.locks or errors.deadletterqueue.* applies from the
        group's next fetch on)."""
        group = await self._settings_of(group_key)
        limits = ShareLimits(group.share_lock_ms, group.share_delivery_limit, group.share_max_locks)
        policy = DeadLetterPolicy(group_key, group_id, group.dlq_topic, group.dlq_copy)
        key = (group_key, plog.topic)
        sp = self._open.get(key)
        if sp is not None and sp.plog is plog and sp.failed is None:
            sp.configure(limits, policy)
            return sp
        async with self._locks.setdefault(key, asyncio.Lock()):
            sp = self._open.get(key)
            if sp is not None and sp.plog is plog and sp.failed is None:
                sp.configure(limits, policy)
                return sp
            if sp is not None:
                await self._close(key)
            if len(self._open) >= self._max_open:
                raise KafkaError(
                    ErrorCode.share_session_limit_reached,
                    f"{self._max_open} share-partitions are open on this instance",
                )
            try:
                reset_ms = group.share_reset_ms
                if reset_ms is not None:
                    await self._start_by_time(plog, subscription_of(group_id), reset_ms)
                sub = await self._storage.shared(
                    plog.topic, subscription_of(group_id),
                    earliest=group.share_earliest,
                )  # fmt: skip
            except (StorageError, AdminError) as exc:
                raise KafkaError(ErrorCode.request_timed_out, str(exc)) from exc
            sp = self._open[key] = SharePartition(
                plog, sub, limits, self._clock, source=source, dead_letters=self.dead_letters
            )
            sp.configure(limits, policy)
            return sp

    async def _start_by_time(self, plog: PartitionLog, name: str, reset_ms: int) -> None:
        """A new subscription at the first record stamped within `reset_ms` before now,
        or at the end when none is (a subscription that exists is left where it is)."""
        if self._starts is None:
            return
        found = await plog.offset_for_time(self._clock() - reset_ms)
        offset = found[0] if found is not None else plog.high_watermark
        await self._starts.create_subscription(plog.topic, name, await plog.position_of(offset))

    def opened(self, group_key: str, topic: str) -> SharePartition | None:
        return self._open.get((group_key, topic))

    async def let_go(self, group_key: str, topic: str) -> None:
        """Close the group's share-partition of `topic` if it is open here: what it
        held goes back to the subscription, which is about to move or go."""
        key = (group_key, topic)
        async with self._locks.setdefault(key, asyncio.Lock()):
            await self._close(key)

    async def release_member(self, group_key: str, member: str) -> None:
        """A member's share session ended (or a new one replaced it): what it acquired
        in its group's share-partitions here is released."""
        for (group, topic), sp in list(self._open.items()):
            if group != group_key:
                continue
            try:
                await sp.release_member(member)
            except KafkaError as exc:
                log.info("releasing %s's records on %s: %s", member, topic, exc)

    async def run_timers(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            await self.tick()

    async def tick(self) -> None:
        """Expired locks released; share-partitions no longer led, or idle, closed."""
        now = asyncio.get_running_loop().time()
        for key, sp in list(self._open.items()):
            if self._current(sp.plog.topic) is not sp.plog or sp.failed is not None:
                await self._close(key)
                continue
            if sp.idle and now - sp.last_used_s > self._idle_s:
                await self._close(key)
                continue
            try:
                await sp.expire()
            except KafkaError as exc:
                log.info("share partition %s: %s", key, exc)

    async def _close(self, key: Key) -> None:
        sp = self._open.pop(key, None)
        self._locks.pop(key, None)
        if sp is not None:
            await sp.close()

    async def close(self) -> None:
        for key in list(self._open):
            await self._close(key)
