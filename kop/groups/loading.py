"""An offsets partition's groups into the coordinator when this instance comes to own
it, and out again when it no longer does (`partitions.py` decides when)."""

from __future__ import annotations

import asyncio
import logging

from kop.groups.consumer.coordinator import ConsumerCoordinator
from kop.groups.coordinator import Coordinator
from kop.groups.driver import Driver
from kop.groups.offsets import Offsets
from kop.groups.offsets_store import OffsetsStore
from kop.groups.share.service import ShareGroups
from kop.groups.txn_offsets import PendingOffsets
from kop.groups.types import LoadedGroups

log = logging.getLogger("kop.groups.service")  # where these lines always went


class PartitionLoading:
    def __init__(
        self, store: OffsetsStore, coordinator: Coordinator, offsets: Offsets, driver: Driver,
        pending: PendingOffsets, consumer: ConsumerCoordinator, share: ShareGroups,
    ) -> None:  # fmt: skip
        self._pending = pending
        self._consumer = consumer
        self._share = share
        self._store = store
        self._coordinator = coordinator
        self._offsets = offsets
        self._driver = driver

    async def load(self, partition: int) -> None:
        """Take the partition and read its groups back (OffsetsStore.load)."""
        loaded = await self._store.load(partition)
        now = self._driver.clock()
        for g in loaded.consumer.groups():
            self._consumer.restore(g, now)
        session = self._share.coordinator.session_ms
        self._share.restore(loaded.share.groups(lambda group, _m: now + session(group)))
        restore(loaded, self._coordinator, self._offsets, now, set(loaded.consumer.heads))
        self._pending.restore(loaded.pending)
        self._driver.replan()
        log.info(
            "offsets partition %d loaded: %d groups",
            partition,
            len({*loaded.groups, *loaded.offsets, *loaded.consumer.heads, *loaded.share.heads}),
        )  # fmt: skip

    async def unload(self, partition: int) -> None:
        """Its groups leave memory (parked requests answered NOT_COORDINATOR); their
        records stay for the next owner; the partition's writer is let go."""
        mine = {*self._coordinator.groups, *self._offsets.groups(), *self._pending.groups()}
        mine.update(self._consumer.groups)
        mine.update(self._share.groups)
        gone = sorted(g for g in mine if self._store.partition_for(g) == partition)
        self._driver.now(lambda _now: self._coordinator.unload(gone))
        for group_id in gone:
            self._consumer.forget(group_id)
        self._share.forget(gone)
        self._offsets.unload(gone)
        self._pending.unload(gone)
        await self._store.release(partition)
        log.info("offsets partition %d unloaded: %d groups", partition, len(gone))


def restore(
    loaded: LoadedGroups, coordinator: Coordinator, offsets: Offsets, now_ms: int,
    consumer_groups: frozenset[str] | set[str] = frozenset(),
) -> None:  # fmt: skip
    """One offsets partition, as read back, into the classic coordinator (the offsets of
    a KIP-848 group, one of `consumer_groups`, are that group's, not a classic one's)."""
    for meta in loaded.groups.values():
        coordinator.restore(meta, now_ms)
    for group in loaded.offsets:
        if group not in consumer_groups:
            coordinator.restore_offsets_only(group, now_ms)
    offsets.restore(loaded.offsets)


async def load_groups(
    store: OffsetsStore, coordinator: Coordinator, offsets: Offsets, now_ms: int
) -> None:
    """Every partition of the offsets topic, side by side, into the coordinator."""
    for loaded in await asyncio.gather(*(store.load(p) for p in range(store.partitions))):
        restore(loaded, coordinator, offsets, now_ms)
