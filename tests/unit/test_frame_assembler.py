"""Kafka request frames received in place: whatever way the socket splits the bytes,
the frames come out whole, in order and unchanged; sizes outside the limit are
refused from the prefix alone; an end of stream says what it cut short; and nothing
is allocated from a size read off the wire: a frame's memory follows the bytes that
arrived, each allocation asked for before it is made."""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kop.protocol.frames import FrameAssembler, FrameTooLarge

SCRATCH = 64  # small, so frames larger than the scratch buffer are common
STEP = 32


def _framed(frames: list[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(f)) + f for f in frames)


def _put(asm: FrameAssembler, data: bytes, limit: int | None = None) -> int:
    """One receive as the socket makes it: no more than the buffer offered."""
    buf = asm.get_buffer()
    assert len(buf) > 0
    n = min(len(buf), len(data), limit if limit is not None else len(buf))
    buf[:n] = data[:n]
    buf.release()  # as the event loop drops its view, so the buffer may grow
    asm.buffer_updated(n)
    return n


def _receive(asm: FrameAssembler, data: bytes, cuts: list[int]) -> list[bytes]:
    """Feeds `data` (receives sized from `cuts`), allowing memory whenever asked and
    checking after each receive that the large frame holds no more than twice what
    arrived of it (or one step); takes frames after each receive."""
    out: list[bytes] = []
    pos, i = 0, 0
    while pos < len(data):
        if asm.memory_wanted():
            asm.allow()
        pos += _put(asm, data[pos:], cuts[i % len(cuts)] if cuts else None)
        i += 1
        while (frame := asm.next_frame()) is not None:
            out.append(bytes(frame))
    return out


@given(
    frames=st.lists(st.binary(max_size=300), max_size=12),
    cuts=st.lists(st.integers(1, 400), max_size=8),
)
def test_frames_come_out_whole_however_the_bytes_are_split(
    frames: list[bytes], cuts: list[int]
) -> None:
    asm = FrameAssembler(1 << 20, scratch_bytes=SCRATCH, min_step=STEP)
    assert _receive(asm, _framed(frames), cuts) == frames
    assert asm.partial is None
    assert asm.held == 0  # every large frame's memory left with its frame


@given(frames=st.lists(st.binary(max_size=300), min_size=1, max_size=6), data=st.data())
def test_an_end_inside_a_frame_is_told_apart_from_one_inside_a_prefix(
    frames: list[bytes], data: st.DataObject
) -> None:
    stream = _framed(frames)
    cut = data.draw(st.integers(0, len(stream)))
    asm = FrameAssembler(1 << 20, scratch_bytes=SCRATCH, min_step=STEP)
    got = _receive(asm, stream[:cut], [])
    boundaries, pos = [0], 0
    for f in frames:
        pos += 4 + len(f)
        boundaries.append(pos)
    whole = max(i for i, b in enumerate(boundaries) if b <= cut)
    assert got == frames[:whole]
    left = cut - boundaries[whole]
    assert asm.partial == (None if left == 0 else "prefix" if left < 4 else "frame")


@given(size=st.integers(SCRATCH, 5000), cuts=st.lists(st.integers(1, 97), min_size=1))
def test_a_large_frame_never_holds_more_than_twice_what_arrived(size: int, cuts: list[int]) -> None:
    asm = FrameAssembler(1 << 20, scratch_bytes=SCRATCH, min_step=STEP)
    body = bytes(i % 251 for i in range(size))
    data = struct.pack(">i", size) + body
    pos, i = 0, 0
    while pos < len(data):
        if asm.memory_wanted():
            asm.allow()
        pos += _put(asm, data[pos:], cuts[i % len(cuts)])
        i += 1
        frame = asm.next_frame()
        arrived = pos - 4
        assert asm.held <= max(STEP, 2 * arrived)
        assert asm.held + asm.memory_wanted() <= max(STEP, 2 * arrived)
        if frame is not None:
            assert bytes(frame) == body and pos == len(data)


