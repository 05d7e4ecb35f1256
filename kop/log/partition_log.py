"""One Kafka partition over one Pulsar topic partition.

The parts share one offset index (the offset model of docs/offsets.md): the tail follower
is its only writer; the appender turns Kafka batches into Pulsar writes and is
answered by the follower's count; the history reader serves offsets older than
the tail buffer; retention moves the log start when Pulsar deletes ledgers,
the floor when a client deletes records (DeleteRecords); what a flush persists is
tracked in `PartitionChanges`. This class wires them and serves the counted entries'
record batches.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import zlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass

from kop.entries.formats import EntryFormat
from kop.log.appender import Appender
from kop.log.checkpoint_store import CheckpointStore
from kop.log.compacted.part import CompactedPart
from kop.log.counting import LogEntry
from kop.log.floor import LogFloor
from kop.log.framing import FramedLog, TopicFraming
from kop.log.history import CursorPool, HistoryReader
from kop.log.offset_index import OffsetIndex
from kop.log.own_writes import OwnWrites
from kop.log.partition_changes import PartitionChanges
from kop.log.partition_reads import PartitionReads
from kop.log.producer_state import ProducerStates
from kop.log.receipts import ReceiptFeed
from kop.log.retention import Retention
from kop.log.settings import LogSettings
from kop.log.stats import LogStats
from kop.log.tail import TailFollower
from kop.log.tail_buffer import TailBudget, TailBuffer
from kop.log.tenant_producers import TenantProducers, tenant_of
from kop.log.traffic import Flow, Traffic
from kop.log.txn_index import TxnIndex
from kop.log.write_gate import Handle
from kop.protocol.records import BatchHeader, count_records
from kop.storage.port import Compaction, MessageLog
from kop.storage.types import Position, StorageError

log = logging.getLogger(__name__)

__all__ = ["LogSettings", "PartitionLog", "Shared"]


@dataclass(slots=True)
class Shared:
    """What all partitions of one kop draw on: memory budgets and totals."""

    tail_budget: TailBudget
    cursors: CursorPool
    stats: LogStats
    producers: TenantProducers  # each tenant's idempotent producers, across its partitions
    traffic: Traffic  # bytes and records in and out, per partition

    @classmethod
    def for_settings(cls, settings: LogSettings) -> Shared:
        return cls(
            TailBudget(settings.tail_buffer_bytes), CursorPool(settings.history_readers),
            LogStats(), TenantProducers(settings.max_producers_per_tenant), Traffic(),
        )  # fmt: skip


class PartitionLog:
    def __init__(
        self,
        storage: MessageLog,
        store: CheckpointStore,
        topic: str,
        settings: LogSettings,
        shared: Shared | None = None,
        compaction: Compaction | None = None,
        framing: TopicFraming | None = None,
    ) -> None:
        shared = shared or Shared.for_settings(settings)
        if framing is not None:  # every read of the topic framed (kop.log.framing)
            storage = FramedLog(storage, topic, framing)
        self.topic = topic
        self.leader_epoch = 0  # taken when it opens to serve (kop.cluster.epochs)
        self._storage = storage
        self._store = store
        self._settings = settings
        self._shared = shared
        self.stats = LogStats(parent=shared.stats)
        self.index = OffsetIndex(
            settings.checkpoint_interval, max_checkpoints=settings.max_checkpoints
        )
        self.tail = TailBuffer(shared.tail_budget)
        self.producers: ProducerStates[Handle] = ProducerStates(
            settings.max_producers, shared.producers, tenant_of(topic)
        )
        self.txns = TxnIndex()  # open and aborted transactions (read_committed)
        own = OwnWrites()
        receipts = ReceiptFeed()
        self.follower = TailFollower(
            storage, topic, self.index, self.tail, own, self.producers, self.stats, receipts,
            self.txns,
        )  # fmt: skip
        self.appender = Appender(
            storage, topic, own, self.producers, self.follower.caught_up, settings, receipts,
            framing,
        )  # fmt: skip
        self.retention = Retention(storage, topic, self.index, self.tail, self.stats, settings)
        self.history = HistoryReader(
            storage, topic, self.index, self.retention, shared.cursors, self.stats, settings
        )
        self._floor = LogFloor(topic, store, self.index, self.tail, settings.write_timeout_s)
        self.follower.on_gap = self.appender.gap
        # A compacted topic's partition (cleanup.policy=compact): see compacted/part.py.
        self.compacted = (
            None
            if compaction is None
            else CompactedPart(storage, compaction, store, topic, self.index, self.stats, settings)
        )
        self.reads = PartitionReads(
            topic, self.index, self.tail, self.history, self.compacted, lambda: self.log_start
        )
        self.changes = PartitionChanges(
            self.index, self.producers, self.txns, lambda: self.log_start
        )
        self._retention_task: asyncio.Task[None] | None = None
        self._flow = shared.traffic.flow(topic)

    # -- lifecycle ---------------------------------------------------------------

    async def open(self) -> None:
        """Load this partition's index, follow it; returns once caught up with its end."""
        persisted = await self._store.load(self.topic)
        self.index.restore(persisted.sorted(), persisted.mark, persisted.floor)
        self.producers.restore(persisted.producers)
        self.txns.restore(persisted.txns, persisted.mark.next_offset if persisted.mark else 0)
        if self.compacted is not None:
            self.compacted.restore(persisted)
        self.changes.flushed_mark = persisted.mark
        self.follower.start(persisted.mark)
        await self.follower.ready.wait()
        self.tail.drop_below(self.log_start)  # what catching up buffered below the floor
        if persisted.checkpoints or persisted.mark:
            # Pulsar may have deleted ledgers while this partition was not followed, and
            # the index may lack its first checkpoints (writes lost): the first
            # ListOffsets must already see the log start the data has.
            try:
                async with asyncio.timeout(self._settings.open_wait_s):
                    await self.retention.check()
            except (TimeoutError, StorageError) as exc:
                log.warning("%s: retention check at open: %r", self.topic, exc)
        self._retention_task = asyncio.create_task(
            self._watch_retention(), name=f"retention:{self.topic}"
        )
        if self.compacted is not None:
            await self.compacted.start()

    async def close(self) -> None:
        if self.compacted is not None:
            await self.compacted.close()
        await self.appender.close()
        await self._floor.close()
        if self._retention_task is not None:
            self._retention_task.cancel()
            await asyncio.gather(self._retention_task, return_exceptions=True)
        await self.follower.stop()
        await self._shared.cursors.drop(self.topic)
        self.tail.close()
        self.producers.close()

    async def _watch_retention(self) -> None:
        # Partitions opened together spread their checks over the interval.
        interval = self._settings.retention_check_s
        delay = interval * (zlib.crc32(self.topic.encode()) % 1000) / 1000
        while True:
            await asyncio.sleep(delay)
            delay = interval
            try:
                await self.retention.check()
            except StorageError as exc:
                log.debug("%s: retention check: %s", self.topic, exc)

    # -- state -----------------------------------------------------------------------

    @property
    def high_watermark(self) -> int:
        return self.index.high_watermark

    @property
    def last_stable(self) -> int:
        """Where `read_committed` stops: the first offset of the earliest open
        transaction, else the high watermark."""
        return self.txns.last_stable(self.index.high_watermark)

    @property
    def log_start(self) -> int:
        if self.compacted is not None:
            return self.compacted.log_start
        return self.index.log_start

    @property
    def persisted_offset(self) -> int:
        """Offsets below this are in the persisted index (a restart resumes from it)."""
        mark = self.changes.flushed_mark
        return mark.next_offset if mark else 0

    @property
    def last_error(self) -> str | None:
        return self.follower.last_error

    def data_changed(self) -> asyncio.Future[None]:
        return self.follower.data_changed()

    # -- produce ------------------------------------------------------------------------

    async def begin_append(
        self,
        batches: list[tuple[BatchHeader, bytes]],
        fmt: EntryFormat,
        batching: bool = True,
        *,
        shared: bool = False,
    ) -> asyncio.Future[int]:
        """Check and enqueue the writes in call order; the returned future gives the
        first batch's base offset once counted (see `Appender`). `batching=False`
        stores each message as an entry of its own; `shared`: the topic's writer leaves
        room for Pulsar producers instead of fencing."""
        done = await self.appender.begin_append(batches, fmt, batching, shared=shared)
        # counted in once stored, as Kafka counts
        done.add_done_callback(functools.partial(_took, self._flow, batches))
        return done

    def gave(self, pieces: list[bytes]) -> None:
        """A fetch served these batches of this partition (Traffic)."""
        for records in pieces:
            self._flow.bytes_out += len(records)
            self._flow.records_out += count_records(records)

    async def delete_records(self, offset: int) -> int:
        """Kafka's DeleteRecords: `offset` (-1: the high watermark) becomes the log
        start if it is above it, once persisted; returns the log start. See `LogFloor`."""
        return await self._floor.raise_to(offset)

    # -- fetch -------------------------------------------------------------------------

    async def read(self, offset: int, max_bytes: int, min_one: bool = True) -> bytes:
        """See `PartitionReads.read`."""
        return await self.reads.read(offset, max_bytes, min_one)

    async def read_batches(self, offset: int, max_bytes: int, min_one: bool = True) -> list[bytes]:
        """See `PartitionReads.read_batches`."""
        return await self.reads.read_batches(offset, max_bytes, min_one)

    async def offset_for_time(self, timestamp: int) -> tuple[int, int] | None:
        return await self.reads.offset_for_time(timestamp)

    async def position_of(self, offset: int) -> Position | None:
        return await self.reads.position_of(offset)

    async def entry_at(self, position: Position) -> LogEntry | None:
        """See `PartitionReads.entry_at`."""
        return await self.reads.entry_at(position)

    def entries_after(self, key: tuple[int, int]) -> AsyncGenerator[LogEntry, None]:
        """See `PartitionReads.entries_after`."""
        return self.reads.entries_after(key)


def _took(flow: Flow, batches: list[tuple[BatchHeader, bytes]], done: asyncio.Future[int]) -> None:
    if not done.cancelled() and done.exception() is None:
        flow.bytes_in += sum(len(b) for _, b in batches)
        flow.records_in += sum(h.record_count for h, _ in batches)
