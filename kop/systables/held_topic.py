"""A compacted, partitioned system topic whose partitions are each written by one
instance at a time: the offsets topic (groups) and the transaction state topic.

A key's records all go to one partition, chosen by a hash every kop process
computes alike, so an instance loads only the partitions it owns and the partition
count must never change. A load applies records per key, latest wins, which is what
compaction keeps: it sees the same state before and after compaction runs.

The instance that owns a partition takes it with a fencing writer (every earlier
holder's writes fail from then on) and then reads it up to a barrier it wrote
itself, so it has seen everything the earlier holder had written, its last writes
in flight included (Pulsar stores those before the new writer's first entry). A
partition not taken is never written.

Nothing is acknowledged unless persisted: a write returns once Pulsar stored all its
messages and raises StorageError otherwise, including after `write_timeout_s`. A
failed write may still be partly stored; the client retries. One writer per
partition is kept across failures: its sends are stored in send order, so a late
message of a failed write can never land after a later one's.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Callable, Sequence

from kop.storage import batch_layout
from kop.storage.port import MessageLog, TopicReader, TopicWriter
from kop.storage.types import OutgoingMessage, StorageError, StoredMessage, WriterMode
from kop.systables.barrier import HELD, new_nonce, read_to_barrier

log = logging.getLogger(__name__)

# Called with each record's key and payload (None: a tombstone), in order; raises the
# topic's `malformed` exception for a record it cannot read, which is skipped and counted.
Visit = Callable[[str, bytes | None], None]


class NotHeld(StorageError):
    """A write to a partition this instance has not taken (or lost)."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"{topic} is not held by this instance", retriable=False)


class HeldPartitions:
    def __init__(
        self, storage: MessageLog, topic: str, partitions: int, *,
        malformed: type[Exception], write_timeout_s: float = 5.0,
    ) -> None:  # fmt: skip
        if partitions < 1:
            raise ValueError(f"{topic} needs at least one partition, not {partitions}")
        self.storage = storage
        self.topic = topic
        self.partitions = partitions
        self._skip = malformed
        self._write_timeout_s = write_timeout_s
        self._held: dict[str, TopicWriter] = {}  # partition topic -> this holder's writer
        self.malformed = 0  # undecodable records skipped by loads, in total

    def partition_for(self, key: str) -> int:
        return zlib.crc32(key.encode()) % self.partitions

    def partition_topic(self, partition: int) -> str:
        return f"{self.topic}-partition-{partition}"

    async def load(self, partition: int, visit: Visit) -> None:
        """Take the partition (fencing any earlier holder), then read everything it
        holds up to this holder's barrier. No timeout of its own (the storage may be
        down): the caller bounds it."""
        topic = self.partition_topic(partition)
        barrier = await self._take(topic)
        reader = await self.storage.reader(topic, None, compacted=True)
        try:
            await self._read_to(reader, topic, barrier, visit)
        finally:
            await reader.close()

    def epoch(self, partition: int) -> int:
        """The topic epoch this holder took the partition with (-1: not held): it grows
        with every holder and the storage keeps it, so it orders holders durably (the
        transaction coordinator's epoch, as Kafka's is its state partition's leader
        epoch)."""
        writer = self._held.get(self.partition_topic(partition))
        return -1 if writer is None else writer.epoch

    async def read(self, partition: int, visit: Visit) -> None:
        """What the partition holds now, read to its end without taking it (for checks
        and tools; an owner loads with `load`)."""
        topic = self.partition_topic(partition)
        reader = await self.storage.reader(topic, None, compacted=True)
        reader.report_idle()
        try:
            await self._read_to(reader, topic, None, visit)
        finally:
            await reader.close()

    async def _take(self, topic: str) -> str:
        """Fence the partition, then write this holder's barrier (kop.systables.barrier);
        its nonce, to read back."""
        await self.release_topic(topic)
        writer = await self.storage.writer(topic, mode=WriterMode.FENCING)
        self._held[topic] = writer
        nonce = new_nonce()
        async with asyncio.timeout(self._write_timeout_s):
            await writer.send_all([batch_layout.entry([HELD.message(nonce)])])[1]
        return nonce

    async def _read_to(
        self, reader: TopicReader, topic: str, barrier: str | None, visit: Visit
    ) -> None:
        """Up to the barrier (None: to the end the reader reports as idle)."""
        skipped, first_skipped = 0, ""

        def one(msg: StoredMessage) -> None:
            nonlocal skipped, first_skipped
            try:
                visit(msg.partition_key, None if msg.null_value else msg.payload)
            except self._skip as exc:
                skipped += 1
                first_skipped = first_skipped or f"{msg.partition_key!r}: {exc}"

        await read_to_barrier(reader, HELD, barrier, one)
        if skipped:
            self.malformed += skipped
            log.warning(
                "%s: skipped %d undecodable records, first %s", topic, skipped, first_skipped
            )

    async def write(self, key: str, messages: Sequence[OutgoingMessage]) -> None:
        """Returns once all `messages` (one entry: stored all or nothing) are persisted
        in `key`'s partition, through the writer this instance took it with (NotHeld
        without one; WriterFenced once another instance took it over)."""
        if not messages:
            return
        topic = self.partition_topic(self.partition_for(key))
        writer = self._held.get(topic)
        if writer is None:
            raise NotHeld(topic)
        try:
            async with asyncio.timeout(self._write_timeout_s):
                await writer.send_all([batch_layout.entry(messages)])[1]
        except TimeoutError:
            raise StorageError(f"{topic}: not persisted within {self._write_timeout_s}s") from None

    async def release(self, partition: int) -> None:
        """Another instance writes this partition now: hand this one's writer over."""
        await self.release_topic(self.partition_topic(partition))

    async def release_topic(self, topic: str) -> None:
        """The writer is handed over, not closed: it holds the topic exclusively, and
        its close while the next owner fences deadlocked Pulsar 4.0.7's broker (a
        rolling restart: `MessageLog.hand_over_writer`, docs/decisions.md D28)."""
        writer = self._held.pop(topic, None)
        if writer is not None:
            await self.storage.hand_over_writer(topic, writer.name)

    async def close(self) -> None:
        for topic in list(self._held):
            await self.release_topic(topic)
