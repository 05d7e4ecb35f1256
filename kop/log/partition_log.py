"""One Kafka partition over one Pulsar topic partition.

A tail reader follows the Pulsar partition in order from the last persisted
checkpoint and assigns offsets as it observes messages (the offset model in
DESIGN.md). A produce is answered once Pulsar acknowledged the write *and*
the tail reader has seen it, so the offset returned is the one every later
reader will compute. Recent entries stay in a tail buffer that serves tail
fetches; older offsets are read from Pulsar starting at the nearest checkpoint.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from kop.log import entry_format
from kop.log.checkpoint_store import CheckpointStore
from kop.log.entry_format import Entry, EntryFormat, ProducerStamp
from kop.log.offset_index import Checkpoint, OffsetIndex
from kop.log.producer_state import ProducerStates
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import BatchHeader, Record, build_batch, iter_records, with_base_offset
from kop.storage.port import MessageLog, TopicReader
from kop.storage.types import Idle, Position, StorageError, StoredMessage, WriteRef

log = logging.getLogger(__name__)

_RECENT_WRITES = 65536


@dataclass(frozen=True, slots=True)
class LogSettings:
    checkpoint_interval: int = 1000
    tail_buffer_bytes: int = 16 << 20
    write_timeout_s: float = 30.0
    open_timeout_s: float = 60.0


@dataclass(frozen=True, slots=True)
class LogEntry:
    base_offset: int
    entry: Entry

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.entry.count - 1


class _Cursor:
    """A reader positioned in the middle of the log, kept for sequential fetches."""

    def __init__(self, reader: TopicReader, next_offset: int) -> None:
        self.reader = reader
        self.next_offset = next_offset
        self.last_position: Position | None = None


PendingOffset = int | asyncio.Future[int]
# A planned write: its batch header, its idempotence handle, its reference, its ack.
_Planned = tuple[BatchHeader, "asyncio.Future[int] | None", WriteRef, "asyncio.Future[None]"]


class PartitionLog:
    def __init__(
        self, session: MessageLog, store: CheckpointStore, topic: str, settings: LogSettings
    ) -> None:
        self.topic = topic
        self._session = session
        self._store = store
        self._settings = settings
        self.index = OffsetIndex(settings.checkpoint_interval, store.checkpoints(topic))
        self.producers: ProducerStates[PendingOffset] = ProducerStates()
        self._tail: list[LogEntry] = []
        self._tail_offsets: list[int] = []
        self._tail_bytes = 0
        # Offsets of this kop's own writes, by (producer name, message index).
        self._own_counts: dict[str, int] = {}
        self._recent: OrderedDict[WriteRef, int] = OrderedDict()
        self._waiters: dict[WriteRef, asyncio.Future[int]] = {}
        self._data_waiters: list[asyncio.Future[None]] = []
        self._unpersisted: list[Checkpoint] = []
        self._last_position: Position | None = None
        self._ready = asyncio.Event()
        self._append_lock = asyncio.Lock()
        self._history_lock = asyncio.Lock()
        self._cursor: _Cursor | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self.last_error: str | None = None

    # -- lifecycle ---------------------------------------------------------

    async def open(self) -> None:
        """Start following the partition; returns once caught up with its end."""
        self._task = asyncio.create_task(self._follow(), name=f"tail:{self.topic}")
        await self._ready.wait()

    async def close(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._drop_cursor()
        for w in list(self._waiters.values()) + self._data_waiters:
            if not w.done():
                w.cancel()

    @property
    def high_watermark(self) -> int:
        return self.index.next_offset

    @property
    def log_start(self) -> int:
        return self.index.log_start

    def take_unpersisted(self) -> list[Checkpoint]:
        taken, self._unpersisted = self._unpersisted, []
        return taken

    def return_unpersisted(self, checkpoints: list[Checkpoint]) -> None:
        self._unpersisted[:0] = checkpoints

    # -- the tail reader -----------------------------------------------------

    async def _follow(self) -> None:
        backoff = 0.2
        while not self._closed:
            reader: TopicReader | None = None
            try:
                skip_through = self._last_position
                resume = self.index.resume_point
                start = skip_through or (resume.position if resume else None)
                reader = await self._session.reader(self.topic, start)
                if not self._ready.is_set():
                    reader.report_idle()
                expect = self.index.resume_point if skip_through is None else None
                while True:
                    msg = await reader.read()
                    if isinstance(msg, Idle):
                        self._ready.set()
                        continue
                    last = self._last_position
                    if last is not None and msg.position <= last:
                        continue  # re-delivered after a reconnect: counted already
                    if expect is not None and msg.position[:2] != expect.position[:2]:
                        log.warning(
                            "%s: checkpoint entry %s is gone from Pulsar (found %s); "
                            "counting on from offset %d so offsets never go backwards",
                            self.topic,
                            expect.position,
                            msg.position,
                            expect.offset,
                        )
                    expect = None
                    self._observe(msg)
                    backoff = 0.2
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # keep following whatever one message did
                self.last_error = str(exc)
                log.warning(
                    "tail reader of %s failed (%s); retrying in %.1fs", self.topic, exc, backoff
                )
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                if reader is not None:
                    await reader.close()

    def _observe(self, msg: StoredMessage) -> None:
        entry = entry_format.decode(msg)
        base, checkpoint = self.index.observe(msg.position, entry.count, entry.max_timestamp)
        self._last_position = msg.position
        if checkpoint is not None:
            self._unpersisted.append(checkpoint)
        item = LogEntry(base, entry)
        self._tail.append(item)
        self._tail_offsets.append(base)
        self._tail_bytes += entry.size
        if self._tail_bytes > self._settings.tail_buffer_bytes * 5 // 4:
            self._trim_tail()
        if entry.stamp is not None:
            s = entry.stamp
            self.producers.record(s.producer_id, s.epoch, s.first_seq, _last_seq(s), base)
        index = self._own_counts.get(msg.producer_name)
        if index is not None:
            self._own_counts[msg.producer_name] = index + 1
            ref = (msg.producer_name, index)
            self._recent[ref] = base
            if len(self._recent) > _RECENT_WRITES:
                self._recent.popitem(last=False)
            waiter = self._waiters.pop(ref, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(base)
        waiters, self._data_waiters = self._data_waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    def _trim_tail(self) -> None:
        drop = 0
        size = self._tail_bytes
        while size > self._settings.tail_buffer_bytes and drop < len(self._tail) - 1:
            size -= self._tail[drop].entry.size
            drop += 1
        del self._tail[:drop]
        del self._tail_offsets[:drop]
        self._tail_bytes = size

    def data_changed(self) -> asyncio.Future[None]:
        """A future resolved when the next message is observed (for long-poll fetches)."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if len(self._data_waiters) >= 64:  # fetches that gave up on an idle partition
            self._data_waiters = [w for w in self._data_waiters if not w.done()]
        self._data_waiters.append(fut)
        return fut

    async def _offset_of(self, ref: WriteRef) -> int:
        known = self._recent.get(ref)
        if known is not None:
            return known
        waiter = self._waiters.get(ref)
        if waiter is None:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters[ref] = waiter
        return await asyncio.shield(waiter)

    # -- produce -------------------------------------------------------------

    async def begin_append(
        self, batches: list[tuple[BatchHeader, bytes]], fmt: EntryFormat
    ) -> Coroutine[Any, Any, int]:
        """Check sequences and enqueue the writes in call order; the returned
        coroutine completes with the first batch's base offset once durable.
        Splitting the two lets a connection keep its requests in order while
        their Pulsar acknowledgements overlap."""
        if self._closed:
            raise KafkaError(ErrorCode.not_leader_or_follower, f"{self.topic} is closed")
        producer = await self._session.writer(self.topic)
        # Count this producer's messages from here on (before any can be observed).
        self._own_counts.setdefault(producer.name, 0)
        loop = asyncio.get_running_loop()
        planned: list[_Planned] = []
        duplicates: list[PendingOffset] = []
        async with self._append_lock:
            for head, batch in batches:
                handle: asyncio.Future[int] | None = None
                stamp: ProducerStamp | None = None
                if head.producer_id >= 0 and head.base_sequence >= 0:
                    dup = self.producers.check(
                        head.producer_id,
                        head.producer_epoch,
                        head.base_sequence,
                        head.last_sequence,
                    )
                    if dup is not None:
                        duplicates.append(dup.result)
                        continue
                    handle = loop.create_future()
                    handle.add_done_callback(_consume_exception)
                    self.producers.record(
                        head.producer_id,
                        head.producer_epoch,
                        head.base_sequence,
                        head.last_sequence,
                        handle,
                    )
                    stamp = ProducerStamp(
                        head.producer_id, head.producer_epoch, head.base_sequence, head.record_count
                    )
                if fmt is EntryFormat.KAFKA:
                    messages = [entry_format.encode_batch(batch, head)]
                else:
                    messages = entry_format.encode_records(list(iter_records(batch)), stamp)
                ref, acked = producer.send_all(messages)
                planned.append((head, handle, ref, acked))
        return self._finish_append(planned, duplicates)

    async def _finish_append(
        self,
        planned: list[_Planned],
        duplicates: list[PendingOffset],
    ) -> int:
        base: int | None = None
        for result in duplicates:
            offset = result if isinstance(result, int) else await result
            base = offset if base is None else base
        for head, handle, ref, acked in planned:
            try:
                async with asyncio.timeout(self._settings.write_timeout_s):
                    await acked
                    offset = await self._offset_of(ref)
            except (TimeoutError, StorageError) as exc:
                # The producer's numbering no longer matches the log; start a fresh one.
                await self._session.close_writer(self.topic, ref[0])
                if handle is not None:
                    self.producers.forget_from(head.producer_id, head.base_sequence)
                    handle.set_exception(KafkaError(ErrorCode.request_timed_out, str(exc)))
                if isinstance(exc, StorageError) and not exc.retriable:
                    raise KafkaError(ErrorCode.message_too_large, str(exc)) from exc
                code = (
                    ErrorCode.request_timed_out
                    if isinstance(exc, TimeoutError)
                    else (ErrorCode.not_enough_replicas)
                )
                raise KafkaError(code, f"write to {self.topic} failed: {exc}") from exc
            if handle is not None and not handle.done():
                handle.set_result(offset)
            base = offset if base is None else base
        assert base is not None
        return base

    # -- fetch ---------------------------------------------------------------

    async def read(self, offset: int, max_bytes: int) -> bytes:
        """Record batches from `offset`: at least one batch, then up to `max_bytes`."""
        self._check_range(offset)
        out: list[bytes] = []
        pending: list[Record] = []
        for item in await self._entries(offset, max_bytes):
            if item.entry.batch is not None:
                if pending:
                    out.append(build_batch(pending))
                    pending = []
                out.append(with_base_offset(item.entry.batch, item.base_offset))
            else:
                assert item.entry.record is not None
                r = item.entry.record
                pending.append(Record(item.base_offset, r.timestamp, r.key, r.value, r.headers))
        if pending:
            out.append(build_batch(pending))
        return b"".join(out)

    async def offset_for_time(self, timestamp: int) -> tuple[int, int] | None:
        """First (offset, timestamp) with timestamp >= `timestamp`, or None."""
        checkpoint = self.index.floor_for_time(timestamp)
        offset = max(checkpoint.offset if checkpoint else self.log_start, self.log_start)
        while offset < self.high_watermark:
            items = await self._entries(offset, 1 << 20)
            if not items:
                break
            for item in items:
                if item.entry.max_timestamp < timestamp:
                    continue
                if item.entry.record is not None:
                    return item.base_offset, item.entry.record.timestamp
                assert item.entry.batch is not None
                for r in iter_records(item.entry.batch, item.base_offset):
                    if r.timestamp >= timestamp:
                        return r.offset, r.timestamp
            offset = items[-1].last_offset + 1
        return None

    def _check_range(self, offset: int) -> None:
        if offset < self.log_start or offset > self.high_watermark:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"offset {offset} outside [{self.log_start}, {self.high_watermark}]",
            )

    async def _entries(self, offset: int, max_bytes: int) -> list[LogEntry]:
        """Entries holding offsets >= `offset`, in order, up to the high watermark:
        at least one, then while they fit in `max_bytes`."""
        hw = self.high_watermark
        out: list[LogEntry] = []
        size = 0
        if offset >= hw:
            return out
        if not self._tail_offsets or offset < self._tail_offsets[0]:
            async with self._history_lock:
                out = await self._history(offset, hw, max_bytes)
            size = sum(item.entry.size for item in out)
            if out:
                offset = out[-1].last_offset + 1
        i = max(0, bisect.bisect_right(self._tail_offsets, offset) - 1)
        for item in self._tail[i:]:
            if item.base_offset >= hw or (out and size >= max_bytes):
                break
            if item.last_offset >= offset:
                out.append(item)
                size += item.entry.size
        return out

    async def _history(self, offset: int, hw: int, max_bytes: int) -> list[LogEntry]:
        """Read from Pulsar, from the nearest checkpoint, until the tail buffer
        (or `hw`) takes over. The reader is kept for the next sequential fetch."""
        cursor = self._cursor
        self._cursor = None
        if (
            cursor is None
            or cursor.next_offset > offset
            or offset - cursor.next_offset > (self._settings.checkpoint_interval)
        ):
            if cursor is not None:
                await cursor.reader.close()
            checkpoint = self.index.floor(offset)
            start = checkpoint.position if checkpoint else None
            try:
                reader = await self._session.reader(self.topic, start)
            except StorageError as exc:
                raise KafkaError(ErrorCode.kafka_storage_error, str(exc)) from exc
            cursor = _Cursor(reader, checkpoint.offset if checkpoint else 0)
        out: list[LogEntry] = []
        size = 0
        try:
            async with asyncio.timeout(self._settings.write_timeout_s):
                while cursor.next_offset < hw and not (out and size >= max_bytes):
                    if self._tail_offsets and cursor.next_offset >= self._tail_offsets[0]:
                        break
                    msg = await cursor.reader.read()
                    assert not isinstance(msg, Idle)
                    if cursor.last_position is not None and msg.position <= cursor.last_position:
                        continue  # re-delivered after a reconnect: counted already
                    cursor.last_position = msg.position
                    entry = entry_format.decode(msg)
                    item = LogEntry(cursor.next_offset, entry)
                    cursor.next_offset += entry.count
                    if item.last_offset >= offset:
                        out.append(item)
                        size += entry.size
        except (TimeoutError, StorageError) as exc:
            await cursor.reader.close()
            raise KafkaError(ErrorCode.kafka_storage_error, f"reading {self.topic}: {exc}") from exc
        except BaseException:
            await cursor.reader.close()
            raise
        self._cursor = cursor
        return out

    async def _drop_cursor(self) -> None:
        if self._cursor is not None:
            await self._cursor.reader.close()
            self._cursor = None


def _last_seq(stamp: ProducerStamp) -> int:
    return (stamp.first_seq + stamp.count - 1) % (1 << 31)


def _consume_exception(fut: asyncio.Future[int]) -> None:
    if not fut.cancelled():
        fut.exception()
