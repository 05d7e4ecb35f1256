"""Kafka request frames received in place: whatever way the socket splits the bytes,
the frames come out whole, in order and unchanged; sizes outside the limit are
refused from the prefix alone; an end of stream says what it cut short."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kop.protocol.frames import FrameAssembler, FrameTooLarge

SCRATCH = 64  # small, so frames larger than the scratch buffer are common


def _framed(frames: list[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(f)) + f for f in frames)


def _receive(asm: FrameAssembler, data: bytes, cuts: list[int]) -> list[bytes]:
    """Feeds `data` as a socket would (receives no larger than the buffer offered,
    sizes from `cuts`), taking frames after each receive."""
    out: list[bytes] = []
    pos, i = 0, 0
    while pos < len(data):
        buf = asm.get_buffer()
        assert len(buf) > 0
        n = min(len(buf), len(data) - pos, cuts[i % len(cuts)] if cuts else len(buf))
        buf[:n] = data[pos : pos + n]
        asm.buffer_updated(n)
        pos += n
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
    asm = FrameAssembler(1 << 20, scratch_bytes=SCRATCH)
    assert _receive(asm, _framed(frames), cuts) == frames
    assert asm.partial is None


@given(frames=st.lists(st.binary(max_size=300), min_size=1, max_size=6), data=st.data())
def test_an_end_inside_a_frame_is_told_apart_from_one_inside_a_prefix(
    frames: list[bytes], data: st.DataObject
) -> None:
    stream = _framed(frames)
    cut = data.draw(st.integers(0, len(stream)))
    asm = FrameAssembler(1 << 20, scratch_bytes=SCRATCH)
    got = _receive(asm, stream[:cut], [])
    boundaries, pos = [0], 0
    for f in frames:
        pos += 4 + len(f)
        boundaries.append(pos)
    whole = max(i for i, b in enumerate(boundaries) if b <= cut)
    assert got == frames[:whole]
    left = cut - boundaries[whole]
    assert asm.partial == (None if left == 0 else "prefix" if left < 4 else "frame")


def test_an_oversized_frame_is_refused_from_its_prefix() -> None:
    asm = FrameAssembler(1000, scratch_bytes=SCRATCH)
    buf = asm.get_buffer()
    buf[:4] = struct.pack(">i", 1001)
    asm.buffer_updated(4)
    with pytest.raises(FrameTooLarge):
        asm.next_frame()


def test_a_negative_size_is_refused() -> None:
    asm = FrameAssembler(1000, scratch_bytes=SCRATCH)
    asm.get_buffer()[:4] = struct.pack(">i", -1)
    asm.buffer_updated(4)
    with pytest.raises(FrameTooLarge):
        asm.next_frame()


def test_a_large_frame_is_received_into_a_buffer_of_its_own() -> None:
    """After its prefix, the socket is offered exactly the rest of the large frame."""
    asm = FrameAssembler(1 << 20, scratch_bytes=SCRATCH)
    body = bytes(range(256)) * 4
    data = struct.pack(">i", len(body)) + body
    asm.get_buffer()[:10] = data[:10]
    asm.buffer_updated(10)
    assert asm.next_frame() is None
    rest = asm.get_buffer()
    assert len(rest) == len(body) - 6
    rest[:] = data[10:]
    asm.buffer_updated(len(rest))
    frame = asm.next_frame()
    assert frame is not None and bytes(frame) == body
