"""One TCP connection to a Pulsar broker, shared by every producer and reader on it.

What the connection owes those who use it, as the Java client's `ClientCnx`: the
handshake, request/response matching, keep-alive and routing of commands to
producers and consumers are its parts (`Handshake`, `PendingRequests`, `KeepAlive`,
`CommandDispatcher`, `HandlerRegistry`). When it ends, every pending request fails
and every handler is told, once. The socket, framing and the transport's flow
control are `FrameStream`'s (`frame_stream.py`); while the broker reads slower than
we write, `writable` is False and producers wait for `on_writable`.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Callable

from kop.pulsar.wire.auth import Authentication, AuthUnavailable
from kop.pulsar.wire.dispatch import CommandDispatcher
from kop.pulsar.wire.errors import (
    ConnectionClosedError,
    OperationTimeoutError,
    PulsarWireError,
    TlsError,
)
from kop.pulsar.wire.frame_stream import FrameStream
from kop.pulsar.wire.frames import FrameDecoder
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


class Connection(FrameStream):
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
        loop = asyncio.get_running_loop()
        decoder = FrameDecoder()
        self._close_callbacks: list[Callable[[Connection], None]] = []
        self._pending = PendingRequests(loop, address, operation_timeout_s)
        self._handlers = HandlerRegistry()
        keepalive = KeepAlive(
            loop, address, keepalive_s, operation_timeout_s, self.send, self.abort
        )
        self._handshake = Handshake(
            loop, address, proxy_to_broker_url, decoder, keepalive, auth, auth_data
        )
        dispatcher = CommandDispatcher(
            self._handlers, self._pending, self._handshake, address, self.send, self.abort
        )
        super().__init__(address, decoder, dispatcher, keepalive, write_buffer_high)

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
    def is_idle(self) -> bool:
        """No producer, consumer or request on it: the pool may close it."""
        handlers = self._handlers
        return not (handlers.producers or handlers.consumers or len(self._pending))

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

    def _ended(self, error: PulsarWireError) -> None:
        self._keepalive.stop()
        self._handshake.fail(error)
        self._pending.fail_all(error)
        for handler in self._handlers.close(error):
            handler.on_connection_closed(self)
        for callback in self._close_callbacks:
            callback(self)
        self._close_callbacks.clear()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._write(self._handshake.connect_frame())

    def resume_writing(self) -> None:
        super().resume_writing()
        for handler in list(self._handlers.producers.values()):
            if not self._paused:
                handler.on_writable()

    # -- requests and handlers ---------------------------------------------------------

    def new_request_id(self) -> int:
        return self._pending.new_id()

    async def request(self, command: pb.BaseCommand, request_id: int) -> pb.BaseCommand:
        """Sends `command` (which carries `request_id`) and returns the broker's
        answer; an ERROR answer raises, as does no answer within the timeout."""
        if self._closed is not None:
            raise self._closed
        return await self._pending.call(command, request_id, self.send)

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
