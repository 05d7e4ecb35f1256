"""A client socket's request stream: reading stops past the read-ahead bound, while
a large frame waits for the memory all connections share, and while answers back
up, and resumes once that is over; a frame that does not arrive whole in time, or
answers nobody takes, end the stream; a half-closed stream still serves what came
before its end; an end inside a frame is a lost connection; what a stream held of
the shared memory goes back when its socket goes."""

from __future__ import annotations

import asyncio
import struct
import tracemalloc
from typing import Any

import pytest

from kop.server.memory import RequestMemory
from kop.server.stream import ReceiveTimeout, RequestStream, SendStalled


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.reading = True
        self.written: list[bytes] = []
        self.unsent = 0
        self.aborted = False

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def write(self, data: Any) -> None:
        self.written.append(bytes(data))

    def get_write_buffer_size(self) -> int:
        return self.unsent

    def abort(self) -> None:
        self.aborted = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 9) if name == "peername" else default


def _feed(stream: RequestStream, data: bytes) -> int:
    """Receives `data` as the event loop would, while the stream reads; returns how
    much it took before it stopped reading."""
    transport = stream._transport
    assert isinstance(transport, _Transport)
    taken = 0
    while taken < len(data) and transport.reading:
        buf = stream.get_buffer(-1)
        n = min(len(buf), len(data) - taken)
        buf[:n] = data[taken : taken + n]
        buf.release()
        stream.buffer_updated(n)
        taken += n
    return taken


def _frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def _stream(
    memory: RequestMemory | None = None, read_ahead: int = 1 << 20, **timeouts: float
) -> tuple[RequestStream, _Transport]:
    stream = RequestStream(1 << 24, read_ahead, memory, **timeouts)
    transport = _Transport()
    stream.connection_made(transport)
    return stream, transport


async def test_reading_pauses_past_the_read_ahead_and_resumes_when_taken() -> None:
    stream, transport = _stream(read_ahead=10_000)
    frames = [bytes([i]) * 3000 for i in range(5)]
    assert _feed(stream, b"".join(_frame(f) for f in frames)) == 5 * 3004
    assert not transport.reading  # 15,000 bytes waiting > 10,000
    got = [bytes(await stream.next_frame() or b"") for _ in range(3)]
    assert transport.reading is False  # 6,000 left: over half the bound still
    got.append(bytes(await stream.next_frame() or b""))
    assert transport.reading  # 3,000 left, under half the bound: read again
    got.append(bytes(await stream.next_frame() or b""))
    assert got == frames


async def test_a_large_frame_waits_for_shared_memory_and_resumes_when_it_is_back() -> None:
    memory = RequestMemory(limit=100_000)
    (first, first_t), (second, _), (third, third_t) = (_stream(memory) for _ in range(3))
    big = bytes(range(256)) * 300  # 76,800 bytes: larger than the scratch buffer
    assert _feed(first, _frame(big)) == len(big) + 4
    assert memory.used == len(big)  # whole, not yet taken
    # The budget is not spent yet: the second frame may go past it (the overdraft
    # that keeps frames waiting on each other from deadlocking), the third waits.
    assert _feed(second, _frame(big)) == len(big) + 4
    assert _feed(third, _frame(big)) < len(big)
    assert not third_t.reading and memory.waiting == 1
    assert bytes(await first.next_frame() or b"") == big
    assert memory.used == 2 * len(big)  # taken, not yet dispatched: still held
    first.frame_done()
    assert third_t.reading and memory.waiting == 0
    assert first_t.reading


async def test_a_waiting_frame_completes_once_memory_is_back() -> None:
    memory = RequestMemory(limit=50_000)  # the holder's frame is the overdraft
    holder, _ = _stream(memory)
    waiter, waiter_t = _stream(memory)
    big = bytes(range(256)) * 300
    _feed(holder, _frame(big))
    data = _frame(big[::-1])
    fed = _feed(waiter, data)
    assert fed < len(data) and not waiter_t.reading
    await holder.next_frame()
    holder.frame_done()
    assert _feed(waiter, data[fed:]) == len(data) - fed
    assert bytes(await waiter.next_frame() or b"") == big[::-1]
    waiter.frame_done()
    assert memory.used == 0


