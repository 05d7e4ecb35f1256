"""Closing a producer or a consumer on the broker, the same way for both: asked
and waited for (`close_on_broker`), or sent without waiting (`drop_on_broker`),
for one the broker may have made after we stopped waiting for it: nothing else
would close it, and it would stay for as long as the connection."""

from __future__ import annotations

import logging
from collections.abc import Callable

from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.errors import PulsarWireError
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

T = pb.BaseCommand.Type
# (producer or consumer id, request id) -> the CLOSE_PRODUCER or CLOSE_CONSUMER command
CloseCommand = Callable[[int, int], pb.BaseCommand]


def close_producer(producer_id: int, request_id: int) -> pb.BaseCommand:
    close = pb.CommandCloseProducer(producer_id=producer_id, request_id=request_id)
    return pb.BaseCommand(type=T.CLOSE_PRODUCER, close_producer=close)


def close_consumer(consumer_id: int, request_id: int) -> pb.BaseCommand:
    close = pb.CommandCloseConsumer(consumer_id=consumer_id, request_id=request_id)
    return pb.BaseCommand(type=T.CLOSE_CONSUMER, close_consumer=close)


async def close_on_broker(
    conn: Connection, command: CloseCommand, handle_id: int, log: logging.Logger, what: str
) -> None:
    """Asks the broker to close `what` and waits for the answer; a failure is only
    logged: the connection going, or the broker not knowing it, closes it too."""
    request_id = conn.new_request_id()
    try:
        await conn.request(command(handle_id, request_id), request_id)
    except PulsarWireError as exc:
        log.debug("closing %s: %s", what, exc)


def drop_on_broker(conn: Connection, command: CloseCommand, handle_id: int) -> None:
    """Tells the broker to close it, without waiting for the answer."""
    conn.send(command(handle_id, conn.new_request_id()))
