"""The storage port's message log on Apache Pulsar, over kop's own asyncio client
(`kop.pulsar.wire`): one Pulsar entry per stored entry, sent as built and read
back raw, so a Kafka batch costs one send and one read, never one per record.

Nothing here blocks the event loop, and memory is bounded: writes wait for room
in one byte budget shared by all writers, and readers fetch ahead within one
byte budget shared by all readers (`pulsar_read_ahead_bytes`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from kop.pulsar.admin import PulsarAdmin
from kop.pulsar.codecs import kafka_codec, pulsar_codec
from kop.pulsar.shared import PulsarShared, open_shared
from kop.pulsar.wire import (
    ProducerBusyError,
    ProducerFencedError,
    PulsarWireError,
    RawEntry,
    WireClient,
    WireProducer,
    WireReader,
    pb,
)
from kop.pulsar.wire.compression import compress
from kop.pulsar.wire.options import ConnectOptions
from kop.storage.types import (
    IDLE,
    AdminError,
    Idle,
    OutgoingEntry,
    Position,
    StorageError,
    StoredEntry,
    StoredMessage,
    WriterBusy,
    WriteRef,
    WriterFenced,
    WriterMode,
    stored_as,
)

log = logging.getLogger(__name__)

# What an entry's metadata may add to its payload before the broker refuses it.
_METADATA_ROOM = 512
# More than any entry's metadata beyond its properties and a schema version.
_METADATA_BOUND = 4096

# The storage port's writer modes as Pulsar's producer access modes, and whether the
# producer fences first and then shares (kop/pulsar/wire/access.py).
_ACCESS = {
    WriterMode.SHARED: (pb.Shared, False),
    WriterMode.EXCLUSIVE: (pb.Exclusive, False),
    WriterMode.FENCING: (pb.ExclusiveWithFencing, False),
    WriterMode.FENCING_SHARED: (pb.ExclusiveWithFencing, True),
}


class SendBudget:
    """Bytes sent to Pulsar and not yet acknowledged, across all writers: beyond
    it, a writer waits for room (back-pressure) instead of growing memory."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit = limit_bytes
        self.used = 0
        self._freed = asyncio.Event()

    def fits(self, size: int) -> bool:
        return self.used == 0 or self.used + size <= self.limit

    async def wait_for(self, size: int) -> None:
        while not self.fits(size):
            self._freed.clear()
            await self._freed.wait()

    def take(self, size: int) -> None:
        self.used += size

    def give(self, size: int) -> None:
        self.used -= size
        self._freed.set()


def _metadata(entry: OutgoingEntry) -> tuple[pb.MessageMetadata, bytes]:
    """The entry's metadata and payload, compressed in the Pulsar codec of its
    Kafka codec (`kop.pulsar.codecs`)."""
    meta, payload = _plain_metadata(entry)
    if entry.codec:
        meta.compression = pulsar_codec(entry.codec)  # type: ignore[assignment]
        payload = compress(meta.compression, payload)
    return meta, payload


def _plain_metadata(entry: OutgoingEntry) -> tuple[pb.MessageMetadata, bytes]:
    # The producer sets its name, the sequence id and the publish time when it sends.
    meta = pb.MessageMetadata(producer_name="", sequence_id=0, publish_time=0)
    if entry.schema_version is not None:
        meta.schema_version = entry.schema_version
    m = entry.message
    if m is None:
        meta.num_messages_in_batch = entry.count
        if entry.properties:
            meta.properties.extend(pb.KeyValue(key=k, value=v) for k, v in entry.properties.items())
        meta.uncompressed_size = len(entry.batch)
        return meta, entry.batch
    if m.properties:
        meta.properties.extend(pb.KeyValue(key=k, value=v) for k, v in m.properties.items())
    if m.partition_key is not None:
        meta.partition_key = m.partition_key
        if m.key_b64:
            meta.partition_key_b64_encoded = True
    if m.event_time is not None and m.event_time > 0:
        meta.event_time = m.event_time
    payload = m.payload or b""
    if m.payload is None:
        meta.null_value = True
    meta.uncompressed_size = len(payload)
    return meta, payload