async def test_a_frame_not_whole_in_time_ends_the_stream_and_its_memory_goes_back() -> None:
    memory = RequestMemory(limit=1 << 20)
    stream, transport = _stream(memory, receive_timeout_s=0.05)
    announced = struct.pack(">i", 10 << 20)
    _feed(stream, announced + b"x" * 20_000)  # 10 MiB announced, 20 kB sent
    assert 0 < memory.used < 100_000  # what arrived, not what was announced
    with pytest.raises(ReceiveTimeout):
        await asyncio.wait_for(stream.next_frame(), 5)
    assert not transport.reading
    stream.connection_lost(None)
    assert memory.used == 0


async def test_a_frame_waiting_for_memory_is_not_late_for_the_wait() -> None:
    """kop does not read it while it waits: its deadline runs from the grant (CI
    closed a producer queued behind three stalled holders at their common deadline)."""
    memory = RequestMemory(limit=50_000)
    holder, _ = _stream(memory)
    waiter, waiter_t = _stream(memory, receive_timeout_s=0.05)
    big = bytes(range(256)) * 300
    _feed(holder, _frame(big))
    data = _frame(big[::-1])
    fed = _feed(waiter, data)
    assert not waiter_t.reading
    await asyncio.sleep(0.15)  # three of its deadlines spent waiting
    assert await holder.next_frame() is not None
    holder.frame_done()
    assert waiter_t.reading
    assert _feed(waiter, data[fed:]) == len(data) - fed
    assert bytes(await waiter.next_frame() or b"") == big[::-1]


async def test_a_frame_given_memory_is_late_from_the_grant_on() -> None:
    memory = RequestMemory(limit=50_000)
    holder, _ = _stream(memory)
    waiter, _ = _stream(memory, receive_timeout_s=0.05)
    big = bytes(range(256)) * 300
    _feed(holder, _frame(big))
    _feed(waiter, _frame(big))
    assert await holder.next_frame() is not None
    holder.frame_done()  # memory given; the rest of the frame never comes
    with pytest.raises(ReceiveTimeout):
        await asyncio.wait_for(waiter.next_frame(), 5)


async def test_whole_frames_however_far_apart_are_not_timed_out() -> None:
    stream, _ = _stream(receive_timeout_s=0.05)
    _feed(stream, _frame(b"one"))
    await asyncio.sleep(0.15)  # three deadlines' worth of quiet between whole frames
    _feed(stream, _frame(b"two"))
    assert await stream.next_frame() == b"one"
    assert await stream.next_frame() == b"two"


async def test_answers_backing_up_stop_reading_until_they_leave() -> None:
    stream, transport = _stream()
    stream.pause_writing()
    assert not transport.reading
    assert _feed(stream, _frame(b"pipelined")) == 0
    stream.resume_writing()
    assert transport.reading


async def test_answers_nobody_takes_end_the_stream() -> None:
    stream, transport = _stream(send_timeout_s=0.05)
    transport.unsent = 1 << 20
    stream.pause_writing()
    with pytest.raises(SendStalled):
        await asyncio.wait_for(stream.drain(), 5)
    assert transport.aborted  # a close would wait for the buffer nobody reads


async def test_answers_leaving_slowly_keep_the_stream() -> None:
    stream, transport = _stream(send_timeout_s=0.05)
    transport.unsent = 1 << 20
    stream.pause_writing()
    draining = asyncio.create_task(stream.drain())
    for _ in range(6):  # a byte leaves in every send timeout: slow, not stalled
        await asyncio.sleep(0.04)
        transport.unsent -= 1
    assert not draining.done()
    stream.resume_writing()
    await asyncio.wait_for(draining, 5)


