"""The entry point: one `WireClient` per Pulsar cluster, any number of producers and
readers on it, all sharing one connection per broker."""

from __future__ import annotations

import asyncio

from kop.pulsar.wire.compression import MAX_UNCOMPRESSED_BYTES
from kop.pulsar.wire.errors import PulsarWireError
from kop.pulsar.wire.options import ConnectOptions
from kop.pulsar.wire.producer import DEFAULT_MAX_PENDING_BYTES, WireProducer
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.read_ahead import DEFAULT_READ_AHEAD_BYTES, ReadAheadBudget
from kop.pulsar.wire.reader import Position, WireReader
from kop.pulsar.wire.session import Session
from kop.pulsar.wire.shared_consumer import WireSharedConsumer


class WireClient:
    """An asyncio Pulsar client for raw entries. Create it inside a running loop.

    `operation_timeout_s` bounds each broker round trip (lookup, create, subscribe,
    close, ...), the retries of creating a producer or reader, and how long a PING
    may go unanswered. `send_timeout_s` bounds how long a sent entry may wait for its
    receipt (across reconnects); `max_pending_bytes` is a producer's default limit
    for `wait_for_room`; an entry read whose payload would decompress past
    `max_uncompressed_bytes` is corrupt to its reader. `options` carry the
    credentials, TLS settings and listener name every connection uses. The service
    URL may name several hosts (`pulsar://b1:6650,b2:6650`): lookups rotate
    through them. A bad URL raises ServiceUrlError here, not on first use. A
    broker connection with no producer, reader or request for `connection_max_idle_s`
    (0: never) is closed, as the Java client's `connectionMaxIdleSeconds` does.
    `read_ahead_bytes` bounds what all its readers hold received and not yet read,
    together (`read_ahead`).
    """

    def __init__(
        self,
        service_url: str,
        *,
        operation_timeout_s: float = 10.0,
        send_timeout_s: float = 30.0,
        keepalive_s: float = 30.0,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
        max_uncompressed_bytes: int = MAX_UNCOMPRESSED_BYTES,
        options: ConnectOptions | None = None,
        connection_max_idle_s: float = 180.0,
        read_ahead_bytes: int = DEFAULT_READ_AHEAD_BYTES,
    ) -> None:
        self.read_ahead = ReadAheadBudget(read_ahead_bytes)
        self._session = Session(
            service_url,
            operation_timeout_s=operation_timeout_s,
            keepalive_s=keepalive_s,
            options=options,
            connection_max_idle_s=connection_max_idle_s,
        )
        self._send_timeout = send_timeout_s
        self._max_pending = max_pending_bytes
        self._max_uncompressed = max_uncompressed_bytes
        self._closed = False

    @property
    def service_url(self) -> str:
        return self._session.service_url

    async def create_producer(
        self,
        topic: str,
        *,
        max_pending_bytes: int | None = None,
        send_timeout_s: float | None = None,
        access_mode: pb.ProducerAccessMode = pb.Shared,
        name: str | None = None,
        fence_first: bool = False,
    ) -> WireProducer:
        """A producer on `topic` (a full name of one partition, or a non-partitioned
        topic), ready to send. `access_mode` is Pulsar's (Shared, Exclusive,
        ExclusiveWithFencing); a held topic refuses Shared and Exclusive with
        ProducerBusyError at once, not retried. `name` (None: the broker picks a new
        one) continues that name's sequence ids (`WireProducer.hold`). `fence_first`:
        take the topic with ExclusiveWithFencing, then hold it Shared at the epoch
        that made (access.py)."""
        self._check_open()
        producer = WireProducer(
            self._session,
            topic,
            max_pending_bytes=max_pending_bytes or self._max_pending,
            send_timeout_s=send_timeout_s or self._send_timeout,
            access_mode=access_mode,
            name=name,
            fence_first=fence_first,
        )
        await producer.start()
        return producer

    async def create_reader(
        self,
        topic: str,
        start: Position | None,
        *,
        compacted: bool = False,
        receiver_queue: int = 1000,
    ) -> WireReader:
        """A reader of `topic` starting at entry `start` = (ledger, entry), inclusive,
        or at the earliest entry when None. `receiver_queue` bounds the messages
        fetched ahead (a batch entry counts as its messages); the client's read-ahead
        budget bounds their bytes."""
        self._check_open()
        reader = WireReader(
            self._session,
            topic,
            start,
            compacted=compacted,
            receiver_queue=receiver_queue,
            max_uncompressed_bytes=self._max_uncompressed,
            budget=self.read_ahead,
        )
        await reader.start()
        return reader

    async def create_shared_consumer(
        self, topic: str, subscription: str, *, earliest: bool, receiver_queue: int = 100
    ) -> WireSharedConsumer:
        """A consumer on the durable Shared subscription `subscription` of `topic`,
        made at the earliest entry or the end (`earliest`) if it does not exist yet.
        `receiver_queue` bounds the messages delivered ahead of `receive()`."""
        self._check_open()
        consumer = WireSharedConsumer(
            self._session,
            topic,
            subscription,
            earliest=earliest,
            receiver_queue=receiver_queue,
            max_uncompressed_bytes=self._max_uncompressed,
        )
        await consumer.start()
        return consumer

    async def probe(self, topic: str) -> int:
        """Looks `topic` up and connects to its broker, as a first send would: proves
        the cluster is reachable and takes kop's credentials, TLS and lookups (one
        attempt; the caller decides about retrying). Returns the broker's largest
        message (CONNECTED's max_message_size)."""
        self._check_open()
        conn = await self._session.connect_topic(topic)
        return conn.max_message_size

    async def close(self) -> None:
        """Closes every producer (after what was sent is stored or failed) and reader,
        then the connections."""
        if self._closed:
            return
        self._closed = True
        await asyncio.gather(
            *(resource.close() for resource in list(self._session.open)), return_exceptions=True
        )
        self._session.pool.close()
        await self._session.pool.options.auth.close()

    def _check_open(self) -> None:
        if self._closed:
            raise PulsarWireError("client is closed", retriable=False)