def stored_entry(raw: RawEntry) -> StoredEntry:
    """A raw Pulsar entry as the storage port's StoredEntry."""
    meta = raw.metadata
    position = Position(raw.ledger, raw.entry)
    props = {kv.key: kv.value for kv in meta.properties}
    if raw.corrupt is not None:
        # A batch of as many messages as the metadata says, with no layout: the log
        # serves them as null records (docs/offsets.md) and counts them as malformed.
        count = meta.num_messages_in_batch if meta.HasField("num_messages_in_batch") else 1
        return StoredEntry(
            position, meta.producer_name, meta.sequence_id, meta.publish_time, max(count, 1),
            None, b"", props,
        )  # fmt: skip
    codec = kafka_codec(meta.compression)
    version = meta.schema_version if meta.HasField("schema_version") else None
    if meta.HasField("num_messages_in_batch"):
        return StoredEntry(
            position, meta.producer_name, meta.sequence_id, meta.publish_time,
            meta.num_messages_in_batch, None, raw.payload, props, codec, version,
        )  # fmt: skip
    message = StoredMessage(
        position=position,
        payload=raw.payload,
        null_value=meta.null_value,
        properties=props,
        partition_key=meta.partition_key,
        event_time=meta.event_time,
        publish_time=meta.publish_time,
        producer_name=meta.producer_name,
        key_b64=meta.partition_key_b64_encoded,
    )
    return StoredEntry(
        position, meta.producer_name, meta.sequence_id, meta.publish_time, 1, message,
        codec=codec, schema_version=version,
    )  # fmt: skip


class PulsarWriter:
    """A Pulsar producer in the access mode of its `WriterMode` (see TopicWriter):
    its entries' sequence ids continue from `resumed_after`, the highest its name
    had pushed when it first attached (a new name: -1, so the n-th entry has n)."""

    def __init__(self, producer: WireProducer, budget: SendBudget) -> None:
        self._producer = producer
        self._budget = budget

    @property
    def name(self) -> str:
        return self._producer.name

    @property
    def epoch(self) -> int:
        """The topic epoch the broker gave at the first attach and that the producer
        brings to every re-attach (F4 of docs/design/several-instances.md): an
        unload keeps it, a fencing writer makes it one more."""
        return self._producer.hold.epoch

    @property
    def resumed_after(self) -> int:
        return self._producer.hold.resumed_after

    async def wait_capacity(self, size: int) -> None:
        await self._budget.wait_for(size)

    def has_room(self, size: int) -> bool:
        return self._budget.fits(size)

    def send_all(
        self, entries: Sequence[OutgoingEntry]
    ) -> tuple[WriteRef, asyncio.Future[list[StoredEntry | None]]]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[StoredEntry | None]] = loop.create_future()
        first_seq = self._producer.next_sequence_id
        first = (self.name, first_seq)
        built = [_metadata(e) for e in entries]
        limit = self._producer.max_message_size
        for (meta, payload), entry in zip(built, entries, strict=True):
            # The metadata's size is asked (it serializes it) only when the entry may be
            # near the limit: the metadata is never much more than the entry's
            # properties, which `entry.size` counts (with its uncompressed bytes again:
            # an overestimate, never an under-).
            near = len(payload) + entry.size + _METADATA_BOUND > limit
            batch = meta.HasField("num_messages_in_batch")
            if near and batch and len(payload) + meta.ByteSize() + _METADATA_ROOM > limit:
                # Refused before anything is sent: a write is stored whole or not at all.
                # A single message that large is sent in chunks.
                too_big = f"a batch entry of {len(payload)} bytes exceeds Pulsar's limit of {limit}"
                future.set_exception(StorageError(too_big, retriable=False))
                return first, future
        size = sum(e.size for e in entries)
        if not self._budget.fits(size):
            future.set_exception(
                StorageError(f"{size} bytes do not fit in the Pulsar send budget now")
            )
            return first, future
        self._budget.take(size)
        stored: list[StoredEntry | None] = [None] * len(entries)
        left = len(entries)

        def settle(i: int, meta: pb.MessageMetadata, done: asyncio.Future[tuple[int, int]]) -> None:
            # The first failure fails the write; the budget is given back once every
            # entry is stored or failed.
            nonlocal left
            left -= 1
            exc = done.exception()
            if exc is not None:
                if not future.done():
                    future.set_exception(_storage_error(exc, "send failed"))
            else:
                ledger, entry = done.result()
                if ledger >= 0:  # (-1, -1): a re-send Pulsar de-duplicated, place unknown
                    stored[i] = stored_as(
                        entries[i], Position(ledger, entry), meta.producer_name,
                        first_seq + i, meta.publish_time,
                    )  # fmt: skip
            if left == 0:
                self._budget.give(size)
                if not future.done():
                    future.set_result(stored)

        for i, (meta, payload) in enumerate(built):
            sent = self._producer.send(meta, payload, chunking=True)
            sent.add_done_callback(functools.partial(settle, i, meta))
        return first, future

    async def close(self) -> None:
        try:
            await self._producer.close()
        except PulsarWireError as exc:
            log.debug("closing producer %s: %s", self.name, exc)

    async def leave(self) -> None:
        try:
            await self._producer.leave()
        except PulsarWireError as exc:
            log.debug("leaving producer %s: %s", self.name, exc)


