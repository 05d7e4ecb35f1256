"""The durable state of consumer groups: the offsets topic (DESIGN.md "Consumer groups").

A compacted, partitioned Pulsar topic of the records in `offsets_codec`. All of
a group's records go to one partition, chosen by a hash of the group id that
every kop process computes alike, so a coordinator loads only the partitions it
owns and the partition count must never change (as Kafka's
`offsets.topic.num.partitions`). A load applies records per key, latest wins,
which is what compaction keeps: it sees the same state before and after
compaction runs.

Each partition has one writer at a time, held by the instance that coordinates its
groups: it takes the partition with a fencing writer (every earlier holder's writes
fail from then on) and then reads the partition up to a barrier it wrote itself, so
it has seen everything the earlier holder had written, its last writes in flight
included (Pulsar stores those before the new writer's first entry). A partition not
taken is never written.

Nothing is acknowledged unless persisted: a write returns once Pulsar stored all
its messages and raises StorageError otherwise, including after
`write_timeout_s` (Kafka's `offsets.commit.timeout.ms`). A failed write may still
be partly stored; the client retries. One writer per partition is kept across
failures: its sends are stored in send order, so a late message of a failed
commit can never land after a later commit's.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import zlib
from collections.abc import Iterable, Mapping, Sequence

from kop.groups.offsets_codec import (
    GroupRecord,
    MalformedRecord,
    Record,
    decode,
    encode_group,
    encode_offset,
    tombstone_group,
    tombstone_offset,
)
from kop.groups.types import CommittedOffset, GroupMetadata, LoadedGroups, TopicPartition
from kop.storage import batch_layout
from kop.storage.port import MessageLog, TopicReader, TopicWriter
from kop.storage.types import Idle, OutgoingMessage, StorageError, WriterMode

log = logging.getLogger(__name__)

# The barrier a new holder writes: loads skip it (an older kop counts it malformed).
BARRIER_KEY = "barrier|"


class NotHeld(StorageError):
    """A write to an offsets partition this instance has not taken (or lost)."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"{topic} is not held by this instance", retriable=False)


class OffsetsStore:
    def __init__(
        self, storage: MessageLog, topic: str, partitions: int, *, write_timeout_s: float = 5.0
    ) -> None:
        if partitions < 1:
            raise ValueError(f"the offsets topic needs at least one partition, not {partitions}")
        self.storage = storage
        self.topic = topic
        self.partitions = partitions
        self._write_timeout_s = write_timeout_s
        self._held: dict[str, TopicWriter] = {}  # partition topic -> this holder's writer
        self.malformed = 0  # undecodable records skipped by loads, in total

    def partition_for(self, group_id: str) -> int:
        return zlib.crc32(group_id.encode()) % self.partitions

    def partition_topic(self, partition: int) -> str:
        return f"{self.topic}-partition-{partition}"

    async def load(self, partition: int) -> LoadedGroups:
        """Take the partition (fencing any earlier holder), then read everything it
        holds up to this holder's barrier. An undecodable record is skipped and
        counted; it leaves its key's earlier value in place. No timeout of its own
        (the storage may be down): the caller bounds it."""
        topic = self.partition_topic(partition)
        barrier = await self._take(topic)
        reader = await self.storage.reader(topic, None, compacted=True)
        try:
            return await self._read_to(reader, topic, barrier)
        finally:
            await reader.close()

    async def read(self, partition: int) -> LoadedGroups:
        """What the partition holds now, read to its end without taking it (for checks
        and tools; a coordinator loads with `load`)."""
        topic = self.partition_topic(partition)
        reader = await self.storage.reader(topic, None, compacted=True)
        reader.report_idle()
        try:
            return await self._read_to(reader, topic, None)
        finally:
            await reader.close()

    async def _take(self, topic: str) -> bytes:
        await self.release_topic(topic)
        writer = await self.storage.writer(topic, mode=WriterMode.FENCING)
        self._held[topic] = writer
        barrier = uuid.uuid4().hex.encode()
        message = OutgoingMessage(barrier, {}, BARRIER_KEY, None)
        async with asyncio.timeout(self._write_timeout_s):
            await writer.send_all([batch_layout.entry([message])])[1]
        return barrier

    async def _read_to(
        self, reader: TopicReader, topic: str, barrier: bytes | None
    ) -> LoadedGroups:
        """Up to the barrier (None: to the end the reader reports as idle)."""
        loaded = LoadedGroups()
        skipped, first_skipped = 0, ""
        while True:
            stored = await reader.read()
            if isinstance(stored, Idle):
                if barrier is None:
                    self._report(topic, skipped, first_skipped)
                    return loaded
                continue  # the barrier is still on its way
            for msg in batch_layout.messages(stored):
                if msg.partition_key == BARRIER_KEY:
                    if msg.payload == barrier:
                        self._report(topic, skipped, first_skipped)
                        return loaded
                    continue
                try:
                    record = decode(msg.partition_key, None if msg.null_value else msg.payload)
                except MalformedRecord as exc:
                    skipped += 1
                    first_skipped = first_skipped or f"{msg.partition_key!r}: {exc}"
                    continue
                _apply(loaded, record)

    def _report(self, topic: str, skipped: int, first_skipped: str) -> None:
        if skipped:
            self.malformed += skipped
            log.warning(
                "%s: skipped %d undecodable records, first %s", topic, skipped, first_skipped
            )

    async def commit(self, group: str, offsets: Mapping[TopicPartition, CommittedOffset]) -> None:
        await self._write(group, [encode_offset(group, tp, o) for tp, o in offsets.items()])

    async def store_group(self, meta: GroupMetadata) -> None:
        await self._write(meta.group_id, [encode_group(meta)])

    async def delete_offsets(self, group: str, tps: Iterable[TopicPartition]) -> None:
        await self._write(group, [tombstone_offset(group, tp) for tp in tps])

    async def delete_group(self, group: str, tps: Iterable[TopicPartition]) -> None:
        """The offsets' tombstones go first, in the same entry (stored all or
        nothing), so a group found deleted never keeps stale offsets."""
        await self._write(
            group, [*(tombstone_offset(group, tp) for tp in tps), tombstone_group(group)]
        )

    async def release(self, partition: int) -> None:
        """Another instance writes this partition now: close this one's writer."""
        await self.release_topic(self.partition_topic(partition))

    async def release_topic(self, topic: str) -> None:
        writer = self._held.pop(topic, None)
        if writer is not None:
            await self.storage.close_writer(topic, writer.name)

    async def close(self) -> None:
        for topic in list(self._held):
            await self.release_topic(topic)

    async def _write(self, group: str, messages: Sequence[OutgoingMessage]) -> None:
        """Returns once all `messages` are persisted, through the writer this instance
        took the partition with (NotHeld without one; WriterFenced once another
        instance took it over)."""
        if not messages:
            return
        topic = self.partition_topic(self.partition_for(group))
        writer = self._held.get(topic)
        if writer is None:
            raise NotHeld(topic)
        try:
            async with asyncio.timeout(self._write_timeout_s):
                await writer.send_all([batch_layout.entry(messages)])[1]
        except TimeoutError:
            raise StorageError(f"{topic}: not persisted within {self._write_timeout_s}s") from None


def _apply(loaded: LoadedGroups, record: Record) -> None:
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
