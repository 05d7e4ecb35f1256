"""The storage port's message log on Apache Pulsar (`pulsar-client`'s C++ core).

Sends build messages with the C++ builder (the asyncio client cannot send a
null value, the flag Pulsar uses for tombstones) and complete asyncio futures
from the client's callback thread. Nothing here blocks the event loop: sends
never wait for queue space (a byte budget shared by all writers gates them
first, so the C++ queue never fills), and every call that talks to the broker
is asynchronous or runs in a thread.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

import _pulsar
import pulsar
import pulsar.asyncio as pulsar_asyncio

from kop.pulsar.admin import PulsarAdmin
from kop.storage.types import (
    IDLE,
    AdminError,
    Idle,
    OutgoingMessage,
    Position,
    StorageError,
    StoredMessage,
    WriteRef,
    message_size,
)

log = logging.getLogger(__name__)

# Results after which a re-send cannot help.
_FINAL = (_pulsar.Result.MessageTooBig, _pulsar.Result.InvalidMessage, _pulsar.Result.TopicNotFound)


def message_id_at(position: Position, partition: int = -1) -> pulsar.MessageId:
    """The id a reader starts at to re-read the whole entry holding `position`."""
    return pulsar.MessageId(partition, position.ledger, position.entry, -1)


class Reader:
    """An in-order, non-durable reader of one topic (partition): it pins no data.

    A pump thread drains the C++ reader in blocking calls (they release the GIL)
    and hands messages to the event loop in batches, one loop wake-up per batch
    instead of one future per message. A bounded hand-off queue of batches
    bounded in count and bytes keeps a reader nobody consumes from holding more
    than a few MiB beyond its C++ receiver queue (`prefetch` messages).
    """

    _BATCH = 500  # messages, and
    _BATCH_BYTES = 1 << 20  # payload bytes (past one message) per hand-off batch
    _POLL_MS = 100  # while asked whether caught up, or lately busy
    _QUIET_POLL_MS = 1000  # a quiet reader (a followed partition nobody writes to)
    _QUIET_AFTER = 10  # empty polls in a row

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
        # A message ends any wait at once; the poll interval only bounds how late
        # an idle report or a close is noticed. Quiet readers poll slowly so a
        # thousand followed partitions do not keep a core busy waking up.
        empty = 0
        while not self._closed.is_set():
            quiet = empty >= self._QUIET_AFTER and not self._report_idle
            try:
                wait_ms = self._QUIET_POLL_MS if quiet else self._POLL_MS
                first = stored_message(self._raw.read_next(wait_ms))
                batch: list[Any] = [first]
                size = len(first.payload or b"")
                empty = 0
                while len(batch) < self._BATCH and size < self._BATCH_BYTES:
                    try:
                        msg = stored_message(self._raw.read_next(0))
                        batch.append(msg)
                        size += len(msg.payload or b"")
                    except _pulsar.Timeout:
                        if self._caught_up():
                            batch.append(IDLE)
                        break
            except _pulsar.Timeout:
                empty += 1
                if not self._caught_up():
                    continue
                batch = [IDLE]
            except Exception as exc:
                if not self._closed.is_set():
                    self._put(StorageError(f"read from {self.topic} failed: {exc}"))
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

    async def read(self) -> StoredMessage | Idle:
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
        msg: StoredMessage | Idle = self._pending.popleft()
        return msg

    def report_idle(self) -> None:
        self._report_idle = True

    async def close(self) -> None:
        self._closed.set()
        # Closing the C++ reader first ends a read_next the pump is blocked in.
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self._raw.close)
        await asyncio.to_thread(self._thread.join, 2.0)


def stored_message(raw: Any) -> StoredMessage:
    """A pulsar-client Message as the storage port's StoredMessage."""
    mid = raw.message_id()
    return StoredMessage(
        position=Position(mid.ledger_id(), mid.entry_id(), mid.batch_index()),
        payload=raw.data(),
        null_value=raw.has_null_value(),
        properties=raw.properties(),
        partition_key=raw.partition_key(),
        event_time=raw.event_timestamp(),
        publish_time=raw.publish_timestamp(),
        producer_name=raw.producer_name(),
    )


