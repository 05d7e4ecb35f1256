"""Kafka's framing, sans-IO: a 4-byte big-endian size, then the request or response."""

from __future__ import annotations

import struct

_LEN = struct.Struct(">i")
PREFIX_BYTES = _LEN.size


class FrameTooLarge(Exception):
    """The peer announced a frame outside the configured limit; close the connection."""


def frame_size(prefix: bytes | bytearray, max_frame_bytes: int) -> int:
    """The size a frame's prefix announces, checked before any of it is buffered."""
    (size,) = _LEN.unpack(prefix)
    if size < 0 or size > max_frame_bytes:
        raise FrameTooLarge(f"frame of {size} bytes exceeds limit {max_frame_bytes}")
    return int(size)


def encode_frame(payload: bytes) -> bytes:
    return _LEN.pack(len(payload)) + payload


_SCRATCH_BYTES = 64 * 1024


class FrameAssembler:
    """Request frames out of a byte stream received in place (`get_buffer` and
    `buffer_updated`, the shape of `asyncio.BufferedProtocol`).

    Frames that fit the scratch buffer arrive there and are copied out once. A larger
    frame gets a buffer of its own as soon as its prefix is read, and the socket writes
    the rest of it there: a 256 KiB produce request is copied by the kernel and by
    nobody else (a stream reader copies it into its buffer, out again, and moves
    what follows). The announced size is checked before any of the frame is kept.
    """

    def __init__(self, max_frame_bytes: int, scratch_bytes: int = _SCRATCH_BYTES) -> None:
        self._max = max_frame_bytes
        self._scratch = bytearray(scratch_bytes)
        self._start = 0  # first byte not yet framed
        self._end = 0  # end of what was received into the scratch buffer
        self._own: bytearray | None = None  # the large frame being received
        self._filled = 0

    def get_buffer(self) -> memoryview:
        if self._own is not None:
            return memoryview(self._own)[self._filled :]
        if self._start == self._end:
            self._start = self._end = 0
        elif len(self._scratch) - self._end < len(self._scratch) // 4:
            kept = self._end - self._start  # a frame start: move it to the front
            self._scratch[0:kept] = self._scratch[self._start : self._end]
            self._start, self._end = 0, kept
        return memoryview(self._scratch)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._own is not None:
            self._filled += nbytes
        else:
            self._end += nbytes

    def next_frame(self) -> bytes | memoryview | None:
        """The next whole frame (without its prefix), or None until more arrives.
        Raises FrameTooLarge for a size outside the limit; the stream is then lost."""
        if self._own is not None:
            if self._filled < len(self._own):
                return None
            frame = memoryview(self._own).toreadonly()
            self._own = None
            return frame
        available = self._end - self._start
        if available < PREFIX_BYTES:
            return None
        size = frame_size(self._scratch[self._start : self._start + PREFIX_BYTES], self._max)
        body = self._start + PREFIX_BYTES
        if available - PREFIX_BYTES >= size:
            self._start = body + size
            with memoryview(self._scratch) as view:
                return bytes(view[body : body + size])
        if PREFIX_BYTES + size > len(self._scratch):
            have = self._end - body
            self._own = bytearray(size)
            self._own[:have] = self._scratch[body : self._end]
            self._filled = have
            self._start = self._end = 0
        return None

    @property
    def partial(self) -> str | None:
        """What an end of stream now would cut short: "prefix", "frame" or nothing."""
        if self._own is not None:
            return "frame"
        available = self._end - self._start
        if available == 0:
            return None
        return "prefix" if available < PREFIX_BYTES else "frame"
