"""Pulsar binary-protocol session on `pulsar.asyncio`: producers, readers, messages.

The asyncio client's `Producer.send` cannot send a null value (the flag Pulsar
uses for tombstones), so sends build the message here with the same C++
builder and complete an asyncio future from the client's callback thread.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import queue
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import _pulsar
import pulsar
import pulsar.asyncio as pulsar_asyncio

log = logging.getLogger(__name__)

Position = tuple[int, int, int]  # (ledger, entry, batch index); batch index -1 = unbatched


class PulsarError(Exception):
    """A Pulsar operation failed; `retriable` says whether a client should try again."""

    def __init__(self, message: str, retriable: bool = True) -> None:
        super().__init__(message)
        self.retriable = retriable


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    payload: bytes | None  # None = a null value
    properties: dict[str, str]
    partition_key: str | None
    event_time: int | None


@dataclass(frozen=True, slots=True)
class PulsarMessage:
    position: Position
    payload: bytes
    null_value: bool
    properties: dict[str, str]
    partition_key: str
    event_time: int  # 0 = not set
    publish_time: int
    producer_name: str = ""


def message_id_at(position: Position, partition: int = -1) -> pulsar.MessageId:
    """The id a reader starts at to re-read the whole entry holding `position`."""
    ledger, entry, _batch = position
    return pulsar.MessageId(partition, ledger, entry, -1)


IDLE = object()  # a pump's marker: everything before it was all the topic had


class Reader:
    """An in-order, non-durable reader of one topic (partition): it pins no data.

    A pump thread drains the C++ reader in blocking calls (they release the GIL)
    and hands messages to the event loop in batches, one loop wake-up per batch
    instead of one future per message. A bounded hand-off queue keeps a reader
    nobody consumes from buffering more than a few batches.
    """

    _BATCH = 500
    _POLL_MS = 100

    def __init__(self, reader: Any, topic: str) -> None:
        self._raw = reader
        self.topic = topic
        self._loop = asyncio.get_running_loop()
        self._handoff: queue.Queue[list[Any] | BaseException] = queue.Queue(maxsize=4)
        self._wakeup = asyncio.Event()
        self._pending: collections.deque[Any] = collections.deque()
        self._closed = threading.Event()
        self._report_idle = False
        self._thread = threading.Thread(target=self._pump, name=f"reader:{topic}", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        while not self._closed.is_set():
            try:
                batch: list[Any] = [_convert(self._raw.read_next(self._POLL_MS))]
                while len(batch) < self._BATCH:
                    try:
                        batch.append(_convert(self._raw.read_next(0)))
                    except _pulsar.Timeout:
                        if self._caught_up():
                            batch.append(IDLE)
                        break
            except _pulsar.Timeout:
                if not self._caught_up():
                    continue
                batch = [IDLE]
            except Exception as exc:
                if not self._closed.is_set():
                    self._put(PulsarError(f"read from {self.topic} failed: {exc}"))
                return
            self._put(batch)

    def _caught_up(self) -> bool:
        """Once asked (report_idle), true when nothing more is in the topic now.
        While the reader is reconnecting (a topic unload) the question fails; it is
        asked again at the next quiet poll."""
        if not self._report_idle:
            return False
        try:
            available = self._raw.has_message_available()
        except Exception as exc:
            log.debug("has_message_available on %s: %s", self.topic, exc)
            return False
        if available:
            return False
        self._report_idle = False
        return True

    def _put(self, item: list[Any] | BaseException) -> None:
        while not self._closed.is_set():
            try:
                self._handoff.put(item, timeout=0.2)
            except queue.Full:
                continue
            with contextlib.suppress(RuntimeError):  # the loop is closing
                self._loop.call_soon_threadsafe(self._wakeup.set)
            return

    async def read(self) -> Any:
        """The next message, or IDLE once after `report_idle()` when the reader has
        delivered everything the topic held."""
        while not self._pending:
            try:
                item = self._handoff.get_nowait()
            except queue.Empty:
                self._wakeup.clear()
                if self._handoff.empty():
                    await self._wakeup.wait()
                continue
            if isinstance(item, BaseException):
                raise item
            self._pending.extend(item)
        return self._pending.popleft()

    def report_idle(self) -> None:
        """Ask for one IDLE marker when the reader has caught up with the topic."""
        self._report_idle = True

    async def close(self) -> None:
        self._closed.set()
        await asyncio.to_thread(self._thread.join, 2.0)
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self._raw.close)


def _convert(raw: Any) -> PulsarMessage:
    mid = raw.message_id()
    return PulsarMessage(
        position=(mid.ledger_id(), mid.entry_id(), mid.batch_index()),
        payload=raw.data(),
        null_value=raw.has_null_value(),
        properties=raw.properties(),
        partition_key=raw.partition_key(),
        event_time=raw.event_timestamp(),
        publish_time=raw.publish_timestamp(),
        producer_name=raw.producer_name(),
    )


WriteRef = tuple[str, int]  # (producer name, index of the message among that producer's sends)


class Producer:
    """A Pulsar producer that numbers its messages in send order.

    With broker deduplication on (kop enables it), each message a producer sends
    is stored exactly once and in order, re-sends after a reconnect included. So
    "this producer's n-th message" names a write without trusting send receipts,
    which a reconnect can lose or turn into (-1, -1) for a de-duplicated re-send.
    """

    def __init__(self, producer: pulsar_asyncio.Producer) -> None:
        self._producer = producer._producer  # the C++ producer, for null values
        self.name: str = self._producer.producer_name()
        self._sent = 0

    def send_all(
        self, messages: Sequence[OutgoingMessage]
    ) -> tuple[WriteRef, asyncio.Future[None]]:
        """Enqueue sends in order. Returns the first message's reference and a future
        that completes once Pulsar acknowledged all of them (or fails with the first
        error). Acknowledgements are counted in the client's thread, so the event
        loop wakes once per call."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        first = (self.name, self._sent)
        self._sent += len(messages)
        tracker = _AckTracker(future, len(messages))
        for message in messages:
            self._producer.send_async(_build(message), tracker.done)
        return first, future

    async def close(self) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._producer.close_async(functools.partial(_complete, future))
        with contextlib.suppress(PulsarError):
            await future


