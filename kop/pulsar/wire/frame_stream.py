"""A broker connection's socket as frames: bytes in are cut into frames and handed
on, frames out are written under the transport's flow control.

An `asyncio.BufferedProtocol`: the transport receives straight into the frame
decoder's buffer. While the broker reads slower than we write, `writable` is False.
This is the job Netty's frame decoder and `PulsarDecoder` do under the Java
client's `ClientCnx`; what the connection owes its requests, producers and
consumers is `Connection`'s (`connection.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Protocol, cast

from kop.pulsar.wire.errors import ConnectionClosedError, ProtocolError, PulsarWireError
from kop.pulsar.wire.frames import CorruptFrameError, Frame, FrameDecoder, encode_command
from kop.pulsar.wire.keepalive import KeepAlive
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

log = logging.getLogger("kop.pulsar.wire.connection")  # where these records always went

_JOIN_BELOW = 64 * 1024


class FrameSink(Protocol):
    """Who gets the frames (`CommandDispatcher`)."""

    def dispatch(self, frame: Frame) -> None: ...
    def on_corrupt(self, error: CorruptFrameError) -> None: ...


class FrameStream(asyncio.BufferedProtocol):
    """Frames in and out of one transport, and its end: `close`, `abort` and a lost
    transport all come to `_ended`, once, with why."""

    def __init__(
        self,
        address: str,
        decoder: FrameDecoder,
        sink: FrameSink,
        keepalive: KeepAlive,
        write_buffer_high: int,
    ) -> None:
        self.address = address
        self._decoder = decoder
        self._sink = sink
        self._keepalive = keepalive  # told of every read: any frame proves the broker alive
        self._high = write_buffer_high
        self._transport: asyncio.Transport | None = None
        self._paused = False
        self._closed: PulsarWireError | None = None  # why it ended; None while open
        self._queued: list[bytes] = []  # commands not yet written (`send`)

    @property
    def is_closed(self) -> bool:
        return self._closed is not None

    @property
    def writable(self) -> bool:
        return not self._paused and self._closed is None

    def close(self, reason: str = "closed by the client") -> None:
        if self._transport is not None:
            self._transport.close()  # connection_lost does the rest
        self._end(ConnectionClosedError(f"connection to {self.address} {reason}"))

    def abort(self, error: PulsarWireError) -> None:
        """Ends the connection at once because of `error` (a protocol violation, a
        missed PONG): every request fails with it and every handler reconnects."""
        log.warning("closing connection to %s: %s", self.address, error)
        if self._transport is not None:
            self._transport.abort()
        self._end(error)

    def _end(self, error: PulsarWireError) -> None:
        if self._closed is not None:
            return
        self._closed = error
        self._ended(error)

    def _ended(self, error: PulsarWireError) -> None:
        """What ending means beyond the socket: the connection's to say."""

    # -- asyncio.BufferedProtocol ----------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is one without subclassing asyncio.Transport).
        self._transport = cast(asyncio.Transport, transport)
        self._transport.set_write_buffer_limits(high=self._high, low=self._high // 4)

    def connection_lost(self, exc: Exception | None) -> None:
        why = f": {exc}" if exc else ""
        self._end(ConnectionClosedError(f"connection to {self.address} lost{why}"))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._decoder.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        decoder = self._decoder
        decoder.buffer_updated(nbytes)
        self._keepalive.heard = True
        sink = self._sink
        dispatch = sink.dispatch
        while self._closed is None:
            try:
                frame = decoder.next_frame()
            except CorruptFrameError as exc:
                sink.on_corrupt(exc)
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

    # -- writes ------------------------------------------------------------------------

    def send(self, command: pb.BaseCommand) -> None:
        """Writes a simple command (ignoring flow control: they are small) once this
        turn of the event loop is done, with every other command sent meanwhile: one
        send call for many. With a thousand partitions, a call per FLOW and
        GetLastMessageId was 29% of a new owner's time while it took partitions over."""
        if self._closed is None:
            if not self._queued:
                asyncio.get_running_loop().call_soon(self._write_queued)
            self._queued.append(encode_command(command))

    def write_frames(self, frames: Iterable[tuple[bytes, bytes | memoryview]]) -> None:
        """Writes payload frames given as (head, payload), after the commands sent
        before them; the caller checks `writable` first. Small frames are joined into
        one write (one send call for many), a large payload goes as a piece of its own
        (no copy into a joined frame)."""
        if self._transport is not None and self._closed is None:
            self._write_queued()
            _write_joined(self._transport, frames)

    def _write_queued(self) -> None:
        if self._queued:
            data = b"".join(self._queued)
            self._queued.clear()
            self._write(data)

    def _write(self, data: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)


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
