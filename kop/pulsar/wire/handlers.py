"""The producers and consumers on one connection, by the id the broker knows them by."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kop.pulsar.wire.errors import CorruptEntryError, PulsarWireError
from kop.pulsar.wire.frames import Frame
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

if TYPE_CHECKING:
    from kop.pulsar.wire.connection import Connection


class ProducerHandler(Protocol):
    def on_receipt(self, receipt: pb.CommandSendReceipt) -> None: ...
    def on_send_error(self, error: pb.CommandSendError) -> None: ...
    def on_closed_by_broker(self) -> None: ...
    def on_connection_closed(self, connection: Connection) -> None: ...
    def on_writable(self) -> None: ...


class ConsumerHandler(Protocol):
    def on_message(self, frame: Frame) -> None: ...
    def on_corrupt(self, error: CorruptEntryError) -> None: ...
    def on_closed_by_broker(self) -> None: ...
    def on_end_of_topic(self) -> None: ...
    def on_connection_closed(self, connection: Connection) -> None: ...


class HandlerRegistry:
    """Refuses newcomers once closed, so no handler misses the connection's end.
    `producers` and `consumers` are only ever changed in place: others hold them."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerHandler] = {}
        self.consumers: dict[int, ConsumerHandler] = {}
        self._closed: PulsarWireError | None = None

    def register_producer(self, producer_id: int, handler: ProducerHandler) -> None:
        if self._closed is not None:
            raise self._closed
        self.producers[producer_id] = handler

    def unregister_producer(self, producer_id: int, handler: ProducerHandler) -> None:
        if self.producers.get(producer_id) is handler:
            del self.producers[producer_id]

    def register_consumer(self, consumer_id: int, handler: ConsumerHandler) -> None:
        if self._closed is not None:
            raise self._closed
        self.consumers[consumer_id] = handler

    def unregister_consumer(self, consumer_id: int, handler: ConsumerHandler) -> None:
        if self.consumers.get(consumer_id) is handler:
            del self.consumers[consumer_id]

    def close(self, error: PulsarWireError) -> list[ProducerHandler | ConsumerHandler]:
        """Empties the registry and returns who was in it, to be told."""
        self._closed = error
        handlers: list[ProducerHandler | ConsumerHandler] = [
            *self.producers.values(),
            *self.consumers.values(),
        ]
        self.producers.clear()
        self.consumers.clear()
        return handlers
