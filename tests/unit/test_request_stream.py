"""A client socket's request stream: reading stops past the read-ahead bound and
resumes once the connection has taken frames; a half-closed stream still serves
what came before its end; an end inside a frame is a lost connection."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from kop.server.stream import RequestStream


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.reading = True
        self.written: list[bytes] = []

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def write(self, data: Any) -> None:
        self.written.append(bytes(data))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 9) if name == "peername" else default


def _feed(stream: RequestStream, data: bytes) -> None:
    while data:
        buf = stream.get_buffer(-1)
        n = min(len(buf), len(data))
        buf[:n] = data[:n]
        stream.buffer_updated(n)
        data = data[n:]


def _frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


async def test_reading_pauses_past_the_read_ahead_and_resumes_when_taken() -> None:
    stream = RequestStream(1 << 20, read_ahead=10_000)
    transport = _Transport()
    stream.connection_made(transport)
    frames = [bytes([i]) * 3000 for i in range(5)]
    _feed(stream, b"".join(_frame(f) for f in frames))
    assert not transport.reading  # 15,000 bytes waiting > 10,000
    got = [bytes(await stream.next_frame() or b"") for _ in range(3)]
    assert transport.reading is False  # 6,000 left: over half the bound still
    got.append(bytes(await stream.next_frame() or b""))
    assert transport.reading  # 3,000 left, under half the bound: read again
    got.append(bytes(await stream.next_frame() or b""))
    assert got == frames


async def test_a_half_closed_stream_serves_what_came_before_its_end() -> None:
    stream = RequestStream(1 << 20, read_ahead=1 << 20)
    stream.connection_made(_Transport())
    _feed(stream, _frame(b"one") + _frame(b"two"))
    assert stream.eof_received() is True  # keep the socket open for the answers
    assert await stream.next_frame() == b"one"
    assert await stream.next_frame() == b"two"
    assert await stream.next_frame() is None


async def test_an_end_inside_a_frame_is_a_lost_connection() -> None:
    stream = RequestStream(1 << 20, read_ahead=1 << 20)
    stream.connection_made(_Transport())
    _feed(stream, _frame(b"whole") + _frame(b"cut short")[:7])
    stream.eof_received()
    assert await stream.next_frame() == b"whole"
    with pytest.raises(ConnectionResetError):
        await stream.next_frame()


async def test_a_frame_arriving_wakes_a_waiting_reader() -> None:
    stream = RequestStream(1 << 20, read_ahead=1 << 20)
    stream.connection_made(_Transport())
    waiting = asyncio.create_task(stream.next_frame())
    await asyncio.sleep(0)
    assert not waiting.done()
    _feed(stream, _frame(b"late"))
    assert await asyncio.wait_for(waiting, 1) == b"late"


async def test_drain_fails_once_the_connection_is_lost() -> None:
    stream = RequestStream(1 << 20, read_ahead=1 << 20)
    stream.connection_made(_Transport())
    stream.pause_writing()
    draining = asyncio.create_task(stream.drain())
    await asyncio.sleep(0)
    assert not draining.done()  # waits while the write buffer is over its mark
    stream.connection_lost(None)
    with pytest.raises(ConnectionResetError):
        await asyncio.wait_for(draining, 1)
    assert await stream.next_frame() is None