@dataclass(slots=True)
class ReaderStats:
    """Readers created and still open. Each is a subscription created and deleted
    on the broker (issue 18: a Pulsar ran out of heap with kop creating 18 a second),
    so both are metrics."""

    opened: int = 0
    open: int = 0


class Reader:
    """An in-order, non-durable reader of one topic partition: it pins no data."""

    def __init__(self, raw: WireReader, topic: str, timeout_s: float, stats: ReaderStats) -> None:
        self._raw = raw
        self.topic = topic
        self._timeout = timeout_s
        self._idle_wanted = False
        self._stats = stats
        self._closed = False
        stats.opened += 1
        stats.open += 1

    def report_idle(self) -> None:
        self._idle_wanted = True

    async def read(self) -> StoredEntry | Idle:
        try:
            if self._idle_wanted and not await self._available():
                self._idle_wanted = False
                return IDLE
            return stored_entry(await self._raw.read())
        except PulsarWireError as exc:
            raise _storage_error(exc, f"read from {self.topic} failed") from exc

    async def _available(self) -> bool:
        """Whether an entry is there to read now. The question fails while the reader
        reconnects (a topic unload); it is asked again until the timeout."""
        async with asyncio.timeout(self._timeout):
            while True:
                try:
                    return await self._raw.has_message_available()
                except PulsarWireError as exc:
                    if not exc.retriable:
                        raise
                    log.debug("has_message_available on %s: %s", self.topic, exc)
                    await asyncio.sleep(0.1)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._stats.open -= 1
        try:
            await self._raw.close()
        except PulsarWireError as exc:
            log.debug("closing reader on %s: %s", self.topic, exc)


