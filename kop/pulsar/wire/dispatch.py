"""Routes each command from a broker to whoever it is for."""

from __future__ import annotations

import logging
from collections.abc import Callable

from kop.pulsar.wire.errors import PulsarWireError, server_error
from kop.pulsar.wire.frames import CorruptFrameError, Frame
from kop.pulsar.wire.handlers import HandlerRegistry
from kop.pulsar.wire.handshake import Handshake
from kop.pulsar.wire.pending import PendingRequests
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

log = logging.getLogger("kop.pulsar.wire.connection")  # where these records always went

T = pb.BaseCommand.Type
# Plain ints: attribute lookups on protobuf enum wrappers are slow on a hot path.
_MESSAGE = int(T.MESSAGE)
_SEND_RECEIPT = int(T.SEND_RECEIPT)

# Broker answers that carry the request id of the request they answer, by the field
# of BaseCommand that holds them.
_RESPONSES: dict[int, str] = {
    T.SUCCESS: "success",
    T.PRODUCER_SUCCESS: "producer_success",
    T.LOOKUP_RESPONSE: "lookupTopicResponse",
    T.PARTITIONED_METADATA_RESPONSE: "partitionMetadataResponse",
    T.GET_LAST_MESSAGE_ID_RESPONSE: "getLastMessageIdResponse",
    T.ACK_RESPONSE: "ackResponse",  # its error, if any, is the acknowledger's to read
}


class CommandDispatcher:
    """To the request a command answers, the producer or consumer it names, the
    handshake (CONNECTED, an ERROR for no request), or back to the connection."""

    def __init__(
        self,
        handlers: HandlerRegistry,
        pending: PendingRequests,
        handshake: Handshake,
        address: str,
        send: Callable[[pb.BaseCommand], None],
        abort: Callable[[PulsarWireError], None],
    ) -> None:
        self._producers = handlers.producers
        self._consumers = handlers.consumers
        self._pending = pending
        self._address = address
        self._send = send
        self._abort = abort
        self._handshake = handshake
        self._by_type: dict[int, Callable[[pb.BaseCommand], None]] = {
            T.ERROR: self._on_error,
            T.SEND_ERROR: self._on_send_error,
            T.PING: self._on_ping,
            T.PONG: self._on_pong,
            T.CLOSE_PRODUCER: self._on_close_producer,
            T.CLOSE_CONSUMER: self._on_close_consumer,
            T.REACHED_END_OF_TOPIC: self._on_end_of_topic,
            T.ACTIVE_CONSUMER_CHANGE: self._on_active_consumer_change,
            T.CONNECTED: self._on_connected,
            T.AUTH_CHALLENGE: self._on_auth_challenge,
        }

    def dispatch(self, frame: Frame) -> None:
        command = frame.command
        kind = command.type
        if kind == _MESSAGE:  # the hot two first
            consumer = self._consumers.get(command.message.consumer_id)
            if consumer is not None:
                consumer.on_message(frame)
        elif kind == _SEND_RECEIPT:
            producer = self._producers.get(command.send_receipt.producer_id)
            if producer is not None:
                producer.on_receipt(command.send_receipt)
        elif kind in _RESPONSES:
            response = getattr(command, _RESPONSES[kind])
            self._pending.resolve(response.request_id, command)
        else:
            handle = self._by_type.get(kind)
            if handle is not None:
                handle(command)
            else:
                log.debug("ignoring %s from %s", T.Name(kind), self._address)

    def on_corrupt(self, error: CorruptFrameError) -> None:
        """A bad entry is its consumer's problem; any other bad frame ends the connection."""
        command = error.command
        if command.type == T.MESSAGE:
            consumer = self._consumers.get(command.message.consumer_id)
            if consumer is not None:
                consumer.on_corrupt(error)
                return
        self._abort(error)

    def _on_error(self, command: pb.BaseCommand) -> None:
        error = command.error
        wire_error = server_error(error.error, error.message)
        if not self._pending.fail(error.request_id, wire_error):
            self._handshake.on_stray_error(error.request_id, wire_error)

    def _on_send_error(self, command: pb.BaseCommand) -> None:
        producer = self._producers.get(command.send_error.producer_id)
        if producer is not None:
            producer.on_send_error(command.send_error)

    def _on_ping(self, command: pb.BaseCommand) -> None:
        self._send(pb.BaseCommand(type=T.PONG, pong=pb.CommandPong()))

    def _on_pong(self, command: pb.BaseCommand) -> None:
        pass  # the keep-alive counts any frame as heard

    def _on_close_producer(self, command: pb.BaseCommand) -> None:
        producer = self._producers.pop(command.close_producer.producer_id, None)
        if producer is not None:
            producer.on_closed_by_broker()

    def _on_close_consumer(self, command: pb.BaseCommand) -> None:
        consumer = self._consumers.pop(command.close_consumer.consumer_id, None)
        if consumer is not None:
            consumer.on_closed_by_broker()

    def _on_end_of_topic(self, command: pb.BaseCommand) -> None:
        consumer = self._consumers.get(command.reachedEndOfTopic.consumer_id)
        if consumer is not None:
            consumer.on_end_of_topic()

    def _on_connected(self, command: pb.BaseCommand) -> None:
        self._handshake.on_connected(command.connected)

    def _on_auth_challenge(self, command: pb.BaseCommand) -> None:
        self._handshake.on_auth_challenge(command.authChallenge, self._send)

    def _on_active_consumer_change(self, command: pb.BaseCommand) -> None:
        pass  # only failover subscriptions care; ours are exclusive
