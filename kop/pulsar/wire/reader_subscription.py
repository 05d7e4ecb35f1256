"""The broker-side consumer behind a `WireReader`: a non-durable exclusive
subscription, (re)subscribed at the reader's position and closed with it.

Everything here is per subscription or per request, never per entry: the reader
stays the connection's consumer handler, so entries skip this class entirely.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import TYPE_CHECKING

from kop.pulsar.wire.closing import close_consumer, close_on_broker, drop_on_broker
from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.errors import ConnectionClosedError, OperationTimeoutError
from kop.pulsar.wire.message_ids import message_id
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.raw_entry import EARLIEST, Position
from kop.pulsar.wire.retry import attach_until_closed
from kop.pulsar.wire.session import Session

if TYPE_CHECKING:
    from kop.pulsar.wire.reader import WireReader

log = logging.getLogger(__name__)

T = pb.BaseCommand.Type


class ReaderSubscription:
    """Subscribes, re-subscribes after the broker or the connection drops it (resuming
    at `reader.position`, so nothing is delivered twice), and closes."""

    def __init__(
        self, session: Session, topic: str, reader: WireReader, *, compacted: bool
    ) -> None:
        self._session = session
        self._topic = topic
        self._reader = reader
        self._compacted = compacted
        self._loop = asyncio.get_running_loop()
        self._id = session.new_id()
        self.name = f"kop-reader-{secrets.token_hex(6)}"
        self.connection: Connection | None = None
        self._attached = asyncio.Event()
        self._reconnecting: asyncio.Task[None] | None = None
        self._closed = False

    def _start_message_id(self) -> pb.MessageIdData | None:
        """Where the broker should start: the next position we accept, inclusively.
        The broker steps a non-durable cursor back one entry for any start id it
        gets (it takes every start id for a batch message id), so (L, E) makes E the
        first entry delivered; (L, E) past the end of ledger L means the next ledger."""
        position = self._reader.position
        if position == EARLIEST:
            return None  # initialPosition=Earliest
        ledger, entry = position
        return pb.MessageIdData(ledgerId=ledger, entryId=entry)

    async def attach(self) -> None:
        """One attempt to subscribe; the reader then grants the first permits."""
        conn = await self._session.connect_topic(self._topic)
        conn.register_consumer(self._id, self._reader)
        request_id = conn.new_request_id()
        subscribe = pb.CommandSubscribe(
            topic=self._topic,
            subscription=self.name,
            subType=pb.CommandSubscribe.Exclusive,
            consumer_id=self._id,
            request_id=request_id,
            consumer_name=self.name,
            durable=False,
            read_compacted=self._compacted,
            initialPosition=pb.CommandSubscribe.Earliest,
        )
        start = self._start_message_id()
        if start is not None:
            subscribe.start_message_id.CopyFrom(start)
        try:
            await conn.request(pb.BaseCommand(type=T.SUBSCRIBE, subscribe=subscribe), request_id)
        except BaseException:  # an error, a timeout, or cancelled (close(), a caller)
            conn.unregister_consumer(self._id, self._reader)
            if not conn.is_closed:  # it may exist on the broker after all: drop it
                self._send_close(conn)
            raise
        if self._closed:  # closed while subscribing: nobody would close it later
            conn.unregister_consumer(self._id, self._reader)
            self._send_close(conn)
            return
        self.connection = conn
        self._attached.set()
        self._reader.on_subscribed()

    def detach(self, reason: str, *, resubscribe: bool) -> None:
        """The broker or the connection dropped the consumer: subscribe again in the
        background (unless closed, or the reader has failed for good)."""
        conn, self.connection = self.connection, None
        self._attached.clear()
        if conn is not None:
            conn.unregister_consumer(self._id, self._reader)
        if self._closed or not resubscribe:
            return
        position = self._reader.position
        log.info("reader on %s: %s; re-subscribing at %s", self._topic, reason, position)
        if self._reconnecting is None or self._reconnecting.done():
            self._reconnecting = self._loop.create_task(self._reconnect())

    def resubscribe(self, reason: str) -> None:
        """What this consumer was sent cannot be used (a corrupt entry) but the
        connection is fine: close it on the broker, then subscribe again at the
        reader's position under a new consumer id, so frames the old one still has
        on the wire are nobody's."""
        conn, self.connection = self.connection, None
        self._attached.clear()
        if conn is None or self._closed:
            return  # already re-subscribing (at the reader's position), or closed
        conn.unregister_consumer(self._id, self._reader)
        old_id, self._id = self._id, self._session.new_id()
        log.warning("reader on %s: %s; re-subscribing at %s", self._topic, reason,
                    self._reader.position)  # fmt: skip
        self._reconnecting = self._loop.create_task(self._close_then_reconnect(conn, old_id))

    async def _close_then_reconnect(self, conn: Connection, consumer_id: int) -> None:
        # Closed first: an exclusive subscription refuses a second consumer.
        await close_on_broker(conn, close_consumer, consumer_id, log, f"reader on {self._topic}")
        await self._reconnect()

    async def _reconnect(self) -> None:
        await attach_until_closed(
            self.attach, lambda: self._closed, self._reader.on_failed, log,
            f"reader on {self._topic}", self._session.operation_timeout_s,
        )  # fmt: skip

    def flow(self, permits: int) -> None:
        conn = self.connection
        if conn is not None and permits > 0:
            flow = pb.CommandFlow(consumer_id=self._id, messagePermits=permits)
            conn.send(pb.BaseCommand(type=T.FLOW, flow=flow))

    async def last_message_id(self) -> Position:
        """The topic's last entry, once subscribed (waits out a re-subscribe up to the
        operation timeout); one attempt."""
        try:
            async with asyncio.timeout(self._session.operation_timeout_s):
                await self._attached.wait()
        except TimeoutError as exc:
            raise OperationTimeoutError(f"reader on {self._topic} not connected") from exc
        conn = self.connection
        if conn is None:
            raise ConnectionClosedError(f"reader on {self._topic} not connected")
        request_id = conn.new_request_id()
        ask = pb.CommandGetLastMessageId(consumer_id=self._id, request_id=request_id)
        answer = await conn.request(
            pb.BaseCommand(type=T.GET_LAST_MESSAGE_ID, getLastMessageId=ask), request_id
        )
        return message_id(answer.getLastMessageIdResponse.last_message_id)

    def _send_close(self, conn: Connection) -> None:
        """Without waiting for the answer: a subscription the broker may have made
        after we stopped waiting for it would otherwise stay for as long as the
        connection (as the Java client does after a subscribe timed out)."""
        drop_on_broker(conn, close_consumer, self._id)

    async def close(self) -> None:
        """Closes the consumer (a non-durable subscription goes with it)."""
        self._closed = True
        task = self._reconnecting
        if task is not None and not task.done():
            task.cancel()
        conn, self.connection = self.connection, None
        if conn is None:
            return
        conn.unregister_consumer(self._id, self._reader)
        await close_on_broker(conn, close_consumer, self._id, log, f"reader on {self._topic}")
