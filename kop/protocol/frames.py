"""Length-prefixed Kafka framing, sans-IO: feed bytes, take whole frames."""

from __future__ import annotations

import struct

_LEN = struct.Struct(">i")


class FrameTooLarge(Exception):
    """The peer announced a frame larger than the configured limit; close the connection."""


class FrameDecoder:
    """Accumulates bytes and yields complete frames (without their size prefix)."""

    def __init__(self, max_frame_bytes: int) -> None:
        self._max = max_frame_bytes
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        frames: list[bytes] = []
        while len(self._buf) >= 4:
            (size,) = _LEN.unpack_from(self._buf, 0)
            if size < 0 or size > self._max:
                raise FrameTooLarge(f"frame of {size} bytes exceeds limit {self._max}")
            if len(self._buf) < 4 + size:
                break
            frames.append(bytes(self._buf[4 : 4 + size]))
            del self._buf[: 4 + size]
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buf)


def encode_frame(payload: bytes) -> bytes:
    return _LEN.pack(len(payload)) + payload