class PulsarSession:
    """The storage port's MessageLog on one Pulsar client, shared by all partitions."""

    def __init__(
        self,
        service_url: str,
        admin: PulsarAdmin,
        *,
        operation_timeout_s: float = 10.0,
        send_budget_bytes: int = 32 << 20,
        max_uncompressed_bytes: int = 64 << 20,
        options: ConnectOptions | None = None,
        read_ahead_bytes: int = 256 << 20,
    ) -> None:
        self._client = WireClient(
            service_url,
            operation_timeout_s=operation_timeout_s,
            max_pending_bytes=1 << 40,  # the shared budget bounds sends, not each producer
            max_uncompressed_bytes=max_uncompressed_bytes,
            options=options,
            read_ahead_bytes=read_ahead_bytes,
        )
        self._admin = admin
        self._timeout = operation_timeout_s
        self._budget = SendBudget(send_budget_bytes)
        self.read_ahead = self._client.read_ahead
        self._writers: dict[str, PulsarWriter] = {}
        self._writer_locks: dict[str, asyncio.Lock] = {}
        self.reader_stats = ReaderStats()

    @property
    def wire(self) -> WireClient:
        return self._client

    @property
    def send_budget(self) -> SendBudget:
        return self._budget

    async def writer(
        self, topic: str, *, mode: WriterMode = WriterMode.SHARED, name: str | None = None
    ) -> PulsarWriter:
        """A Pulsar producer in `mode`'s access mode (`_ACCESS`). A topic held by
        another writer refuses SHARED and EXCLUSIVE with WriterBusy at once; FENCING
        and FENCING_SHARED always get in (a name still held by a producer being closed
        is retried within the operation timeout)."""
        existing = self._writers.get(topic)
        if existing is not None:
            return existing
        async with self._writer_locks.setdefault(topic, asyncio.Lock()):
            if topic not in self._writers:
                access_mode, fence_first = _ACCESS[mode]
                try:
                    producer = await self._client.create_producer(
                        topic, access_mode=access_mode, name=name, fence_first=fence_first
                    )
                except ProducerBusyError as exc:
                    raise WriterBusy(f"{topic} is held by another writer: {exc}") from exc
                except ProducerFencedError as exc:
                    raise WriterFenced(f"{topic} was taken over: {exc}") from exc
                except PulsarWireError as exc:
                    raise StorageError(f"cannot create producer on {topic}: {exc}") from exc
                self._writers[topic] = PulsarWriter(producer, self._budget)
        return self._writers[topic]

    def open_writer(self, topic: str) -> PulsarWriter | None:
        return self._writers.get(topic)

    async def close_writer(self, topic: str, name: str | None = None) -> None:
        writer = self._writers.get(topic)
        if writer is None or (name is not None and writer.name != name):
            return
        del self._writers[topic]
        await writer.close()

    async def hand_over_writer(self, topic: str, name: str | None = None) -> None:
        """See `MessageLog.hand_over_writer` (`WireProducer.leave`: why the producer
        is not closed on the broker)."""
        writer = self._writers.get(topic)
        if writer is None or (name is not None and writer.name != name):
            return
        del self._writers[topic]
        await writer.leave()

    async def reader(
        self, topic: str, start: Position | None, *, compacted: bool = False, prefetch: int = 1000
    ) -> Reader:
        at = None if start is None else (start.ledger, start.entry)
        try:
            raw = await self._client.create_reader(
                topic, at, compacted=compacted, receiver_queue=max(1, prefetch)
            )
        except PulsarWireError as exc:
            raise StorageError(f"cannot create reader on {topic}: {exc}") from exc
        return Reader(raw, topic, self._timeout, self.reader_stats)

    async def shared(self, topic: str, subscription: str, *, earliest: bool) -> PulsarShared:
        """See `SharedSubscriptions.shared` (`kop/pulsar/shared.py`)."""
        return await open_shared(self._client, topic, subscription, earliest=earliest)

    async def earliest(self, topic: str) -> Position | None:
        """Entry 0 of the oldest ledger holding any: Pulsar deletes whole ledgers
        only. Asked of the admin API, not of a reader: every open partition asks
        every `retention_check_s`, and a reader would be a subscription each time."""
        try:
            ledgers = await self._admin.ledgers(topic)
        except AdminError as exc:
            raise StorageError(f"cannot find where {topic} begins: {exc}") from exc
        if not ledgers:  # a topic always has its current ledger: this one is not found
            raise StorageError(f"cannot find where {topic} begins: no such topic")
        for ledger, entries in ledgers:
            if entries > 0:
                return Position(ledger, 0)
        return None

    async def end(self, topic: str) -> Position | None:
        try:
            found = await self._admin.last_message_id(topic)
        except AdminError as exc:
            raise StorageError(f"cannot find where {topic} ends: {exc}") from exc
        if found is None:
            return None
        return Position(found[0], found[1])

    async def close(self) -> None:
        for topic in list(self._writers):
            await self.close_writer(topic)
        try:
            await self._client.close()
        except PulsarWireError as exc:
            log.warning("closing the Pulsar client: %s", exc)


def _storage_error(exc: BaseException, what: str) -> StorageError:
    """A fenced producer is a fenced writer; anything else keeps its retriability."""
    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, ProducerFencedError):
        return WriterFenced(f"{what}: {exc}")
    retriable = not isinstance(exc, PulsarWireError) or exc.retriable
    return StorageError(f"{what}: {exc}", retriable)