class SendBudget:
    """Bytes enqueued to Pulsar and not yet acknowledged, across all writers. The
    C++ client fails sends past its own memory limit; staying under this budget
    means it never does, and a writer waits for room instead."""

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


class PulsarWriter:
    """A Pulsar producer that numbers its messages in send order.

    With broker deduplication on (kop enables it), each message a producer sends
    is stored exactly once and in order, re-sends after a reconnect included. So
    "this producer's n-th message" names a write without trusting send receipts,
    which a reconnect can lose or turn into (-1, -1) for a de-duplicated re-send.
    """

    def __init__(
        self, producer: pulsar_asyncio.Producer, budget: SendBudget, batching: bool
    ) -> None:
        self._producer = producer._producer  # the C++ producer, for null values
        self.batching = batching
        self._name: str = self._producer.producer_name()
        self._budget = budget
        self._sent = 0

    @property
    def name(self) -> str:
        return self._name

    async def wait_capacity(self, size: int) -> None:
        await self._budget.wait_for(size)

    def send_all(
        self, messages: Sequence[OutgoingMessage]
    ) -> tuple[WriteRef, asyncio.Future[None]]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        first = (self._name, self._sent)
        size = sum(message_size(m) for m in messages)
        if not self._budget.fits(size):
            future.set_exception(
                StorageError(f"{size} bytes do not fit in the Pulsar send budget now")
            )
            return first, future
        self._budget.take(size)
        self._sent += len(messages)
        tracker = _AckTracker(future, len(messages), functools.partial(self._budget.give, size))
        for message in messages:
            self._producer.send_async(_build(message), tracker.done)
        return first, future

    async def close(self) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._producer.close_async(functools.partial(_complete, future))
        with contextlib.suppress(StorageError):
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

    def __init__(
        self, future: asyncio.Future[None], count: int, release: Callable[[], None]
    ) -> None:
        self._future = future
        self._left = count
        self._failed = False
        self._release = release
        self._lock = threading.Lock()

    def done(self, result: Any, _msg_id: Any = None) -> None:
        with self._lock:
            self._left -= 1
            last = self._left == 0
            if self._failed:
                first_failure = False
            else:
                first_failure = result != _pulsar.Result.Ok
                self._failed = first_failure
        if last:
            with contextlib.suppress(RuntimeError):
                self._future.get_loop().call_soon_threadsafe(self._release)
        if first_failure or (last and not self._failed):
            _complete(self._future, result)


def _complete(future: asyncio.Future[None], result: Any, _value: Any = None) -> None:
    def done() -> None:
        if future.done():
            return
        if result == _pulsar.Result.Ok:
            future.set_result(None)
        else:
            future.set_exception(StorageError(f"send failed: {result}", result not in _FINAL))

    with contextlib.suppress(RuntimeError):  # the loop is closing
        future.get_loop().call_soon_threadsafe(done)


def _await_callback(start: Callable[[Callable[..., None]], None]) -> asyncio.Future[Any]:
    """Run a C++ `*_async(callback)` call; the future gets its value or a StorageError."""
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def callback(result: Any, value: Any = None) -> None:
        def done() -> None:
            if future.done():
                return
            if result == _pulsar.Result.Ok:
                future.set_result(value)
            else:
                future.set_exception(StorageError(str(result)))

        with contextlib.suppress(RuntimeError):
            future.get_loop().call_soon_threadsafe(done)

    start(callback)
    return future


