"""An in-order reader of raw entries of one topic partition, surviving reconnects.

It reads through a non-durable exclusive subscription (it pins no data and acks
nothing) and hands out one `RawEntry` per Pulsar entry: a batch stays one object,
its messages are the caller's business. Entries arrive only as far as the FLOW
permits we grant (Pulsar counts messages, so a batch costs its message count), which
bounds the local queue to about `receiver_queue` messages.

Positions are ``(ledger, entry)``. The reader tracks the smallest position it will
still accept; anything the broker delivers below it (entries before an inclusive
start that the broker positioned early, re-deliveries after a reconnect) is dropped,
so the caller sees every entry once, in order.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import secrets
from dataclasses import dataclass

from kop.pulsar.wire.compression import decompress
from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.errors import (
    ConnectionClosedError,
    CorruptEntryError,
    OperationTimeoutError,
    PulsarWireError,
)
from kop.pulsar.wire.frames import Frame
from kop.pulsar.wire.producer import message_id
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.retry import Backoff
from kop.pulsar.wire.session import Session

log = logging.getLogger(__name__)

T = pb.BaseCommand.Type
Position = tuple[int, int]
EARLIEST: Position = (-1, -1)


@dataclass(frozen=True, slots=True)
class RawEntry:
    """One Pulsar entry: its position, its metadata (a batch when
    `metadata.num_messages_in_batch` is set) and its payload, decompressed."""

    ledger: int
    entry: int
    metadata: pb.MessageMetadata
    payload: bytes
    redelivery_count: int = 0
    broker_entry_metadata: pb.BrokerEntryMetadata | None = None


_Item = tuple[Frame, int] | PulsarWireError  # (frame, its message count) or an error, in order


class WireReader:
    """Use `await client.create_reader(topic, start)`; then `read()` in a loop."""

    def __init__(
        self,
        session: Session,
        topic: str,
        start: Position | None,
        *,
        compacted: bool = False,
        receiver_queue: int = 1000,
    ) -> None:
        self.topic = topic
        self._session = session
        self._loop = asyncio.get_running_loop()
        self._id = session.new_id()
        self._subscription = f"kop-reader-{secrets.token_hex(6)}"
        self._compacted = compacted
        self._receiver_queue = max(1, receiver_queue)
        self._next: Position = start if start is not None else EARLIEST
        self._queue: collections.deque[_Item] = collections.deque()
        self._queued_messages = 0
        self._consumed = 0  # messages taken from the broker's permits, not yet granted again
        self._conn: Connection | None = None
        self._attached = asyncio.Event()
        self._waiter: asyncio.Future[None] | None = None
        self._reconnecting: asyncio.Task[None] | None = None
        self._error: PulsarWireError | None = None  # sticky: corrupt entry, fatal failure
        self._end_of_topic = False
        self._closed = False

    # -- public ---------------------------------------------------------------------------

    @property
    def subscription(self) -> str:
        return self._subscription

    @property
    def is_connected(self) -> bool:
        return self._conn is not None

    async def read(self) -> RawEntry:
        """The next entry, waiting for it. Raises PulsarWireError when the reader is
        closed, the topic was terminated and everything is read, an entry is corrupt
        (and from then on), or re-subscribing failed for good."""
        while True:
            if self._closed:
                raise PulsarWireError(f"reader on {self.topic} is closed", retriable=False)
            if self._queue:
                break
            if self._error is not None:
                raise self._error
            if self._end_of_topic:
                raise PulsarWireError(f"{self.topic} is terminated: no more entries", False)
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = self._queue.popleft()
        if isinstance(item, PulsarWireError):
            self._error = item
            raise item
        frame, count = item
        self._queued_messages -= count
        self._consumed += count
        self._grant()
        metadata = frame.metadata
        assert metadata is not None and frame.payload is not None
        try:
            payload = decompress(metadata, frame.payload)
        except CorruptEntryError as exc:
            self._error = exc
            raise
        mid = frame.command.message
        ledger, entry = message_id(mid.message_id)
        return RawEntry(
            ledger, entry, metadata, payload, mid.redelivery_count, frame.broker_entry_metadata
        )

    async def has_message_available(self) -> bool:
        """Whether `read()` has an entry now or the topic holds one past what was
        read (asks the broker for its last entry when nothing is queued here)."""
        if self._queue:
            return True
        if self._closed:
            raise PulsarWireError(f"reader on {self.topic} is closed", retriable=False)
        if self._error is not None:
            raise self._error
        return await self._session.within_timeout(
            f"last message id of {self.topic}", self._broker_has_more
        )

    async def _broker_has_more(self) -> bool:
        try:
            async with asyncio.timeout(self._session.operation_timeout_s):
                await self._attached.wait()
        except TimeoutError as exc:
            raise OperationTimeoutError(f"reader on {self.topic} not connected") from exc
        conn = self._conn
        if conn is None:
            raise ConnectionClosedError(f"reader on {self.topic} not connected")
        request_id = conn.new_request_id()
        ask = pb.CommandGetLastMessageId(consumer_id=self._id, request_id=request_id)
        answer = await conn.request(
            pb.BaseCommand(type=T.GET_LAST_MESSAGE_ID, getLastMessageId=ask), request_id
        )
        last = message_id(answer.getLastMessageIdResponse.last_message_id)
        if self._queue:
            return True
        # (L, -1) is what an empty topic (or ledger) answers: nothing to read.
        return last[0] >= 0 and last[1] >= 0 and last >= self._next

    async def close(self) -> None:
        """Closes the consumer (a non-durable subscription goes with it)."""
        if self._closed:
            return
        self._closed = True
        self._wake()
        task = self._reconnecting
        if task is not None and not task.done():
            task.cancel()
        self._session.forget(self)
        conn, self._conn = self._conn, None
        if conn is None:
            return
        conn.unregister_consumer(self._id, self)
        request_id = conn.new_request_id()
        close = pb.CommandCloseConsumer(consumer_id=self._id, request_id=request_id)
        try:
            await conn.request(
                pb.BaseCommand(type=T.CLOSE_CONSUMER, close_consumer=close), request_id
            )
        except PulsarWireError as exc:
            log.debug("closing reader on %s: %s", self.topic, exc)

    # -- subscribing --------------------------------------------------------------------

    async def start(self) -> None:
        await self._session.within_timeout(f"subscribe to {self.topic}", self._attach)
        self._session.track(self)

    def _start_message_id(self) -> pb.MessageIdData | None:
        """Where the broker should start: the next position we accept, inclusively.
        The broker steps a non-durable cursor back one entry for any start id it
        gets (it takes every start id for a batch message id), so (L, E) makes E the
        first entry delivered; (L, E) past the end of ledger L means the next ledger."""
        if self._next == EARLIEST:
            return None  # initialPosition=Earliest
        ledger, entry = self._next
        return pb.MessageIdData(ledgerId=ledger, entryId=entry)

    async def _attach(self) -> None:
        conn = await self._session.connect_topic(self.topic)
        conn.register_consumer(self._id, self)
        request_id = conn.new_request_id()
        subscribe = pb.CommandSubscribe(
            topic=self.topic,
            subscription=self._subscription,
            subType=pb.CommandSubscribe.Exclusive,
            consumer_id=self._id,
            request_id=request_id,
            consumer_name=self._subscription,
            durable=False,
            read_compacted=self._compacted,
            initialPosition=pb.CommandSubscribe.Earliest,
        )
        start = self._start_message_id()
        if start is not None:
            subscribe.start_message_id.CopyFrom(start)
        try:
            await conn.request(pb.BaseCommand(type=T.SUBSCRIBE, subscribe=subscribe), request_id)
        except BaseException:
            conn.unregister_consumer(self._id, self)
            raise
        if self._closed:
            conn.unregister_consumer(self._id, self)
            return
        self._conn = conn
        self._attached.set()
        # A new subscription has no permits: grant what the local queue leaves room for.
        self._consumed = 0
        self._flow(self._receiver_queue - self._queued_messages)

    def _detach(self, reason: str) -> None:
        conn, self._conn = self._conn, None
        self._attached.clear()
        if conn is not None:
            conn.unregister_consumer(self._id, self)
        if self._closed or self._error is not None:
            return
        log.info("reader on %s: %s; re-subscribing at %s", self.topic, reason, self._next)
        if self._reconnecting is None or self._reconnecting.done():
            self._reconnecting = self._loop.create_task(self._reconnect())

    async def _reconnect(self) -> None:
        backoff = Backoff()
        while not self._closed:
            await asyncio.sleep(backoff.next())
            try:
                await self._attach()
                return
            except PulsarWireError as exc:
                if not exc.retriable:
                    log.error("reader on %s failed: %s", self.topic, exc)
                    self._queue.append(exc)
                    self._wake()
                    return
                log.info("reader on %s: re-subscribe failed: %s", self.topic, exc)

    # -- flow control -------------------------------------------------------------------

    def _grant(self) -> None:
        if self._consumed >= self._receiver_queue // 2:
            self._flow(self._consumed)
            self._consumed = 0

    def _flow(self, permits: int) -> None:
        conn = self._conn
        if conn is not None and permits > 0:
            flow = pb.CommandFlow(consumer_id=self._id, messagePermits=permits)
            conn.send(pb.BaseCommand(type=T.FLOW, flow=flow))

    # -- events from the connection -----------------------------------------------------

    def on_message(self, frame: Frame) -> None:
        metadata = frame.metadata
        assert metadata is not None
        count = metadata.num_messages_in_batch
        position = message_id(frame.command.message.message_id)
        if position < self._next:  # before the start, or seen already
            self._consumed += count
            self._grant()
            return
        self._next = (position[0], position[1] + 1)
        self._queue.append((frame, count))
        self._queued_messages += count
        self._wake()

    def on_corrupt(self, error: CorruptEntryError) -> None:
        self._queue.append(error)
        self._wake()

    def on_closed_by_broker(self) -> None:
        self._detach("closed by the broker")

    def on_end_of_topic(self) -> None:
        self._end_of_topic = True
        self._wake()

    def on_connection_closed(self, connection: Connection) -> None:
        if connection is self._conn:
            self._detach(f"connection to {connection.address} lost")

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
