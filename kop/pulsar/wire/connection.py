"""One TCP connection to a Pulsar broker, shared by every producer and reader on it.

An `asyncio.BufferedProtocol`: the transport receives straight into the frame
decoder's buffer. The connection does the handshake, keep-alive, request/response
matching by request id, and routes the commands meant for a producer or consumer to
the handler registered under its id. When it ends, every pending request fails and
every handler is told, once. Writes respect the transport's flow control: while the
broker reads slower than we write, `writable` is False and handlers wait for
`on_writable`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from kop.pulsar.wire.errors import (
    ConnectionClosedError,
    CorruptEntryError,
    OperationTimeoutError,
    ProtocolError,
    PulsarWireError,
    server_error,
)
from kop.pulsar.wire.frames import (
    FRAME_PADDING,
    CorruptFrameError,
    Frame,
    FrameDecoder,
    encode_command,
)
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

log = logging.getLogger(__name__)

T = pb.BaseCommand.Type
CLIENT_VERSION = "kop"
# The newest version this schema knows (v20: topic migration); Pulsar 4.0 speaks v21
# and answers with the lower of the two.
PROTOCOL_VERSION = max(pb.ProtocolVersion.values())
_JOIN_BELOW = 64 * 1024
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
}


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


class Connection(asyncio.BufferedProtocol):
    """Use `await Connection.open(...)`; then `request`, `send`, `write_payload`."""

    def __init__(
        self,
        address: str,
        *,
        proxy_to_broker_url: str | None,
        operation_timeout_s: float,
        keepalive_s: float,
        write_buffer_high: int = 4 * 1024 * 1024,
    ) -> None:
        self.address = address
        self._proxy_to = proxy_to_broker_url
        self._timeout = operation_timeout_s
        self._keepalive_s = keepalive_s
        self._high = write_buffer_high
        self._loop = asyncio.get_running_loop()
        self._decoder = FrameDecoder()
        self._transport: asyncio.Transport | None = None
        self._connected: asyncio.Future[pb.CommandConnected] = self._loop.create_future()
        self._connected.add_done_callback(_retrieve)
        self._requests: dict[int, asyncio.Future[pb.BaseCommand]] = {}
        self._next_request_id = 0
        self._producers: dict[int, ProducerHandler] = {}
        self._consumers: dict[int, ConsumerHandler] = {}
        self._paused = False
        self._closed: BaseException | None = None
        self._close_callbacks: list[Callable[[Connection], None]] = []
        self._heard = False  # any frame since our last PING
        self._keepalive: asyncio.TimerHandle | None = None
        self.max_message_size = 0
        self.server_version = ""
        self.protocol_version = 0
        self._handlers: dict[int, Callable[[pb.BaseCommand], None]] = {
            T.ERROR: self._on_error,
            T.SEND_ERROR: self._on_send_error,
            T.PING: self._on_ping,
            T.PONG: self._on_pong,
            T.CLOSE_PRODUCER: self._on_close_producer,
            T.CLOSE_CONSUMER: self._on_close_consumer,
            T.REACHED_END_OF_TOPIC: self._on_end_of_topic,
            T.ACTIVE_CONSUMER_CHANGE: self._on_active_consumer_change,
            T.CONNECTED: self._on_connected,
        }

    # -- opening and closing -------------------------------------------------------

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        proxy_to_broker_url: str | None = None,
        operation_timeout_s: float = 10.0,
        keepalive_s: float = 30.0,
    ) -> Connection:
        """Connects and completes the CONNECT/CONNECTED handshake within the timeout."""
        loop = asyncio.get_running_loop()
        address = f"{host}:{port}"

        def factory() -> Connection:
            return cls(
                address,
                proxy_to_broker_url=proxy_to_broker_url,
                operation_timeout_s=operation_timeout_s,
                keepalive_s=keepalive_s,
            )

        conn: Connection | None = None
        try:
            async with asyncio.timeout(operation_timeout_s):
                _, conn = await loop.create_connection(factory, host, port)
                await conn._connected
        except BaseException as exc:
            if conn is not None:
                conn.close("failed to open")
            if isinstance(exc, TimeoutError):
                raise OperationTimeoutError(f"connecting to {address} timed out") from exc
            if isinstance(exc, OSError):
                raise ConnectionClosedError(f"cannot connect to {address}: {exc}") from exc
            raise
        return conn

    @property
    def is_closed(self) -> bool:
        return self._closed is not None

    @property
    def writable(self) -> bool:
        return not self._paused and self._closed is None

    def add_close_callback(self, callback: Callable[[Connection], None]) -> None:
        if self._closed is not None:
            callback(self)
        else:
            self._close_callbacks.append(callback)

    def close(self, reason: str = "closed by the client") -> None:
        if self._transport is not None:
            self._transport.close()  # connection_lost does the rest
        self._shut(ConnectionClosedError(f"connection to {self.address} {reason}"))

    def abort(self, error: PulsarWireError) -> None:
        """Ends the connection at once because of `error` (a protocol violation, a
        missed PONG): every request fails with it and every handler reconnects."""
        log.warning("closing connection to %s: %s", self.address, error)
        if self._transport is not None:
            self._transport.abort()
        self._shut(error)

    def _shut(self, error: PulsarWireError) -> None:
        if self._closed is not None:
            return
        self._closed = error
        if self._keepalive is not None:
            self._keepalive.cancel()
        if not self._connected.done():
            self._connected.set_exception(error)
        requests, self._requests = self._requests, {}
        for future in requests.values():
            if not future.done():
                future.set_exception(error)
        handlers: list[ProducerHandler | ConsumerHandler] = [
            *self._producers.values(),
            *self._consumers.values(),
        ]
        self._producers.clear()
        self._consumers.clear()
        for handler in handlers:
            handler.on_connection_closed(self)
        for callback in self._close_callbacks:
            callback(self)
        self._close_callbacks.clear()

    # -- asyncio.BufferedProtocol ----------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        transport.set_write_buffer_limits(high=self._high, low=self._high // 4)
        connect = pb.CommandConnect(
            client_version=CLIENT_VERSION, protocol_version=PROTOCOL_VERSION
        )
        if self._proxy_to:
            connect.proxy_to_broker_url = self._proxy_to
        self._write(encode_command(pb.BaseCommand(type=T.CONNECT, connect=connect)))

    def connection_lost(self, exc: Exception | None) -> None:
        why = f": {exc}" if exc else ""
        self._shut(ConnectionClosedError(f"connection to {self.address} lost{why}"))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._decoder.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        decoder = self._decoder
        decoder.buffer_updated(nbytes)
        self._heard = True
        while self._closed is None:
            try:
                frame = decoder.next_frame()
            except CorruptFrameError as exc:
                self._on_corrupt(exc)
                continue
            except ProtocolError as exc:
                self.abort(exc)
                return
            if frame is None:
                return
            self._dispatch(frame)

    def eof_received(self) -> bool | None:
        return False  # close our side too

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        for handler in list(self._producers.values()):
            if not self._paused:
                handler.on_writable()

    # -- requests and writes -------------------------------------------------------

    def new_request_id(self) -> int:
        self._next_request_id += 1
        return self._next_request_id

    async def request(self, command: pb.BaseCommand, request_id: int) -> pb.BaseCommand:
        """Sends `command` (which carries `request_id`) and returns the broker's
        answer; an ERROR answer raises, as does no answer within the timeout."""
        if self._closed is not None:
            raise self._closed
        future: asyncio.Future[pb.BaseCommand] = self._loop.create_future()
        self._requests[request_id] = future
        self.send(command)
        try:
            async with asyncio.timeout(self._timeout):
                return await future
        except TimeoutError as exc:
            what = T.Name(command.type)
            raise OperationTimeoutError(
                f"{what} to {self.address}: no answer in {self._timeout}s"
            ) from exc
        finally:
            self._requests.pop(request_id, None)

    def send(self, command: pb.BaseCommand) -> None:
        """Writes a simple command (ignoring flow control: they are small)."""
        if self._closed is None:
            self._write(encode_command(command))

    def write_frames(self, frames: Iterable[tuple[bytes, bytes | memoryview]]) -> None:
        """Writes payload frames given as (head, payload); the caller checks `writable`
        first. Small frames are joined into one write (one send call for many), a
        large payload goes as a piece of its own (no copy into a joined frame)."""
        transport = self._transport
        if transport is None or self._closed is not None:
            return
        joined: list[bytes | memoryview] = []
        for head, payload in frames:
            joined.append(head)
            if len(payload) < _JOIN_BELOW:
                joined.append(payload)
            else:
                transport.write(b"".join(joined))
                joined.clear()
                transport.write(payload)
        if joined:
            transport.write(b"".join(joined))

    def _write(self, data: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    # -- handlers ---------------------------------------------------------------------

    def register_producer(self, producer_id: int, handler: ProducerHandler) -> None:
        if self._closed is not None:
            raise self._closed
        self._producers[producer_id] = handler

    def unregister_producer(self, producer_id: int, handler: ProducerHandler) -> None:
        if self._producers.get(producer_id) is handler:
            del self._producers[producer_id]

    def register_consumer(self, consumer_id: int, handler: ConsumerHandler) -> None:
        if self._closed is not None:
            raise self._closed
        self._consumers[consumer_id] = handler

    def unregister_consumer(self, consumer_id: int, handler: ConsumerHandler) -> None:
        if self._consumers.get(consumer_id) is handler:
            del self._consumers[consumer_id]

    # -- incoming ---------------------------------------------------------------------

    def _dispatch(self, frame: Frame) -> None:
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
            self._resolve(response.request_id, command)
        else:
            handle = self._handlers.get(kind)
            if handle is not None:
                handle(command)
            else:
                log.debug("ignoring %s from %s", T.Name(kind), self.address)

    def _on_error(self, command: pb.BaseCommand) -> None:
        error = command.error
        self._fail(error.request_id, server_error(error.error, error.message))

    def _on_send_error(self, command: pb.BaseCommand) -> None:
        producer = self._producers.get(command.send_error.producer_id)
        if producer is not None:
            producer.on_send_error(command.send_error)

    def _on_ping(self, command: pb.BaseCommand) -> None:
        self.send(pb.BaseCommand(type=T.PONG, pong=pb.CommandPong()))

    def _on_pong(self, command: pb.BaseCommand) -> None:
        pass  # _heard is set by any frame

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

    def _on_active_consumer_change(self, command: pb.BaseCommand) -> None:
        pass  # only failover subscriptions care; ours are exclusive

    def _on_connected(self, command: pb.BaseCommand) -> None:
        connected = command.connected
        self.server_version = connected.server_version
        self.protocol_version = connected.protocol_version
        if connected.HasField("max_message_size"):
            self.max_message_size = connected.max_message_size
        else:
            self.max_message_size = 5 * 1024 * 1024
        self._decoder.max_frame_size = self.max_message_size + 2 * FRAME_PADDING
        if not self._connected.done():
            self._connected.set_result(connected)
        self._keepalive = self._loop.call_later(self._keepalive_s, self._ping)

    def _on_corrupt(self, error: CorruptFrameError) -> None:
        command = error.command
        if command.type == T.MESSAGE:
            consumer = self._consumers.get(command.message.consumer_id)
            if consumer is not None:
                consumer.on_corrupt(error)
                return
        self.abort(error)

    def _resolve(self, request_id: int, command: pb.BaseCommand) -> None:
        future = self._requests.pop(request_id, None)
        if future is not None and not future.done():
            future.set_result(command)

    def _fail(self, request_id: int, error: PulsarWireError) -> None:
        future = self._requests.pop(request_id, None)
        if future is not None and not future.done():
            future.set_exception(error)
        elif not self._connected.done():
            self._connected.set_exception(error)  # CONNECT refused
        else:
            log.warning("error from %s for no request (%d): %s", self.address, request_id, error)

    # -- keep-alive -------------------------------------------------------------------

    def _ping(self) -> None:
        """Every `keepalive_s`: PING, and close unless something (the PONG, or any
        other frame: a connection busy streaming to us is alive, and a backlog of
        frames ahead of the PONG may delay it) arrives within the operation timeout."""
        if self._closed is not None:
            return
        self._heard = False
        self.send(pb.BaseCommand(type=T.PING, ping=pb.CommandPing()))
        self._keepalive = self._loop.call_later(self._timeout, self._check_pong)

    def _check_pong(self) -> None:
        if self._closed is not None:
            return
        if not self._heard:
            self.abort(OperationTimeoutError(f"no PONG from {self.address} in {self._timeout}s"))
            return
        self._keepalive = self._loop.call_later(
            max(0.0, self._keepalive_s - self._timeout), self._ping
        )


def _retrieve(future: asyncio.Future[pb.CommandConnected]) -> None:
    """Marks a handshake failure seen: nobody awaits it once `open` gave up."""
    if not future.cancelled():
        future.exception()
