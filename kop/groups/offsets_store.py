"""The durable state of consumer groups: the offsets topic (docs/groups.md).

A compacted, partitioned Pulsar topic of the records in `offsets_codec`, all of a
group's records in one partition, held by the instance that coordinates its groups
(kop/systables/held_topic.py: taking, loading to a barrier, writes that return once
persisted, `write_timeout_s` as Kafka's `offsets.commit.timeout.ms`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kop.groups.consumer.group import ConsumerGroup
from kop.groups.consumer.records import HeadRecord, MemberRecord, changes, tombstones
from kop.groups.offsets_codec import (
    GroupRecord,
    PendingRecord,
    Record,
    decode,
    encode_group,
    encode_offset,
    encode_pending,
    tombstone_group,
    tombstone_offset,
    tombstone_pending,
)
from kop.groups.record_json import MalformedRecord
from kop.groups.share.stored import ShareHeadRecord, ShareMemberRecord
from kop.groups.types import CommittedOffset, GroupMetadata, LoadedGroups, TopicPartition
from kop.storage.port import MessageLog
from kop.storage.types import OutgoingMessage
from kop.systables.held_topic import HeldPartitions


class OffsetsStore:
    def __init__(
        self, storage: MessageLog, topic: str, partitions: int, *, write_timeout_s: float = 5.0
    ) -> None:
        self._held = HeldPartitions(
            storage, topic, partitions, malformed=MalformedRecord, write_timeout_s=write_timeout_s
        )
        self.storage = storage
        self.topic = topic
        self.partitions = partitions

    @property
    def malformed(self) -> int:
        """Undecodable records skipped by loads, in total."""
        return self._held.malformed

    def partition_for(self, group_id: str) -> int:
        return self._held.partition_for(group_id)

    def partition_topic(self, partition: int) -> str:
        return self._held.partition_topic(partition)

    async def load(self, partition: int) -> LoadedGroups:
        """Take the partition (fencing any earlier holder) and read what it holds; an
        undecodable record is skipped and counted and leaves its key's earlier value."""
        loaded = LoadedGroups()
        await self._held.load(partition, lambda key, payload: _apply(loaded, decode(key, payload)))
        return loaded

    async def read(self, partition: int) -> LoadedGroups:
        """What the partition holds now, without taking it (for checks and tools)."""
        loaded = LoadedGroups()
        await self._held.read(partition, lambda key, payload: _apply(loaded, decode(key, payload)))
        return loaded

    async def commit(self, group: str, offsets: Mapping[TopicPartition, CommittedOffset]) -> None:
        await self._held.write(group, [encode_offset(group, tp, o) for tp, o in offsets.items()])

    async def commit_pending(
        self, group: str, producer_id: int, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> None:
        """Offsets committed in a transaction: kept aside until it ends."""
        await self._held.write(
            group, [encode_pending(producer_id, group, tp, o) for tp, o in offsets.items()]
        )

    async def end_pending(
        self, group: str, producer_id: int, offsets: Mapping[TopicPartition, CommittedOffset],
        commit: bool,
    ) -> None:  # fmt: skip
        """A transaction ended: its offsets committed (or not) and its pending records
        forgotten, in one entry (stored all or nothing)."""
        committed = [encode_offset(group, tp, o) for tp, o in offsets.items()] if commit else []
        forgotten = [tombstone_pending(producer_id, group, tp) for tp in offsets]
        await self._held.write(group, [*committed, *forgotten])

    async def store_group(self, meta: GroupMetadata) -> None:
        await self._held.write(meta.group_id, [encode_group(meta)])

    async def store_consumer_group(
        self, old: ConsumerGroup | None, new: ConsumerGroup, *, replacing_classic: bool = False
    ) -> None:
        """A KIP-848 group's change, in one entry (nothing when nothing durable changed);
        `replacing_classic`: an empty classic group of its id is forgotten with it."""
        records = changes(old, new)
        if records:
            first = [tombstone_group(new.group_id)] if replacing_classic else []
            await self._held.write(new.group_id, [*first, *records])

    async def store_classic_replacing(self, old: ConsumerGroup, meta: GroupMetadata) -> None:
        """A KIP-848 group downgraded to a classic one: its records' tombstones and the
        classic group's record, in one entry."""
        await self._held.write(old.group_id, [*tombstones(old), encode_group(meta)])

    async def delete_consumer_group(self, g: ConsumerGroup) -> None:
        """Its members, then the group itself, in one entry."""
        await self._held.write(g.group_id, tombstones(g))

    async def store_share_group(self, group: str, records: list[OutgoingMessage]) -> None:
        """A share group's change (kop.groups.share.stored), in one entry."""
        if records:
            await self._held.write(group, records)

    async def delete_offsets(self, group: str, tps: Iterable[TopicPartition]) -> None:
        await self._held.write(group, [tombstone_offset(group, tp) for tp in tps])

    async def delete_group(self, group: str, tps: Iterable[TopicPartition]) -> None:
        """The offsets' tombstones go first, in the same entry (stored all or
        nothing), so a group found deleted never keeps stale offsets."""
        await self._held.write(
            group, [*(tombstone_offset(group, tp) for tp in tps), tombstone_group(group)]
        )

    async def release(self, partition: int) -> None:
        """Another instance writes this partition now: close this one's writer."""
        await self._held.release(partition)

    async def release_topic(self, topic: str) -> None:
        await self._held.release_topic(topic)

    async def close(self) -> None:
        await self._held.close()


def _apply(loaded: LoadedGroups, record: Record) -> None:
    if isinstance(record, HeadRecord | MemberRecord):
        loaded.consumer.apply(record)
        return
    if isinstance(record, ShareHeadRecord | ShareMemberRecord):
        loaded.share.apply(record)
        return
    if isinstance(record, PendingRecord):
        by_group = loaded.pending.setdefault(record.producer_id, {})
        pending = by_group.setdefault(record.group, {})
        if record.offset is None:
            pending.pop(record.tp, None)
        else:
            pending[record.tp] = record.offset
        if not pending:
            del by_group[record.group]
        if not by_group:
            del loaded.pending[record.producer_id]
        return
    if isinstance(record, GroupRecord):
        if record.meta is None:
            loaded.groups.pop(record.group, None)
        else:
            loaded.groups[record.group] = record.meta
        return
    offsets = loaded.offsets.setdefault(record.group, {})
    if record.offset is None:
        offsets.pop(record.tp, None)
    else:
        offsets[record.tp] = record.offset
    if not offsets:
        del loaded.offsets[record.group]
