"""The answer side of a client socket: the parts of `asyncio.StreamWriter` a
connection uses, with a send timeout. `RequestStream` adds the request side."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from kop.protocol.frame_pieces import Frame


class SendStalled(Exception):
    """The client took none of its answers' bytes for the send timeout."""


class SocketSink(asyncio.BaseProtocol):
    """Writes answers; `drain` waits while the transport's write buffer is over its
    high-water mark and gives up (aborting the socket) when no byte of it left for
    `send_timeout_s`: slow readers are served, clients that stopped reading are not
    kept with their answers in memory."""

    def __init__(self, send_timeout_s: float) -> None:
        self._send_timeout_s = send_timeout_s
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._lost: BaseException | None = None  # set once the socket is gone
        self._writable = asyncio.Event()
        self._writable.set()
        self._gone = self._loop.create_future()
        self._closing: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is one without subclassing asyncio.Transport).
        self._transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = exc if exc is not None else ConnectionResetError("connection closed")
        if self._closing is not None:  # it would keep this protocol for the send timeout
            self._closing.cancel()
            self._closing = None
        self._writable.set()
        if not self._gone.done():
            self._gone.set_result(None)

    def pause_writing(self) -> None:
        self._writable.clear()
        self._answers_backed_up(True)

    def resume_writing(self) -> None:
        self._writable.set()
        self._answers_backed_up(False)

    def _answers_backed_up(self, backed_up: bool) -> None:
        """The client is not reading its answers (or is again)."""

    def write(self, frame: Frame) -> None:
        """A frame whole, or in pieces: sent by one gathering write, not joined."""
        if self._transport is not None and self._lost is None:
            if isinstance(frame, bytes):
                self._transport.write(frame)
            else:
                self._transport.writelines(frame)

    async def drain(self) -> None:
        while not self._writable.is_set() and self._lost is None:
            assert self._transport is not None
            unsent = self._transport.get_write_buffer_size()
            try:
                async with asyncio.timeout(self._send_timeout_s):
                    await self._writable.wait()
            except TimeoutError:
                if self._lost is None and self._transport.get_write_buffer_size() >= unsent:
                    self._transport.abort()  # a close would wait for the buffer to drain
                    raise SendStalled(
                        f"no answer byte taken in {self._send_timeout_s}s ({unsent} unsent)"
                    ) from None
        if self._lost is not None:
            raise ConnectionResetError("connection lost") from self._lost

    async def writable(self) -> None:
        """Waits while answers back up (no timeout: `drain` has it)."""
        await self._writable.wait()

    def unsent(self) -> int:
        return 0 if self._transport is None else self._transport.get_write_buffer_size()

    def abort(self) -> None:
        if self._transport is not None and self._lost is None:
            self._transport.abort()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default if self._transport is None else self._transport.get_extra_info(name, default)

    def close(self) -> None:
        """Closes once what was written is sent, or after the send timeout regardless
        (a client that stopped reading would keep the socket and its buffer)."""
        if self._transport is not None and self._lost is None and self._closing is None:
            self._transport.close()
            self._closing = self._loop.call_later(self._send_timeout_s, self._abort_if_open)

    def _abort_if_open(self) -> None:
        if self._lost is None and self._transport is not None:
            self._transport.abort()

    async def wait_closed(self) -> None:
        await self._gone
