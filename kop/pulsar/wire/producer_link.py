"""A producer's presence on a broker: created, lost, re-created, closed.

Re-creation keeps the name (the caller's, or the one the broker gave, so the
broker's deduplication state applies), raises the producer's epoch and brings the
topic's epoch the broker gave (`access.py`), so an exclusive holder keeps its
fence across unloads; the caller is told each time, to re-send what it has. It
always happens on a new connection: trouble on the producer closes the connection
(`reconnect`), never the producer alone. A refusal that is final (fenced) ends the
re-creating: the caller fails everything (`on_failed`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from kop.pulsar.wire import access
from kop.pulsar.wire.closing import close_on_broker, close_producer, drop_on_broker
from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.errors import ProducerFencedError, ProtocolError, PulsarWireError
from kop.pulsar.wire.handlers import ProducerHandler
from kop.pulsar.wire.message_ids import signed64
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.retry import attach_until_closed
from kop.pulsar.wire.session import Session

log = logging.getLogger("kop.pulsar.wire.producer")  # where these records always went

T = pb.BaseCommand.Type


class ProducerLink:
    """`conn`, `name`, `producer_id` and `max_message_size` are plain attributes,
    not properties: `send` reads them for every entry. `hold` is how it holds the
    topic.

    Every attach is under a new producer id (Java keeps one): after closing a
    producer with CLOSE_PRODUCER (an unload), a broker ignores SENDs for that id on
    that connection for `keepAliveIntervalSeconds`, even once it is attached again;
    if it is then closed without a word (by a fencing producer's try), the same id's
    entries would vanish until the send timeout. A new id's SEND to a producer the
    broker dropped closes the connection, and the producer comes back at once."""

    def __init__(
        self,
        session: Session,
        topic: str,
        handler: ProducerHandler,
        on_attached: Callable[[Connection, bool], None],
        on_failed: Callable[[PulsarWireError], None],
        mode: pb.ProducerAccessMode = access.SHARED,
        name: str = "",
        fence_first: bool = False,
    ) -> None:
        self._session = session
        self._loop = asyncio.get_running_loop()
        self._topic = topic
        self.producer_id = -1  # a new one for every attach
        self._handler = handler  # what the connection tells of receipts and losses
        self._on_attached = on_attached  # and whether it is the first attach
        self._on_failed = on_failed  # reconnecting hit a non-retriable error
        self.conn: Connection | None = None  # set while the broker has our producer
        self.name = name
        self.max_message_size = 0
        self.epoch = -1  # the producer's own, one more for each attach
        self.hold = access.Hold(mode, fence_first=fence_first)
        self._user_named = bool(name)
        self.attached_once = False
        self._reconnecting: asyncio.Task[None] | None = None
        self._closed = False

    async def attach(self) -> None:
        if self.hold.fence_first:
            await self._fence()
        conn = await self._session.connect_topic(self._topic)
        producer_id = self.producer_id = self._session.new_id()
        conn.register_producer(producer_id, self._handler)
        self.epoch += 1
        request_id = conn.new_request_id()
        hold = self.hold
        create = access.producer_command(
            self._topic, producer_id, request_id, self.epoch, hold.mode, self.name,
            self._user_named, hold.brought_epoch,
        )  # fmt: skip
        try:
            answer = await conn.request(
                pb.BaseCommand(type=T.PRODUCER, producer=create), request_id
            )
        except BaseException as exc:  # an error, or close() cancelling a reconnect
            conn.unregister_producer(producer_id, self._handler)
            if not conn.is_closed:  # it may exist on the broker after all: drop it
                self._send_close(conn)
            if isinstance(exc, PulsarWireError):
                raise access.refusal(exc, hold.mode, self.name, not self.attached_once) from exc
            raise
        success = answer.producer_success
        if self._closed:
            conn.unregister_producer(producer_id, self._handler)
            self._send_close(conn)
            return
        moved = access.epoch_moved(hold, success)
        if moved is not None:  # fenced while away: never write again
            conn.unregister_producer(producer_id, self._handler)
            self._send_close(conn)
            raise ProducerFencedError(moved)
        self.name = success.producer_name
        if hold.mode != access.SHARED and success.HasField("topic_epoch"):
            hold.topic_epoch = success.topic_epoch
        last_sequence_id = signed64(success.last_sequence_id)
        if not self.attached_once:
            hold.resumed_after = last_sequence_id
        self.max_message_size = conn.max_message_size
        self.conn = conn
        log.debug(
            "producer %s on %s attached to %s (epoch %d, topic epoch %s, last pushed "
            "sequence id %d)", self.name, self._topic, conn.address, self.epoch,
            hold.topic_epoch, last_sequence_id,
        )  # fmt: skip
        first, self.attached_once = not self.attached_once, True
        self._on_attached(conn, first)

    async def _fence(self) -> None:
        """ExclusiveWithFencing once, then closed: every producer attached to the topic
        is closed (another kop instance's fails for good when it comes back, by
        `epoch_moved`; Pulsar applications' re-attach) and the topic's epoch grows.
        The broker keeps the epoch; the shared attach that follows must find it."""
        conn = await self._session.connect_topic(self._topic)
        producer_id, request_id = self._session.new_id(), conn.new_request_id()
        create = access.producer_command(
            self._topic, producer_id, request_id, 0, access.FENCING, self.name,
            self._user_named, None,
        )  # fmt: skip
        try:
            answer = await conn.request(
                pb.BaseCommand(type=T.PRODUCER, producer=create), request_id
            )
        except BaseException as exc:
            if not conn.is_closed:
                drop_on_broker(conn, close_producer, producer_id)
            if isinstance(exc, PulsarWireError):
                raise access.refusal(exc, access.FENCING, self.name, True) from exc
            raise
        success = answer.producer_success
        what = f"fencing producer {self.name} on {self._topic}"
        await close_on_broker(conn, close_producer, producer_id, log, what)
        if not success.HasField("topic_epoch"):
            raise ProtocolError(f"{what}: the broker gave no topic epoch")
        self.hold.fenced_as(success.topic_epoch)
        log.debug("%s: the topic is ours at epoch %d", what, success.topic_epoch)

    def detach(self, reason: str) -> None:
        """The broker no longer has our producer (or we gave up on it): reconnect."""
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.unregister_producer(self.producer_id, self._handler)
        if self._closed:
            return
        log.info("producer %s on %s: %s; reconnecting", self.name, self._topic, reason)
        if self._reconnecting is None or self._reconnecting.done():
            self._reconnecting = self._loop.create_task(self._reconnect())

    def reconnect(self, why: str) -> None:
        """The broker refused a send or its receipts stopped matching what was sent:
        close the connection, as the Java client does. The broker drops the producer
        with it, and the producer is created afresh on a new connection, where broker
        deduplication settles every pending entry. (Closing just the producer and
        re-creating it on the same connection races the broker: it may still hold
        the old one, answering "already present" with no `last_sequence_id`, or close
        the connection for a SEND to the producer it then removes.)"""
        log.warning("producer %s on %s: %s", self.name, self._topic, ProtocolError(why))
        conn = self.conn
        if conn is not None:
            conn.close(f"closed by the client: {why}")  # on_connection_closed: detach

    def abandon(self) -> None:
        """The producer is done for good while the broker still has it (its topic
        was terminated): drop it there, without waiting."""
        conn, self.conn = self.conn, None
        self.stop()
        if conn is not None:
            conn.unregister_producer(self.producer_id, self._handler)
            self._send_close(conn)

    def stop(self) -> None:
        """No more reconnecting; `close` then drops the producer on the broker."""
        self._closed = True
        task = self._reconnecting
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()

    def forget(self) -> None:
        """Stopped and unregistered here, left on the broker (`WireProducer.leave`)."""
        conn, self.conn = self.conn, None
        self.stop()
        if conn is not None:
            conn.unregister_producer(self.producer_id, self._handler)

    async def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        conn.unregister_producer(self.producer_id, self._handler)
        what = f"producer {self.name} on {self._topic}"
        await close_on_broker(conn, close_producer, self.producer_id, log, what)

    async def _reconnect(self) -> None:
        await attach_until_closed(
            self.attach, lambda: self._closed, self._on_failed, log,
            f"producer {self.name} on {self._topic}", self._session.operation_timeout_s,
        )  # fmt: skip

    def _send_close(self, conn: Connection) -> None:
        drop_on_broker(conn, close_producer, self.producer_id)
