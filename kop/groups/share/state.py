"""A share group's state on the partitions this instance leads, read, set and deleted
as Kafka's share coordinator keeps it (DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets), over the group's Pulsar Shared subscription of each partition
(D27, D30).

The subscription is the state: none, and the group has no state there. Its cursor says
what is delivery-complete (acknowledged, or archived after too many deliveries): every
entry up to the mark-delete position, and single entries beyond it. The share-partition
start offset (SPSO) is the base offset of the first entry after the mark-delete position;
the lag is the high watermark less the SPSO less the records beyond it already complete.
Only the partition's leader can say either: counting positions into offsets needs its
offset index. Setting the SPSO moves the subscription (its consumers, kop's and any Pulsar
application's, are cut off and come back at the new place); deleting it deletes the
subscription, and the group's next fetch makes it anew where `share.auto.offset.reset`
says. kop's own consumer of the share-partition is closed first in both cases: left
attached, it would re-create a deleted subscription as it reconnects.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Protocol

from kop.groups.share.partitions import SharePartitions, subscription_of
from kop.log.partition_log import PartitionLog
from kop.storage.types import Cursor, Position

NO_STATE = -1  # Kafka's start offset of a share-partition without state, and unknown lag
MAX_SCAN_BYTES = 64 << 20  # entries read past the SPSO to count the complete ones


class SubscriptionCursors(Protocol):
    """The storage admin's subscription calls (kop.storage.port.StorageAdmin)."""

    async def cursor(self, topic: str, name: str) -> Cursor | None: ...

    async def place_subscription(self, topic: str, name: str, at: Position | None) -> None: ...

    async def delete_subscription(self, topic: str, name: str) -> None: ...


@dataclass(frozen=True, slots=True)
class StartOffset:
    """A share-partition as DescribeShareGroupOffsets reports it."""

    start_offset: int  # NO_STATE: the group has no state on the partition
    leader_epoch: int
    lag: int  # NO_STATE: unknown (no state, or too far to count)


ABSENT = StartOffset(NO_STATE, 0, NO_STATE)


class ShareStates:
    def __init__(
        self,
        admin: SubscriptionCursors,
        partitions: SharePartitions,
        max_scan_bytes: int = MAX_SCAN_BYTES,
    ) -> None:
        self._admin = admin
        self._partitions = partitions
        self._max_scan_bytes = max_scan_bytes

    async def describe(self, group_id: str, plog: PartitionLog) -> StartOffset:
        cursor = await self._admin.cursor(plog.topic, subscription_of(group_id))
        if cursor is None:
            return ABSENT
        start, complete = await self._count(cursor, plog)
        lag = NO_STATE if complete < 0 else max(0, plog.high_watermark - start - complete)
        return StartOffset(start, plog.leader_epoch, lag)

    async def alter(self, group_key: str, group_id: str, plog: PartitionLog, offset: int) -> None:
        """The group's next delivery on the partition is the record at `offset` (in the
        `kafka` format, its whole batch), clamped to the log as Kafka's share
        coordinator clamps a start offset out of range."""
        await self._partitions.let_go(group_key, plog.topic)
        at = await plog.position_of(min(max(offset, plog.log_start), plog.high_watermark))
        await self._admin.place_subscription(plog.topic, subscription_of(group_id), at)

    async def delete(self, group_key: str, group_id: str, plog: PartitionLog) -> bool:
        """The group's state on the partition is gone; False if it had none."""
        name = subscription_of(group_id)
        if await self._admin.cursor(plog.topic, name) is None:
            return False
        await self._partitions.let_go(group_key, plog.topic)
        await self._admin.delete_subscription(plog.topic, name)
        return True

    async def _count(self, cursor: Cursor, plog: PartitionLog) -> tuple[int, int]:
        """The SPSO, and how many records at or past it are delivery-complete (-1:
        more than `max_scan_bytes` would have to be read to know)."""
        last = max((hi for _lo, hi in cursor.acked_after), default=None)
        start: int | None = None
        complete = scanned = 0
        async with contextlib.aclosing(plog.entries_after(cursor.mark_delete)) as entries:
            async for item in entries:
                if start is None:
                    start = item.base_offset
                key = item.position.entry_key
                if last is None or key > last:
                    break
                if cursor.acked(key):
                    complete += item.entry.count
                scanned += item.entry.size
                if scanned > self._max_scan_bytes:
                    return start, NO_STATE
        return (plog.high_watermark if start is None else start), complete
