"""One TCP connection to a Pulsar broker, shared by every producer and reader on it.

An `asyncio.BufferedProtocol`: the transport receives straight into the frame
decoder's buffer. The connection owns the transport and its lifecycle; the
handshake, request/response matching, keep-alive and routing of commands to
producers and consumers are its parts (`Handshake`, `PendingRequests`, `KeepAlive`,
`CommandDispatcher`). When it ends, every pending request fails and every handler
is told, once. Writes respect the transport's flow control: while the broker reads
slower than we write, `writable` is False and handlers wait for `on_writable`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
from collections.abc import Callable, Iterable

from kop.pulsar.wire.auth import Authentication, AuthUnavailable
from kop.pulsar.wire.dispatch import CommandDispatcher
from kop.pulsar.wire.errors import (
    ConnectionClosedError,
    OperationTimeoutError,
    ProtocolError,
    PulsarWireError,
    TlsError,
)
from kop.pulsar.wire.frames import CorruptFrameError, FrameDecoder, encode_command
from kop.pulsar.wire.handlers import ConsumerHandler, HandlerRegistry, ProducerHandler
from kop.pulsar.wire.handshake import CLIENT_VERSION, PROTOCOL_VERSION, Handshake
from kop.pulsar.wire.keepalive import KeepAlive
from kop.pulsar.wire.pending import PendingRequests
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

__all__ = [
    "CLIENT_VERSION",
    "PROTOCOL_VERSION",
    "Connection",
    "ConsumerHandler",
    "ProducerHandler",
]

log = logging.getLogger(__name__)

_JOIN_BELOW = 64 * 1024


class Connection(asyncio.BufferedProtocol):
    """Use `await Connection.open(...)`; then `request`, `send`, `write_frames`."""

    def __init__(
        self,
        address: str,
        *,
        proxy_to_broker_url: str | None,
        operation_timeout_s: float,
        keepalive_s: float,
        write_buffer_high: int = 4 * 1024 * 1024,
        auth: Authentication | None = None,
        auth_data: bytes = b"",
    ) -> None:
        self.address = address
        self._high = write_buffer_high
        loop = asyncio.get_running_loop()
        self._decoder = FrameDecoder()
        self._transport: asyncio.Transport | None = None
        self._paused = False
        self._closed: PulsarWireError | None = None
        self._close_callbacks: list[Callable[[Connection], None]] = []
        self._pending = PendingRequests(loop, address, operation_timeout_s)
        self._handlers = HandlerRegistry()
        self._keepalive = KeepAlive(
            loop, address, keepalive_s, operation_timeout_s, self.send, self.abort
        )
        self._handshake = Handshake(
            loop, address, proxy_to_broker_url, self._decoder, self._keepalive, auth, auth_data
        )
        self._dispatcher = CommandDispatcher(
            self._handlers, self._pending, self._handshake, address, self.send, self.abort
        )

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
        ssl_context: ssl.SSLContext | None = None,
        auth: Authentication | None = None,
    ) -> Connection:
        """Connects (over TLS with `ssl_context`), presents `auth`'s credentials and
        completes the CONNECT/CONNECTED handshake, all within the timeout."""
        auth_data = b""
        if auth is not None:
            try:
                async with asyncio.timeout(operation_timeout_s):
                    auth_data = await auth.command_data()
            except AuthUnavailable as exc:
                raise ConnectionClosedError(f"credentials for {host}:{port}: {exc}") from exc
            except TimeoutError as exc:
                raise OperationTimeoutError(f"credentials for {host}:{port}: timed out") from exc
        factory = functools.partial(
            cls,
            f"{host}:{port}",
            proxy_to_broker_url=proxy_to_broker_url,
            operation_timeout_s=operation_timeout_s,
            keepalive_s=keepalive_s,
            auth=auth,
            auth_data=auth_data,
        )
        return await _open(factory, host, port, operation_timeout_s, ssl_context)

    @property
    def is_closed(self) -> bool:
        return self._closed is not None

    @property
    def is_idle(self) -> bool:
        """No producer, consumer or request on it: the pool may close it."""
        handlers = self._handlers
        return not (handlers.producers or handlers.consumers or len(self._pending))

    @property
    def writable(self) -> bool:
        return not self._paused and self._closed is None

    @property
    def max_message_size(self) -> int:
        return self._handshake.max_message_size

    @property
    def server_version(self) -> str:
        return self._handshake.server_version

    @property
    def protocol_version(self) -> int:
        return self._handshake.protocol_version

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
        self._keepalive.stop()
        self._handshake.fail(error)
        self._pending.fail_all(error)
        for handler in self._handlers.close(error):
            handler.on_connection_closed(self)
        for callback in self._close_callbacks:
            callback(self)
        self._close_callbacks.clear()

    # -- asyncio.BufferedProtocol ----------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        transport.set_write_buffer_limits(high=self._high, low=self._high // 4)
        self._write(self._handshake.connect_frame())

    def connection_lost(self, exc: Exception | None) -> None:
        why = f": {exc}" if exc else ""
        self._shut(ConnectionClosedError(f"connection to {self.address} lost{why}"))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._decoder.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        decoder = self._decoder
        decoder.buffer_updated(nbytes)
        self._keepalive.heard = True
        dispatch = self._dispatcher.dispatch
        while self._closed is None:
            try:
                frame = decoder.next_frame()
            except CorruptFrameError as exc:
                self._dispatcher.on_corrupt(exc)
                continue
            except ProtocolError as exc:
                self.abort(exc)
                return
            if frame is None:
                return
            dispatch(frame)

    def eof_received(self) -> bool | None:
        return False  # close our side too

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        for handler in list(self._handlers.producers.values()):
            if not self._paused:
                handler.on_writable()

    # -- requests, writes, handlers ----------------------------------------------------

    def new_request_id(self) -> int:
        return self._pending.new_id()

    async def request(self, command: pb.BaseCommand, request_id: int) -> pb.BaseCommand:
        """Sends `command` (which carries `request_id`) and returns the broker's
        answer; an ERROR answer raises, as does no answer within the timeout."""
        if self._closed is not None:
            raise self._closed
        return await self._pending.call(command, request_id, self.send)

    def send(self, command: pb.BaseCommand) -> None:
        """Writes a simple command (ignoring flow control: they are small)."""
        if self._closed is None:
            self._write(encode_command(command))

    def write_frames(self, frames: Iterable[tuple[bytes, bytes | memoryview]]) -> None:
        """Writes payload frames given as (head, payload); the caller checks `writable`
        first. Small frames are joined into one write (one send call for many), a
        large payload goes as a piece of its own (no copy into a joined frame)."""
        if self._transport is not None and self._closed is None:
            _write_joined(self._transport, frames)

    def _write(self, data: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    def register_producer(self, producer_id: int, handler: ProducerHandler) -> None:
        self._handlers.register_producer(producer_id, handler)

    def unregister_producer(self, producer_id: int, handler: ProducerHandler) -> None:
        self._handlers.unregister_producer(producer_id, handler)

    def register_consumer(self, consumer_id: int, handler: ConsumerHandler) -> None:
        self._handlers.register_consumer(consumer_id, handler)

    def unregister_consumer(self, consumer_id: int, handler: ConsumerHandler) -> None:
        self._handlers.unregister_consumer(consumer_id, handler)


async def _open(
    factory: Callable[[], Connection],
    host: str,
    port: int,
    timeout_s: float,
    ssl_context: ssl.SSLContext | None,
) -> Connection:
    """A connection whose handshake is done, or an error saying why not; a half-open
    one is closed, never leaked."""
    loop = asyncio.get_running_loop()
    address = f"{host}:{port}"
    conn: Connection | None = None
    try:
        async with asyncio.timeout(timeout_s):
            _, conn = await loop.create_connection(
                factory,
                host,
                port,
                ssl=ssl_context,
                server_hostname=host if ssl_context is not None else None,
            )
            await conn._handshake.done
    except BaseException as exc:
        if conn is not None:
            conn.close("failed to open")
        if isinstance(exc, TimeoutError):
            raise OperationTimeoutError(f"connecting to {address} timed out") from exc
        if isinstance(exc, ssl.SSLCertVerificationError):
            raise TlsError(f"TLS to {address}: {exc.verify_message or exc}") from exc
        if isinstance(exc, ssl.SSLError):
            raise TlsError(f"TLS to {address}: {exc}") from exc
        if isinstance(exc, OSError):
            raise ConnectionClosedError(f"cannot connect to {address}: {exc}") from exc
        raise
    return conn


def _write_joined(
    transport: asyncio.Transport, frames: Iterable[tuple[bytes, bytes | memoryview]]
) -> None:
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