def test_a_huge_announced_size_followed_by_a_trickle_costs_one_step() -> None:
    asm = FrameAssembler(100 << 20, scratch_bytes=SCRATCH, min_step=STEP)
    data = struct.pack(">i", 100 << 20) + b"x" * 10
    _put(asm, data)
    assert asm.next_frame() is None
    assert asm.memory_wanted() == STEP  # not 100 MiB
    assert asm.allow() == STEP
    for _ in range(STEP - 10):  # one byte at a time
        _put(asm, b"y")
        assert asm.next_frame() is None
    assert asm.held == STEP
    assert asm.memory_wanted() == STEP  # full: it doubles, once allowed
    assert asm.partial == "frame"


def test_nothing_is_received_into_memory_not_yet_allowed() -> None:
    asm = FrameAssembler(1 << 20, scratch_bytes=SCRATCH, min_step=STEP)
    body = bytes(range(200))
    data = struct.pack(">i", len(body)) + body
    _put(asm, data[:20])
    assert asm.next_frame() is None
    assert asm.memory_wanted() == STEP and asm.held == 0
    asm.allow()
    received = 20
    while received < len(data):
        received += _put(asm, data[received:])
        frame = asm.next_frame()
        if asm.memory_wanted():
            assert frame is None and asm.held == received - 4  # waits, full, for memory
            asm.allow()
    assert frame is not None and bytes(frame) == body and asm.held == 0


def test_an_oversized_frame_is_refused_from_its_prefix() -> None:
    asm = FrameAssembler(1000, scratch_bytes=SCRATCH)
    _put(asm, struct.pack(">i", 1001))
    with pytest.raises(FrameTooLarge):
        asm.next_frame()


def test_a_negative_size_is_refused() -> None:
    asm = FrameAssembler(1000, scratch_bytes=SCRATCH)
    _put(asm, struct.pack(">i", -1))
    with pytest.raises(FrameTooLarge):
        asm.next_frame()


def test_a_large_frame_is_received_into_a_buffer_of_its_own() -> None:
    """With a step as large as the frame, the socket is offered exactly its rest."""
    asm = FrameAssembler(1 << 20, scratch_bytes=SCRATCH, min_step=4096)
    body = bytes(range(256)) * 4
    data = struct.pack(">i", len(body)) + body
    _put(asm, data[:10])
    assert asm.next_frame() is None
    assert asm.allow() == len(body)
    rest = asm.get_buffer()
    assert len(rest) == len(body) - 6
    rest[:] = data[10:]
    rest.release()
    asm.buffer_updated(len(body) - 6)
    frame = asm.next_frame()
    assert frame is not None and bytes(frame) == body


def test_a_connection_that_never_sends_holds_no_buffer() -> None:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        silent = [FrameAssembler(100 << 20) for _ in range(1000)]
        per_connection = (tracemalloc.get_traced_memory()[0] - before) / len(silent)
    finally:
        tracemalloc.stop()
    assert per_connection < 1024  # the scratch buffer (16 KiB) comes with the first byte


def test_a_frame_that_arrived_fast_gets_one_buffer_for_what_is_ready() -> None:
    """Bytes the kernel already holds may be allocated for at once; never more than
    the frame, and never more than what has arrived."""
    asm = FrameAssembler(1 << 20, scratch_bytes=SCRATCH, min_step=STEP)
    body = bytes(range(250)) * 4
    data = struct.pack(">i", len(body)) + body
    _put(asm, data[:40])  # 36 bytes of the body in the scratch buffer
    assert asm.next_frame() is None
    assert asm.memory_wanted(ready=500) == 536  # what arrived: 36 + 500 waiting
    asm.allow()
    _put(asm, data[40:540])
    assert asm.next_frame() is None
    assert asm.memory_wanted(ready=10_000) == len(body) - 536  # the rest, not 10,000
    asm.allow()
    _put(asm, data[540:])
    frame = asm.next_frame()
    assert frame is not None and bytes(frame) == body


@given(frames=st.lists(st.binary(max_size=300), min_size=1, max_size=6), data=st.data())
def test_a_discarded_stream_holds_nothing_and_still_says_what_was_cut_short(
    frames: list[bytes], data: st.DataObject
) -> None:
    stream = _framed(frames)
    cut = data.draw(st.integers(0, len(stream)))
    asm = FrameAssembler(1 << 20, scratch_bytes=SCRATCH, min_step=STEP)
    _receive(asm, stream[:cut], [])
    partial = asm.partial
    asm.discard()
    assert asm.partial == partial and asm.held == 0 and asm.memory_wanted() == 0