async def test_a_half_closed_stream_serves_what_came_before_its_end() -> None:
    stream, _ = _stream()
    _feed(stream, _frame(b"one") + _frame(b"two"))
    assert stream.eof_received() is True  # keep the socket open for the answers
    assert await stream.next_frame() == b"one"
    assert await stream.next_frame() == b"two"
    assert await stream.next_frame() is None


async def test_an_end_inside_a_frame_is_a_lost_connection() -> None:
    stream, _ = _stream()
    _feed(stream, _frame(b"whole") + _frame(b"cut short")[:7])
    stream.eof_received()
    assert await stream.next_frame() == b"whole"
    with pytest.raises(ConnectionResetError):
        await stream.next_frame()


async def test_a_frame_arriving_wakes_a_waiting_reader() -> None:
    stream, _ = _stream()
    waiting = asyncio.create_task(stream.next_frame())
    await asyncio.sleep(0)
    assert not waiting.done()
    _feed(stream, _frame(b"late"))
    assert await asyncio.wait_for(waiting, 1) == b"late"


async def test_drain_fails_once_the_connection_is_lost() -> None:
    stream, _ = _stream()
    stream.pause_writing()
    draining = asyncio.create_task(stream.drain())
    await asyncio.sleep(0)
    assert not draining.done()  # waits while the write buffer is over its mark
    stream.connection_lost(None)
    with pytest.raises(ConnectionResetError):
        await asyncio.wait_for(draining, 1)
    assert await stream.next_frame() is None


async def test_a_lost_socket_gives_back_everything_its_stream_held() -> None:
    memory = RequestMemory(limit=100_000)
    holder, _ = _stream(memory)
    waiter, _ = _stream(memory)
    big = bytes(200) * 400  # 80,000 bytes
    _feed(holder, _frame(big) + _frame(big)[:30_000])  # one queued, one under way
    _feed(waiter, _frame(big))
    assert memory.waiting == 1
    waiter.connection_lost(None)  # gone while waiting
    assert memory.waiting == 0
    holder.connection_lost(None)
    taken = await holder.next_frame()  # queued before the loss: still served
    holder.frame_done()  # nothing is given back twice
    assert taken is not None and memory.used == 0


async def test_read_while_waiting_for_memory_takes_it_rather_than_fail() -> None:
    """The event loop should not read a stream whose frame waits for memory; if it
    does, the stream takes the memory past the budget instead of failing the read."""
    memory = RequestMemory(limit=50_000)
    holder, _ = _stream(memory)
    waiter, _ = _stream(memory)
    big = bytes(range(256)) * 300
    _feed(holder, _frame(big))
    data = _frame(big)
    fed = _feed(waiter, data)  # stops: waiting for memory
    assert memory.waiting == 1
    buf = waiter.get_buffer(-1)  # read anyway
    n = min(len(buf), len(data) - fed)
    buf[:n] = data[fed : fed + n]
    buf.release()
    waiter.buffer_updated(n)
    assert memory.waiting == 0
    waiter.connection_lost(None)
    holder.connection_lost(None)
    assert memory.used == 0


async def test_a_lost_socket_lets_go_of_its_buffers_at_once() -> None:
    """Memory given back to the budget is gone, not kept until the connection's
    tasks let go of the stream (1,000 connections closing at once once held 130 MiB
    of frames already given back)."""
    memory = RequestMemory(limit=10 << 20)
    stream, _ = _stream(memory)
    tracemalloc.start()
    try:
        _feed(stream, struct.pack(">i", 1 << 20) + bytes(900_000))
        before = tracemalloc.get_traced_memory()[0]
        stream.connection_lost(None)
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert before - after > 800_000  # the frame's buffer, while `stream` still lives
    assert memory.used == 0
