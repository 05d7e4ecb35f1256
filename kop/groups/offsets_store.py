"""The durable state of consumer groups: the offsets topic (DESIGN.md "Consumer groups").

A compacted, partitioned Pulsar topic of the records in `offsets_codec`. All of
a group's records go to one partition, chosen by a hash of the group id that
every kop process computes alike, so a coordinator loads only the partitions it
owns and the partition count must never change (as Kafka's
`offsets.topic.num.partitions`). A load applies records per key, latest wins,
which is what compaction keeps: it sees the same state before and after
compaction runs.

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
from kop.storage.port import MessageLog
from kop.storage.types import Idle, OutgoingMessage, StorageError

log = logging.getLogger(__name__)


class OffsetsStore:
    def __init__(
        self, storage: MessageLog, topic: str, partitions: int, *, write_timeout_s: float = 5.0
    ) -> None:
        if partitions < 1:
            raise ValueError(f"the offsets topic needs at least one partition, not {partitions}")
        self._storage = storage
        self.topic = topic
        self.partitions = partitions
        self._write_timeout_s = write_timeout_s
        self._writers: dict[str, str] = {}  # partition topic -> name of the writer it used
        self.malformed = 0  # undecodable records skipped by loads, in total

    def partition_for(self, group_id: str) -> int:
        return zlib.crc32(group_id.encode()) % self.partitions

    def partition_topic(self, partition: int) -> str:
        return f"{self.topic}-partition-{partition}"

    async def load(self, partition: int) -> LoadedGroups:
        """Everything the partition holds, read to its end. An undecodable record is
        skipped and counted; it leaves its key's earlier value in place. No timeout of
        its own (the storage may be down): the caller bounds it."""
        topic = self.partition_topic(partition)
        loaded = LoadedGroups()
        skipped, first_skipped = 0, ""
        reader = await self._storage.reader(topic, None, compacted=True)
        reader.report_idle()
        try:
            while not isinstance(stored := await reader.read(), Idle):
                for msg in batch_layout.messages(stored):
                    try:
                        record = decode(msg.partition_key, None if msg.null_value else msg.payload)
                    except MalformedRecord as exc:
                        skipped += 1
                        first_skipped = first_skipped or f"{msg.partition_key!r}: {exc}"
                        continue
                    _apply(loaded, record)
        finally:
            await reader.close()
        if skipped:
            self.malformed += skipped
            log.warning(
                "%s: skipped %d undecodable records, first %s", topic, skipped, first_skipped
            )
        return loaded

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
        topic = self.partition_topic(partition)
        name = self._writers.pop(topic, None)
        if name is not None:
            await self._storage.close_writer(topic, name)

    async def close(self) -> None:
        writers, self._writers = self._writers, {}
        for topic, name in writers.items():
            await self._storage.close_writer(topic, name)

    async def _write(self, group: str, messages: Sequence[OutgoingMessage]) -> None:
        """Returns once all `messages` are persisted. The writer is asked of the storage
        each time: it shares one per topic and replaces one that was closed."""
        if not messages:
            return
        topic = self.partition_topic(self.partition_for(group))
        try:
            async with asyncio.timeout(self._write_timeout_s):
                writer = await self._storage.writer(topic)
                self._writers[topic] = writer.name
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
