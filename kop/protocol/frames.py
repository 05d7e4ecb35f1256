"""Kafka's framing, sans-IO: a 4-byte big-endian size, then the request or response."""

from __future__ import annotations

import struct

_LEN = struct.Struct(">i")
PREFIX_BYTES = _LEN.size


class FrameTooLarge(Exception):
    """The peer announced a frame outside the configured limit; close the connection."""


def frame_size(prefix: bytes, max_frame_bytes: int) -> int:
    """The size a frame's prefix announces, checked before any of it is buffered."""
    (size,) = _LEN.unpack(prefix)
    if size < 0 or size > max_frame_bytes:
        raise FrameTooLarge(f"frame of {size} bytes exceeds limit {max_frame_bytes}")
    return int(size)


def encode_frame(payload: bytes) -> bytes:
    return _LEN.pack(len(payload)) + payload
