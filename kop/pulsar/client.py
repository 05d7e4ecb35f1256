"""Pulsar binary-protocol session on `pulsar.asyncio`: producers, readers, messages.

The asyncio client's `Producer.send` cannot send a null value (the flag Pulsar
uses for tombstones), so sends build the message here with the same C++
builder and complete an asyncio future from the client's callback thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
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
    message_id: bytes  # serialized MessageId, for resuming readers
    payload: bytes
    null_value: bool
    properties: dict[str, str]
    partition_key: str
    event_time: int  # 0 = not set
    publish_time: int


def position_of(msg_id: Any) -> Position:
    return (msg_id.ledger_id(), msg_id.entry_id(), msg_id.batch_index())


def message_id_at(position: Position, partition: int = -1) -> pulsar.MessageId:
    """The id a reader starts at to re-read the whole entry holding `position`."""
    ledger, entry, _batch = position
    return pulsar.MessageId(partition, ledger, entry, -1)


class Reader:
    """An in-order reader of one topic (partition), non-durable: it pins no data."""

    def __init__(self, reader: pulsar_asyncio.Reader) -> None:
        self._reader = reader

    async def read(self) -> PulsarMessage:
        try:
            msg = await self._reader.read_next()
        except pulsar_asyncio.PulsarException as exc:
            raise PulsarError(f"read failed: {exc}") from exc
        raw = msg._message
        mid = raw.message_id()
        return PulsarMessage(
            position=position_of(mid),
            message_id=mid.serialize(),
            payload=raw.data(),
            null_value=raw.has_null_value(),
            properties=raw.properties(),
            partition_key=raw.partition_key(),
            event_time=raw.event_timestamp(),
            publish_time=raw.publish_timestamp(),
        )

    async def has_more(self) -> bool:
        try:
            return bool(await self._reader.has_message_available())
        except pulsar_asyncio.PulsarException as exc:
            raise PulsarError(f"has_message_available failed: {exc}") from exc

    async def close(self) -> None:
        with contextlib.suppress(pulsar_asyncio.PulsarException):
            await self._reader.close()


class Producer:
    def __init__(self, producer: pulsar_asyncio.Producer) -> None:
        self._producer = producer._producer  # the C++ producer, for null values

    def send(self, message: OutgoingMessage) -> asyncio.Future[Position]:
        """Enqueue a send (order is enqueue order) and return a future for its position."""
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
        future: asyncio.Future[Position] = asyncio.get_running_loop().create_future()
        self._producer.send_async(builder.build(), functools.partial(_complete, future))
        return future

    async def close(self) -> None:
        future: asyncio.Future[Position] = asyncio.get_running_loop().create_future()
        self._producer.close_async(functools.partial(_complete, future))
        with contextlib.suppress(PulsarError):
            await future


def _complete(future: asyncio.Future[Position], result: Any, value: Any = None) -> None:
    def done() -> None:
        if future.done():
            return
        if result == _pulsar.Result.Ok:
            future.set_result(position_of(value) if value is not None else (-1, -1, -1))
        else:
            retriable = result not in (
                _pulsar.Result.MessageTooBig,
                _pulsar.Result.InvalidMessage,
                _pulsar.Result.TopicNotFound,
            )
            future.set_exception(PulsarError(f"send failed: {result}", retriable))

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

    async def close_producer(self, topic: str) -> None:
        producer = self._producers.pop(topic, None)
        if producer is not None:
            await producer.close()

    async def reader(
        self,
        topic: str,
        start: bytes | None,
        *,
        inclusive: bool = True,
        queue: int = 1000,
        compacted: bool = False,
    ) -> Reader:
        """A reader from serialized message id `start` (None = earliest)."""
        start_id = (
            pulsar.MessageId.earliest if start is None else pulsar.MessageId.deserialize(start)
        )
        try:
            raw = await self._client.create_reader(
                topic,
                start_id,
                receiver_queue_size=queue,
                start_message_id_inclusive=inclusive,
                is_read_compacted=compacted,
            )
        except pulsar_asyncio.PulsarException as exc:
            raise PulsarError(f"cannot create reader on {topic}: {exc}") from exc
        return Reader(raw)

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


def serialize_at(position: Position) -> bytes:
    return bytes(message_id_at(position).serialize())
