"""One client socket as an asyncio protocol: request frames in, response bytes out.

Frames are received in place (`FrameAssembler`) and queued for the connection's
read loop. Back-pressure both ways: past `read_ahead` bytes of frames nobody has
taken yet the socket is not read, and `drain` waits while the transport's write
buffer is over its high-water mark.
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any

from kop.protocol.frames import FrameAssembler, FrameTooLarge

Frame = bytes | memoryview


class RequestStream(asyncio.BufferedProtocol):
    def __init__(self, max_frame_bytes: int, read_ahead: int) -> None:
        self._frames = FrameAssembler(max_frame_bytes)
        self._read_ahead = read_ahead
        self._queue: collections.deque[Frame] = collections.deque()
        self._queued_bytes = 0
        self._error: FrameTooLarge | None = None
        self._eof = False
        self._lost: BaseException | None = None  # set once the socket is gone
        self._paused_reading = False
        self._transport: asyncio.Transport | None = None
        self._readable = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()
        self._gone = asyncio.get_running_loop().create_future()

    # -- protocol callbacks ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._frames.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self._frames.buffer_updated(nbytes)
        try:
            while (frame := self._frames.next_frame()) is not None:
                self._queue.append(frame)
                self._queued_bytes += len(frame)
        except FrameTooLarge as exc:
            self._error = exc
            self._pause()
        if self._queued_bytes > self._read_ahead:
            self._pause()
        self._readable.set()

    def eof_received(self) -> bool:
        self._eof = True
        self._readable.set()
        return True  # half-closed: the answers to what came before are still written

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = exc if exc is not None else ConnectionResetError("connection closed")
        self._eof = True
        self._readable.set()
        self._writable.set()
        if not self._gone.done():
            self._gone.set_result(None)

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # -- reading -----------------------------------------------------------------------

    async def next_frame(self) -> Frame | None:
        """The next request frame; None at the end of the stream. Raises FrameTooLarge,
        and ConnectionResetError when the stream ends inside a frame."""
        while not self._queue:
            if self._error is not None:
                raise self._error
            if self._eof:
                if self._frames.partial == "frame":
                    raise ConnectionResetError("the stream ended inside a frame")
                return None
            self._readable.clear()
            await self._readable.wait()
        frame = self._queue.popleft()
        self._queued_bytes -= len(frame)
        if self._paused_reading and self._queued_bytes <= self._read_ahead // 2:
            self._paused_reading = False
            if self._transport is not None and self._lost is None and self._error is None:
                self._transport.resume_reading()
        return frame

    @property
    def ended_inside_prefix(self) -> bool:
        return self._eof and self._frames.partial == "prefix"

    def feed_eof(self) -> None:
        """Read nothing more (shutdown): the frames already queued are still served."""
        self._eof = True
        self._pause()
        self._readable.set()

    def _pause(self) -> None:
        if not self._paused_reading and self._transport is not None and self._lost is None:
            self._paused_reading = True
            self._transport.pause_reading()

    # -- writing (the parts of asyncio.StreamWriter a connection uses) ------------------

    def write(self, data: bytes) -> None:
        if self._transport is not None and self._lost is None:
            self._transport.write(data)

    async def drain(self) -> None:
        if self._lost is not None:
            raise ConnectionResetError("connection lost") from self._lost
        await self._writable.wait()
        if self._lost is not None:
            raise ConnectionResetError("connection lost") from self._lost

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default if self._transport is None else self._transport.get_extra_info(name, default)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    async def wait_closed(self) -> None:
        await self._gone