def _build(message: OutgoingMessage) -> Any:
    builder = _pulsar.MessageBuilder()
    if message.payload is None:
        builder.set_null_value()
    else:
        builder.content(message.payload)
    for k, v in message.properties.items():
        builder.property(k, v)
    if message.partition_key is not None:
        builder.partition_key(message.partition_key)
    if message.event_time is not None and message.event_time > 0:
        builder.event_timestamp(message.event_time)
    return builder.build()


class _AckTracker:
    """Counts a group's acknowledgements in the Pulsar client's thread."""

    def __init__(self, future: asyncio.Future[None], count: int) -> None:
        self._future = future
        self._left = count
        self._failed = False
        self._lock = threading.Lock()

    def done(self, result: Any, _msg_id: Any = None) -> None:
        with self._lock:
            if self._failed:
                return
            if result != _pulsar.Result.Ok:
                self._failed = True
                _complete(self._future, result)
                return
            self._left -= 1
            if self._left:
                return
        _complete(self._future, result)


def _complete(future: asyncio.Future[None], result: Any, _value: Any = None) -> None:
    def done() -> None:
        if future.done():
            return
        if result == _pulsar.Result.Ok:
            future.set_result(None)
        else:
            retriable = result not in (
                _pulsar.Result.MessageTooBig,
                _pulsar.Result.InvalidMessage,
                _pulsar.Result.TopicNotFound,
            )
            future.set_exception(PulsarError(f"send failed: {result}", retriable))

    with contextlib.suppress(RuntimeError):  # the loop is closing
        future.get_loop().call_soon_threadsafe(done)


class PulsarSession:
    """One client connection pool to the Pulsar cluster, shared by all partitions."""

    def __init__(
        self,
        service_url: str,
        *,
        operation_timeout_s: int = 30,
        batching_delay_ms: int = 1,
    ) -> None:
        self._client = pulsar_asyncio.Client(
            service_url,
            operation_timeout_seconds=operation_timeout_s,
            logger=_quiet_logger(),
        )
        self._batching_delay_ms = batching_delay_ms
        self._producers: dict[str, Producer] = {}
        self._producer_locks: dict[str, asyncio.Lock] = {}

    async def producer(self, topic: str) -> Producer:
        existing = self._producers.get(topic)
        if existing is not None:
            return existing
        lock = self._producer_locks.setdefault(topic, asyncio.Lock())
        async with lock:
            if topic not in self._producers:
                try:
                    raw = await self._client.create_producer(
                        topic,
                        block_if_queue_full=True,
                        batching_enabled=True,
                        batching_max_publish_delay_ms=self._batching_delay_ms,
                        batching_max_messages=10000,
                        batching_max_allowed_size_in_bytes=1 << 20,
                        max_pending_messages=100000,
                        send_timeout_millis=30000,
                    )
                except pulsar_asyncio.PulsarException as exc:
                    raise PulsarError(f"cannot create producer on {topic}: {exc}") from exc
                self._producers[topic] = Producer(raw)
        return self._producers[topic]

    async def close_producer(self, topic: str, name: str | None = None) -> None:
        """Close the topic's producer (only if it is still the one named `name`)."""
        producer = self._producers.get(topic)
        if producer is None or (name is not None and producer.name != name):
            return
        del self._producers[topic]
        await producer.close()

    async def reader(
        self,
        topic: str,
        start: Position | None,
        *,
        inclusive: bool = True,
        prefetch: int = 1000,
        compacted: bool = False,
    ) -> Reader:
        """A reader from the entry holding `start` (None = earliest)."""
        start_id = pulsar.MessageId.earliest if start is None else message_id_at(start)
        try:
            raw = await self._client.create_reader(
                topic,
                start_id,
                receiver_queue_size=prefetch,
                start_message_id_inclusive=inclusive,
                is_read_compacted=compacted,
            )
        except pulsar_asyncio.PulsarException as exc:
            raise PulsarError(f"cannot create reader on {topic}: {exc}") from exc
        return Reader(raw._reader, topic)

    async def close(self) -> None:
        for topic in list(self._producers):
            await self.close_producer(topic)
        try:
            await self._client.close()
        except pulsar_asyncio.PulsarException as exc:
            log.warning("closing pulsar client: %s", exc)


def _quiet_logger() -> Any:
    """Route the C++ client's logging through Python logging at WARNING and above."""
    logger = logging.getLogger("pulsar.client")
    logger.setLevel(logging.WARNING)
    return logger
