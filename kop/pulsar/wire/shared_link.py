"""The broker-side consumer behind a `WireSharedConsumer`: subscribing to the durable
Shared subscription, subscribing again after the broker or the connection dropped
it, and the commands sent on it (FLOW, ACK with a receipt, REDELIVER, CLOSE).

Each attachment gets an epoch of its own: when one ends the broker takes back what
it was sent, so the consumer can tell a delivery of a gone attachment from a live one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from kop.pulsar.wire.closing import close_consumer, close_on_broker, drop_on_broker
from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.errors import ConnectionClosedError, PulsarWireError, server_error
from kop.pulsar.wire.handlers import ConsumerHandler
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.retry import attach_until_closed
from kop.pulsar.wire.session import Session

log = logging.getLogger(__name__)

T = pb.BaseCommand.Type


def _ids(positions: Sequence[tuple[int, ...]]) -> list[pb.MessageIdData]:
    return [pb.MessageIdData(ledgerId=p[0], entryId=p[1]) for p in positions]


class SharedLink:
    """`on_attached(permits_to_grant)` runs after each successful subscribe; the
    consumer's `_fail` hears an error that attaching again cannot mend."""

    def __init__(
        self,
        session: Session,
        handler: ConsumerHandler,
        subscribe: pb.CommandSubscribe,
        on_attached: Callable[[], None],
        on_failed: Callable[[PulsarWireError], None],
        what: str,
    ) -> None:
        self._session = session
        self._handler = handler
        self._subscribe = subscribe
        self._on_attached = on_attached
        self._on_failed = on_failed
        self._what = what
        self._id = session.new_id()
        self.epoch = 0  # one more per attachment
        self.connection: Connection | None = None
        self._reconnecting: asyncio.Task[None] | None = None
        self._closed = False

    async def attach(self) -> None:
        """One attempt to subscribe."""
        conn = await self._session.connect_topic(self._subscribe.topic)
        conn.register_consumer(self._id, self._handler)
        request_id = conn.new_request_id()
        subscribe = pb.CommandSubscribe()
        subscribe.CopyFrom(self._subscribe)
        subscribe.consumer_id, subscribe.request_id = self._id, request_id
        try:
            await conn.request(pb.BaseCommand(type=T.SUBSCRIBE, subscribe=subscribe), request_id)
        except BaseException:  # an error, a timeout, or cancelled
            conn.unregister_consumer(self._id, self._handler)
            if not conn.is_closed:  # it may exist on the broker after all: drop it
                drop_on_broker(conn, close_consumer, self._id)
            raise
        if self._closed:  # closed while subscribing: nobody would close it later
            conn.unregister_consumer(self._id, self._handler)
            drop_on_broker(conn, close_consumer, self._id)
            return
        self.epoch += 1
        self.connection = conn
        self._on_attached()

    def detach(self, reason: str, *, again: bool) -> None:
        """The broker or the connection dropped the consumer: subscribe again in the
        background (unless closed, or `again` is False)."""
        conn, self.connection = self.connection, None
        if conn is not None:
            conn.unregister_consumer(self._id, self._handler)
        if self._closed or not again:
            return
        log.info("%s: %s; subscribing again", self._what, reason)
        if self._reconnecting is None or self._reconnecting.done():
            self._reconnecting = asyncio.get_running_loop().create_task(self._reconnect())

    async def _reconnect(self) -> None:
        await attach_until_closed(
            self.attach, lambda: self._closed, self._on_failed, log, self._what,
            self._session.operation_timeout_s,
        )  # fmt: skip

    def flow(self, permits: int) -> None:
        conn = self.connection
        if conn is not None and permits > 0:
            flow = pb.CommandFlow(consumer_id=self._id, messagePermits=permits)
            conn.send(pb.BaseCommand(type=T.FLOW, flow=flow))

    async def ack(self, positions: Sequence[tuple[int, ...]]) -> None:
        """Individual acknowledgements, answered once the broker has them."""
        conn = self.connection
        if conn is None:
            raise ConnectionClosedError(f"{self._what} is not attached")
        request_id = conn.new_request_id()
        ack = pb.CommandAck(
            consumer_id=self._id, ack_type=pb.CommandAck.Individual, request_id=request_id
        )
        ack.message_id.extend(_ids(positions))
        answer = await conn.request(pb.BaseCommand(type=T.ACK, ack=ack), request_id)
        response = answer.ackResponse
        if response.HasField("error"):
            raise server_error(response.error, response.message)

    def redeliver(self, ids: Sequence[pb.MessageIdData]) -> None:
        """Pulsar's negative acknowledgement of these entries (no answer comes)."""
        conn = self.connection
        if conn is None or not ids:
            return
        redeliver = pb.CommandRedeliverUnacknowledgedMessages(consumer_id=self._id)
        redeliver.message_ids.extend(ids)
        command = pb.BaseCommand(
            type=T.REDELIVER_UNACKNOWLEDGED_MESSAGES, redeliverUnacknowledgedMessages=redeliver
        )
        conn.send(command)

    async def close(self) -> None:
        self._closed = True
        task = self._reconnecting
        if task is not None and not task.done():
            task.cancel()
        conn, self.connection = self.connection, None
        if conn is None:
            return
        conn.unregister_consumer(self._id, self._handler)
        await close_on_broker(conn, close_consumer, self._id, log, self._what)