class PulsarSession:
    """The storage port's MessageLog on one Pulsar client, shared by all partitions."""

    def __init__(
        self,
        service_url: str,
        admin: PulsarAdmin,
        *,
        operation_timeout_s: float = 10.0,
        batching_delay_ms: int = 1,
        send_budget_bytes: int = 32 << 20,
    ) -> None:
        self._client = pulsar_asyncio.Client(
            service_url,
            operation_timeout_seconds=max(1, int(operation_timeout_s)),
            logger=_quiet_logger(),
        )
        self._admin = admin
        self._timeout = operation_timeout_s
        self._batching_delay_ms = batching_delay_ms
        self._budget = SendBudget(send_budget_bytes)
        self._writers: dict[str, PulsarWriter] = {}
        self._writer_locks: dict[str, asyncio.Lock] = {}

    async def writer(self, topic: str, *, batching: bool = True) -> PulsarWriter:
        existing = self._writers.get(topic)
        if existing is not None and existing.batching == batching:
            return existing
        lock = self._writer_locks.setdefault(topic, asyncio.Lock())
        async with lock:
            existing = self._writers.get(topic)
            if existing is not None and existing.batching != batching:
                await self.close_writer(topic, existing.name)
            if topic not in self._writers:
                try:
                    async with asyncio.timeout(self._timeout):
                        raw = await self._client.create_producer(
                            topic,
                            block_if_queue_full=False,
                            batching_enabled=batching,
                            batching_max_publish_delay_ms=self._batching_delay_ms,
                            batching_max_messages=10000,
                            batching_max_allowed_size_in_bytes=1 << 20,
                            max_pending_messages=1_000_000,
                            send_timeout_millis=30000,
                        )
                except (pulsar_asyncio.PulsarException, TimeoutError) as exc:
                    raise StorageError(f"cannot create producer on {topic}: {exc}") from exc
                self._writers[topic] = PulsarWriter(raw, self._budget, batching)
        return self._writers[topic]

    async def close_writer(self, topic: str, name: str | None = None) -> None:
        writer = self._writers.get(topic)
        if writer is None or (name is not None and writer.name != name):
            return
        del self._writers[topic]
        await writer.close()

    async def reader(
        self, topic: str, start: Position | None, *, compacted: bool = False, prefetch: int = 1000
    ) -> Reader:
        start_id = pulsar.MessageId.earliest if start is None else message_id_at(start)
        try:
            async with asyncio.timeout(self._timeout):
                raw = await self._client.create_reader(
                    topic,
                    start_id,
                    receiver_queue_size=prefetch,
                    start_message_id_inclusive=True,
                    is_read_compacted=compacted,
                )
        except (pulsar_asyncio.PulsarException, TimeoutError) as exc:
            raise StorageError(f"cannot create reader on {topic}: {exc}") from exc
        return Reader(raw._reader, topic)

    async def earliest(self, topic: str) -> Position | None:
        try:
            async with asyncio.timeout(self._timeout):
                raw = (
                    await self._client.create_reader(
                        topic,
                        pulsar.MessageId.earliest,
                        receiver_queue_size=1,
                        start_message_id_inclusive=True,
                    )
                )._reader
                try:
                    if not await _await_callback(raw.has_message_available_async):
                        return None
                    msg = await _await_callback(raw.read_next_async)
                    return stored_message(msg).position
                finally:
                    raw.close_async(lambda _result: None)
        except (pulsar_asyncio.PulsarException, TimeoutError) as exc:
            raise StorageError(f"cannot find where {topic} begins: {exc}") from exc

    async def end(self, topic: str) -> Position | None:
        try:
            found = await self._admin.last_message_id(topic)
        except AdminError as exc:
            raise StorageError(f"cannot find where {topic} ends: {exc}") from exc
        if found is None:
            return None
        return Position(*found)

    async def close(self) -> None:
        for topic in list(self._writers):
            await self.close_writer(topic)
        try:
            await self._client.close()
        except pulsar_asyncio.PulsarException as exc:
            log.warning("closing pulsar client: %s", exc)


def _quiet_logger() -> Any:
    """Route the C++ client's logging through Python logging at WARNING and above."""
    logger = logging.getLogger("pulsar.client")
    logger.setLevel(logging.WARNING)
    return logger
